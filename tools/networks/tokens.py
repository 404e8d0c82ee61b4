"""The token lifecycle tick: refresh stored credentials ahead of their expiry, so publishing never waits on a
refresh and a network that limits sign-ins (Bluesky: about 30 sessions per 5 minutes) sees one refresh per
account per token lifetime, never one per post.

Each account carries `refresh_due_at`: its credentials' expiry (readable without decrypting, storage/vault.py)
less its network's own window, `refresh_ahead` on the adapter (an hour-long X token a few minutes ahead, a
60-day Meta or LinkedIn token a week ahead). Every place that stores credentials keeps it
(tools/services/accounts.store_credentials). A pass reads the ids of the connected accounts that are due through
the index `ix_integrations_refresh_due (status, refresh_due_at)`, soonest first and at most BATCH, so its cost
does not grow with the number of accounts; it asks each adapter's `refresh_credentials` outside any transaction.
Fresh credentials are sealed and stored (the refresh token is kept when the network sends none) with their new
due time; `reauth_required` marks the account `expired` and sends the `integration_refresh` notification
(targets and preflight then show the reconnect action); any other failure is tried again RETRY_AFTER later.

An adapter that cannot always refresh (LinkedIn without a refresh token; Meta's long-lived user tokens, which
an exchange may not extend) declares `reconnect_notice_ahead`: when the adapter cannot extend the token, the
`integration_expiring` notification goes out once per expiry, and the account is looked at again at expiry
(when the adapter marks it for reconnection).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, select

from providers.base import Account, ProviderError
from schemas.time import parse_timestamp
from storage import vault
from storage.tables.integrations import Integration
from tools.notifications import notify
from tools.runtime import Runtime
from tools.services.accounts import outbound, refresh_due_at, store_credentials

log = logging.getLogger("socialpub.networks.tokens")

BATCH = 50  # accounts handled per pass
RETRY_AFTER = timedelta(minutes=5)  # a failed refresh (network down, rate limited) is tried again this much later


def due_query(now: datetime, limit: int = BATCH) -> Any:
    """The ids of connected accounts whose refresh or notice is due, soonest first: an index range scan."""
    return (select(Integration.id).where(Integration.status == "connected", col(Integration.refresh_due_at) <= now)
            .order_by(col(Integration.refresh_due_at)).limit(limit))


async def refresh_due(rt: Runtime, worker_id: str) -> int:
    now = rt.clock.now()
    async with rt.db.session(write=False) as s:
        ids = list((await s.exec(due_query(now))).all())
    done = 0
    for integration_id in ids:
        done += await refresh_one(rt, integration_id)
    return done


async def _look_again(rt: Runtime, integration_id: str, when: datetime | None) -> None:
    async with rt.db.session(write=True) as s:
        i = await s.get(Integration, integration_id)
        if i is not None and i.status == "connected":
            i.refresh_due_at = when
            s.add(i)


def _expiry(credentials: dict[str, Any]) -> datetime | None:
    try:
        return parse_timestamp(str(credentials["expires_at"])) if credentials.get("expires_at") else None
    except ValueError:
        return None


async def refresh_one(rt: Runtime, integration_id: str) -> int:
    """Refresh one account's credentials now if its adapter says they are due. Returns 1 when it changed."""
    async with rt.db.session(write=False) as s:
        i = await s.get(Integration, integration_id)
        if i is None or i.status != "connected":
            return 0
        provider_name = i.provider
        known = provider_name in rt.providers
        try:
            credentials = vault.open_credentials(rt.settings, i.credentials)
        except vault.VaultError:
            log.error("integration %s: stored credentials cannot be decrypted with the vault keys", i.id)
            credentials = None
            sealed_shut = True
        else:
            sealed_shut = False
        account = Account(integration_id=i.id, platform=i.platform, status=i.status,
                          provider_account_id=i.provider_account_id, credentials=credentials,
                          state=dict(i.provider_state or {}))
    if not known:  # an adapter this build no longer has: nothing can refresh it
        await _look_again(rt, integration_id, None)
        return 0
    if sealed_shut:  # a vault key was removed too early: looked at again once the operator restores it
        await _look_again(rt, integration_id, rt.clock.now() + RETRY_AFTER)
        return 0
    provider = rt.providers[provider_name]
    now = rt.clock.now()
    try:
        with outbound(rt.settings):
            fresh = await provider.refresh_credentials(account, now)
    except ProviderError as exc:
        if exc.kind != "reauth_required":
            log.warning("integration %s: refresh failed (%s), tried again later", integration_id, exc.message)
            await _look_again(rt, integration_id, now + RETRY_AFTER)
            return 0
        async with rt.db.session(write=True) as s:
            i = await s.get(Integration, integration_id)
            if i is None or i.status != "connected":
                return 0
            i.status, i.updated_at, i.refresh_due_at = "expired", now, None
            s.add(i)
            await s.flush()
            await notify.integration_status_changed(s, now, i, "connected")
        log.warning("integration %s: refresh refused for good (%s); marked expired", integration_id, exc.message)
        return 1
    old = credentials or {}
    if not fresh:
        due = refresh_due_at(provider, old)
        if due is not None and due > now:  # the adapter's own rule says not yet
            await _look_again(rt, integration_id, due)
            return 0
        return await _cannot_extend(rt, integration_id, provider, old, now)
    async with rt.db.session(write=True) as s:
        i = await s.get(Integration, integration_id)
        if i is None:
            return 0
        if old.get("refresh_token") and not fresh.get("refresh_token"):
            fresh = {**fresh, "refresh_token": old["refresh_token"]}
        store_credentials(i, fresh, rt.settings, rt.providers)
        i.updated_at = now
        still_due = i.refresh_due_at is not None and i.refresh_due_at <= now
        s.add(i)
    if still_due:  # refreshed, yet no further from expiry than the window (a Meta exchange that did not extend)
        await _cannot_extend(rt, integration_id, provider, fresh, now)
    return 1


async def _cannot_extend(rt: Runtime, integration_id: str, provider: object, credentials: dict[str, Any],
                         now: datetime) -> int:
    """The adapter cannot extend the token: the reconnect notice once its expiry is within the notice window,
    then a look again at expiry (the adapter then asks for reconnection)."""
    expires = _expiry(credentials)
    if expires is None:
        await _look_again(rt, integration_id, None if not credentials.get("expires_at") else now + RETRY_AFTER)
        return 0
    # Expired and the adapter neither refreshed nor refused: nothing more to do until the account is reconnected
    # (storing new credentials sets a new due time) or a publish finds the token refused.
    await _look_again(rt, integration_id, max(expires, now + RETRY_AFTER) if expires > now else None)
    ahead = getattr(provider, "reconnect_notice_ahead", None)
    if ahead is None or credentials.get("refresh_token") or expires - ahead > now:
        return 0
    async with rt.db.session(write=True) as s:
        i = await s.get(Integration, integration_id)
        if i is None or i.status != "connected":
            return 0
        sent = await notify.integration_expiring(s, now, i, expires)
    return 1 if sent.notifications else 0


TICKS = [refresh_due]
