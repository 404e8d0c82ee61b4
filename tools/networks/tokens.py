"""The token lifecycle tick: refresh stored credentials ahead of their expiry, so publishing never waits on a
refresh and a network that limits sign-ins (Bluesky: about 30 sessions per 5 minutes) sees one refresh per
account per token lifetime, never one per post.

Each pass reads the connected non-sandbox accounts whose sealed credentials carry an `expires_at` (readable
without decrypting, storage/vault.py) within REFRESH_AHEAD, and asks their adapter's `refresh_credentials`
outside any transaction. Fresh credentials are sealed and stored (the refresh token is kept when the network
sends none); `reauth_required` marks the account `expired` and sends the `integration_refresh` notification
(targets and preflight then show the reconnect action); any other failure is tried again on a later pass.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlmodel import select

from providers.base import Account, ProviderError
from schemas.time import parse_timestamp
from storage import vault
from storage.tables.integrations import Integration
from tools.notifications import notify
from tools.runtime import Runtime

log = logging.getLogger("socialpub.networks.tokens")

REFRESH_AHEAD = timedelta(minutes=30)  # refresh this long before expiry (adapters may refresh earlier)
SCAN_MAX = 2000  # accounts looked at per pass
BATCH = 50  # refreshes per pass


async def refresh_due(rt: Runtime, worker_id: str) -> int:
    now = rt.clock.now()
    async with rt.db.session(write=False) as s:
        rows = (await s.exec(select(Integration).where(Integration.status == "connected",
                                                       Integration.provider != "sandbox")
                             .order_by(Integration.updated_at, Integration.id).limit(SCAN_MAX))).all()
    due = []
    for i in rows:
        expires = (i.credentials or {}).get("expires_at") if isinstance(i.credentials, dict) else None
        if expires is None or i.provider not in rt.providers:
            continue
        try:
            soon = parse_timestamp(str(expires)) - REFRESH_AHEAD <= now
        except ValueError:
            soon = True
        if soon:
            due.append(i)
    done = 0
    for i in due[:BATCH]:
        done += await refresh_one(rt, i.id)
    return done


async def refresh_one(rt: Runtime, integration_id: str) -> int:
    """Refresh one account's credentials now if its adapter says they are due. Returns 1 when it changed."""
    async with rt.db.session(write=False) as s:
        i = await s.get(Integration, integration_id)
        if i is None or i.status != "connected":
            return 0
        try:
            credentials = vault.open_credentials(rt.settings, i.credentials)
        except vault.VaultError:
            log.error("integration %s: stored credentials cannot be decrypted with the vault keys", i.id)
            return 0
        account = Account(integration_id=i.id, platform=i.platform, status=i.status,
                          provider_account_id=i.provider_account_id, credentials=credentials,
                          state=dict(i.provider_state or {}))
        provider = rt.providers[i.provider]
    now = rt.clock.now()
    try:
        fresh = await provider.refresh_credentials(account, now)
    except ProviderError as exc:
        if exc.kind != "reauth_required":
            log.warning("integration %s: refresh failed (%s), tried again later", integration_id, exc.message)
            return 0
        async with rt.db.session(write=True) as s:
            i = await s.get(Integration, integration_id)
            if i is None or i.status != "connected":
                return 0
            i.status, i.updated_at = "expired", now
            s.add(i)
            await s.flush()
            await notify.integration_status_changed(s, now, i, "connected")
        log.warning("integration %s: refresh refused for good (%s); marked expired", integration_id, exc.message)
        return 1
    if not fresh:
        return 0
    async with rt.db.session(write=True) as s:
        i = await s.get(Integration, integration_id)
        if i is None:
            return 0
        old = credentials or {}
        if old.get("refresh_token") and not fresh.get("refresh_token"):
            fresh = {**fresh, "refresh_token": old["refresh_token"]}
        i.credentials, i.updated_at = vault.seal(rt.settings, fresh), now
        s.add(i)
    return 1


TICKS = [refresh_due]
