"""The metrics tick: read due posts' metrics from their networks and store each reading.

A publication enters collection when it is published on a platform whose network offers metrics
(`enroll`, called by the worker in the transaction that records the publication). A pass takes the due rows
through `ix_post_metrics_due`, soonest first and at most BATCH, and claims each by moving its due time forward
with a conditional update (two workers never read the same post at once; a worker that dies mid-read leaves the
row due again after CLAIM). The network is called outside any transaction, through the address policy.

Outcomes: a reading stores a snapshot and the latest figures and moves to the next time of the cadence;
a post the network no longer has stops (`gone`); a refusal (403: the account did not grant the insights
permission) stops every post of that account (`permission_missing`) and tells the brand's admins once, with
what to do, until the account is reconnected (tools/services/metrics.resume_after_reconnect makes its readings due
again and clears the notice); an expired account waits for its reconnection; rate limits and outages are tried
again with backoff, and after MAX_FAILURES in a row that reading is skipped. Credentials an adapter renewed during
the read (a Bluesky session) are stored, as after a publish.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlmodel import col, select

from providers.base import Account, ProviderError
from providers.metrics import PostMetrics
from schemas.ids import new_id
from schemas.metrics import COMMON
from storage import vault
from storage.tables.analytics import MetricSnapshot, PostMetricsState
from storage.tables.integrations import Integration
from tools.analytics.cadence import next_due
from tools.notifications import notify
from tools.runtime import Runtime
from tools.services.accounts import outbound, store_credentials
from tools.services.metrics import permission_notice_key, with_insights

log = logging.getLogger("socialpub.analytics")

BATCH = 50
CLAIM = timedelta(minutes=5)  # a claimed row is due again this much later if its reader never finishes
RETRY_AFTER = timedelta(minutes=30)  # first wait after a rate limit or outage; doubles per failure
MAX_FAILURES = 5
EXPIRED_WAIT = timedelta(hours=6)  # an account awaiting reconnection is looked at again this much later
PERMISSION_NOTICE_WINDOW = timedelta(days=30)


def due_query(now: datetime, limit: int = BATCH):
    return (select(PostMetricsState.publication_id, col(PostMetricsState.next_due_at))
            .where(col(PostMetricsState.status) == "collecting", col(PostMetricsState.next_due_at) <= now)
            .order_by(col(PostMetricsState.next_due_at)).limit(limit))


async def collect_due(rt: Runtime, worker_id: str) -> int:
    now = rt.clock.now()
    async with rt.db.session(write=False) as s:
        due = list((await s.exec(due_query(now))).all())
    done = 0
    for publication_id, due_at in due:
        if due_at is not None:  # the query selects due rows only
            done += await read_one(rt, publication_id, due_at)
    return done


async def _claim(rt: Runtime, publication_id: str, due_at: datetime, now: datetime) -> bool:
    async with rt.db.session(write=True) as s:
        result = await s.exec(update(PostMetricsState)
                              .where(col(PostMetricsState.publication_id) == publication_id,
                                     col(PostMetricsState.status) == "collecting",
                                     col(PostMetricsState.next_due_at) == due_at)
                              .values(next_due_at=now + CLAIM))
        return bool(result.rowcount == 1)


async def read_one(rt: Runtime, publication_id: str, due_at: datetime) -> int:
    """Take one due reading. Returns 1 when a reading was stored."""
    now = rt.clock.now()
    if not await _claim(rt, publication_id, due_at, now):
        return 0  # another worker took it
    async with rt.db.session(write=False) as s:
        state = await s.get(PostMetricsState, publication_id)
        integration = await s.get(Integration, state.integration_id) if state else None
        if state is None:
            return 0
        account = None
        if integration is not None and integration.status == "connected" and integration.provider in rt.providers:
            try:
                credentials = vault.open_credentials(rt.settings, integration.credentials)
            except vault.VaultError:
                credentials = None
            if credentials is not None or integration.provider == "sandbox":
                account = Account(integration_id=integration.id, platform=integration.platform,
                                  status=integration.status, provider_account_id=integration.provider_account_id,
                                  credentials=credentials, state=dict(integration.provider_state or {}))
        provider = rt.providers[integration.provider] if account is not None and integration is not None else None
        publish_id, published_at = state.publish_id, state.published_at
    reader = getattr(provider, "post_metrics", None)
    if integration is None:
        return await _finish(rt, publication_id, now, status="gone")  # the account was removed
    if account is None or reader is None:
        return await _failed(rt, publication_id, now, EXPIRED_WAIT, counts=False)
    try:
        with outbound(rt.settings):
            metrics: PostMetrics = await reader(account, publish_id, published_at=published_at, now=now)
    except ProviderError as exc:
        await _keep_credentials(rt, account)
        if exc.kind == "rejected":
            return await _permission_missing(rt, publication_id, integration.id, now)
        if exc.kind == "reauth_required":
            return await _failed(rt, publication_id, now, EXPIRED_WAIT, counts=False)
        log.warning("publication %s: metrics read failed (%s), tried again later", publication_id, exc.message)
        wait = max(RETRY_AFTER, timedelta(seconds=exc.retry_after or 0))
        return await _failed(rt, publication_id, now, wait, counts=True)
    await _keep_credentials(rt, account)
    if metrics.gone:
        return await _finish(rt, publication_id, now, status="gone")
    return await _store(rt, publication_id, metrics, now)


async def _keep_credentials(rt: Runtime, account: Account) -> None:
    """Store credentials the adapter rotated during the read (the old ones may no longer work)."""
    if not account.credentials_changed:
        return
    async with rt.db.session(write=True) as s:
        integration = await s.get(Integration, account.integration_id)
        if integration is not None and integration.status == "connected":
            store_credentials(integration, account.credentials, rt.settings, rt.providers)
            integration.updated_at = rt.clock.now()
            s.add(integration)


async def _store(rt: Runtime, publication_id: str, metrics: PostMetrics, now: datetime) -> int:
    async with rt.db.session(write=True) as s:
        state = await s.get(PostMetricsState, publication_id)
        if state is None:
            return 0
        values = {name: metrics.values.get(name) for name in COMMON}
        taken = (await s.exec(select(MetricSnapshot.id).where(MetricSnapshot.publication_id == publication_id,
                                                               MetricSnapshot.step == state.step))).first()
        if taken is None:  # stored once per reading, whatever retried
            s.add(MetricSnapshot(id=new_id("pms"), publication_id=publication_id, brand_id=state.brand_id,
                                 step=state.step, taken_at=now, raw=dict(metrics.raw), created_at=now, updated_at=now,
                                 **values))
        for name, value in values.items():
            if value is not None:
                setattr(state, name, value)
        state.step, state.read_at, state.failures, state.updated_at = state.step + 1, now, 0, now
        state.next_due_at = next_due(state.published_at, now)
        if state.next_due_at is None:
            state.status = "done"
        s.add(state)
    return 1


async def _finish(rt: Runtime, publication_id: str, now: datetime, *, status: str) -> int:
    async with rt.db.session(write=True) as s:
        state = await s.get(PostMetricsState, publication_id)
        if state is not None:
            state.status, state.next_due_at, state.updated_at = status, None, now
            s.add(state)
    return 0


async def _failed(rt: Runtime, publication_id: str, now: datetime, wait: timedelta, *, counts: bool) -> int:
    """Try this reading again later; after MAX_FAILURES counted failures in a row, skip it for the next one."""
    async with rt.db.session(write=True) as s:
        state = await s.get(PostMetricsState, publication_id)
        if state is None:
            return 0
        failures = state.failures + 1 if counts else state.failures
        later = now + wait * (2 ** max(failures - 1, 0))
        if counts and failures >= MAX_FAILURES:
            failures, later = 0, next_due(state.published_at, now)
        if later is None:
            state.status = "done"
        state.failures, state.next_due_at, state.updated_at = failures, later, now
        s.add(state)
    return 0


async def _permission_missing(rt: Runtime, publication_id: str, integration_id: str, now: datetime) -> int:
    """The network refused: the account did not grant the permission metrics need. Every post of the account
    stops (one indexed update) and the brand's admins are told once, with what to do."""
    async with rt.db.session(write=True) as s:
        await s.exec(update(PostMetricsState)
                     .where(col(PostMetricsState.integration_id) == integration_id,
                            col(PostMetricsState.status) == "collecting")
                     .values(status="permission_missing", next_due_at=None, updated_at=now))
        state = await s.get(PostMetricsState, publication_id)
        integration = await s.get(Integration, integration_id)
        if integration is not None:
            with_insights(integration, False)
            s.add(integration)
        if state is not None and integration is not None:
            name = integration.display_name or integration.username or integration.platform
            await notify.notify(
                s, now, state.brand_id, "metrics_permission_missing", "integration_refresh",
                f"Metrics need a permission on {name}",
                f"{integration.platform} refused to share post metrics for {name}: the account did not grant the "
                "permission to read them. Reconnect the account and allow reading insights to see how its posts "
                "do; publishing is not affected.",
                audience="admins", dedupe_key=permission_notice_key(integration_id),
                dedupe_window=PERMISSION_NOTICE_WINDOW)
    return 0


TICKS = [collect_due]
