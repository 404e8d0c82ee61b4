"""The token lifecycle tick: refresh stored credentials ahead of their expiry, so publishing never waits on a
refresh and a network that limits sign-ins (Bluesky: about 30 sessions per 5 minutes) sees one refresh per
account per token lifetime, never one per post.

Each pass reads the connected non-sandbox accounts whose sealed credentials carry an `expires_at` (readable
without decrypting, storage/vault.py) within REFRESH_AHEAD, and asks their adapter's `refresh_credentials`
outside any transaction. Fresh credentials are sealed and stored (the refresh token is kept when the network
sends none); `reauth_required` marks the account `expired` and sends the `integration_refresh` notification
(targets and preflight then show the reconnect action); any other failure is tried again on a later pass.

An adapter may look further ahead (`refresh_ahead`, e.g. a week for 60-day tokens) and, when it cannot refresh
at all (LinkedIn without a refresh token), ask for a reconnect notice ahead of expiry
(`reconnect_notice_ahead`): the `integration_expiring` notification, once per expiry. Accounts are handled
soonest expiry first, so those waiting for a notice never hold back an urgent refresh.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlmodel import select

from providers.base import Account, ProviderError
from schemas.time import parse_timestamp
from storage import vault
from storage.tables.integrations import Integration
from tools.notifications import notify
from tools.runtime import Runtime
from tools.services.accounts import outbound

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
        ahead = getattr(rt.providers[i.provider], "refresh_ahead", REFRESH_AHEAD)
        try:
            when = parse_timestamp(str(expires))
        except ValueError:
            when = now
        if when - max(ahead, REFRESH_AHEAD) <= now:
            due.append((when, i))
    due.sort(key=lambda pair: pair[0])
    done = 0
    for _, i in due[:BATCH]:
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
        with outbound(rt.settings):
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
        return await _notice(rt, integration_id, provider, credentials or {}, now)
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


async def _notice(rt: Runtime, integration_id: str, provider: object, credentials: dict, now: datetime) -> int:
    """The reconnect notice of an adapter that cannot refresh, once its expiry is within the notice window."""
    ahead = getattr(provider, "reconnect_notice_ahead", None)
    expires = credentials.get("expires_at")
    if ahead is None or not expires or credentials.get("refresh_token"):
        return 0
    try:
        when = parse_timestamp(str(expires))
    except ValueError:
        return 0
    if when - ahead > now:
        return 0
    async with rt.db.session(write=True) as s:
        i = await s.get(Integration, integration_id)
        if i is None or i.status != "connected":
            return 0
        sent = await notify.integration_expiring(s, now, i, when)
    return 1 if sent.notifications else 0


TICKS = [refresh_due]
