"""The run / target state machine of the publishing worker: each function is one step of a run inside a `Tx`
(tools/publishing/steps.py), and touches a run only while this worker holds its Schedule's lease.

- `begin_run`: first claim of a run makes a PublishExecution (`run_...`), one PublishTarget per integration with
  a stable idempotency token, and one Publication per target (processing); a resumed run reads its targets. The
  first runnable target's attempt is recorded in the same transaction.
- `begin_attempt`: the target becomes `attempting` (attempts + 1) and the lease is pushed forward; the caller
  commits before any provider call. A target that cannot be attempted (`attempts.Skip`) is settled at once.
- `settle`: after the call, in a new transaction: published; action_required (reauthorise); `retry_wait` with
  backoff while attempts remain (RETRY); else failed. Each final target settles its Publication and notifies.
- `finish_if_final` / `finish_schedule`: when every target is final, the run and the Schedule become published /
  partially_published / failed and the lease is cleared; otherwise the lease is released with `next_attempt_at`
  at the earliest retry.

Nothing publishes without an approved Schedule whose approval came from a key holding publish:execute
(`approved_by_key`); a Schedule approved without one is put back on hold (defence in depth).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, select

from providers.base import PostResult
from schemas.ids import new_id
from schemas.platforms import BY_KEY
from storage.leases import RetryPolicy, drop, holds
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.publishing import (
    TARGET_FINAL_STATES,
    Publication,
    PublishExecution,
    PublishTarget,
    Schedule,
)
from tools.analytics.enroll import POST_METRICS, enrollment
from tools.notifications import notify
from tools.publishing import attempts
from tools.publishing.attempts import Attempt, Outcome, Skip, platform_settings, target_token
from tools.publishing.claims import LEASE
from tools.publishing.steps import Tx
from tools.runtime import Runtime
from tools.services import event_log as record
from tools.services.redaction import adapter_reason
from tools.services.telemetry import count_outcome

log = logging.getLogger("socialpub.publishing")

MAX_ATTEMPTS = 5  # provider calls per target before a retryable failure becomes final
# 30 s, 1 min, 2 min, 4 min ... capped at an hour, never sooner than the network's Retry-After.
RETRY = RetryPolicy(base=timedelta(seconds=30), cap=timedelta(hours=1), max_attempts=MAX_ATTEMPTS)

RUNS = PublishExecution.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
PUBLICATIONS = Publication.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it

APPROVAL_MISSING = {
    "code": "APPROVAL_PENDING",
    "message": "This Schedule has no recorded approval by a key holding publish:execute, so it was not "
               "published and is held for review.",
    "repair_guidance": "A key holding schedule:write and publish:execute approves it with approve_schedule.",
}


# --- reading a run under its lock ----------------------------------------------------------------------------

async def locked_schedule(tx: Tx, schedule_id: str) -> Schedule | None:
    """The Schedule row locked for this transaction (PostgreSQL; SQLite serialises writers anyway): from the
    group's read when it locked it, else read and locked now. Every transaction of a run locks it first, so a
    settlement and another worker's claim or attempt of the same run never interleave."""
    if schedule_id in tx.locked:
        return await tx.get(Schedule, schedule_id)
    schedule = await tx.session.get(Schedule, schedule_id, with_for_update=True, populate_existing=True)
    if schedule is not None:
        tx.locked.add(schedule_id)
        tx.keep(schedule)
    return schedule


async def locked_target(tx: Tx, target_id: str,
                        schedule_id: str | None = None) -> tuple[PublishTarget | None, Schedule | None]:
    """The target and its Schedule, the Schedule locked first and the target read after the lock.
    `schedule_id`, when the caller knows it, saves the first read."""
    if schedule_id is None:
        found = await tx.get(PublishTarget, target_id)
        if found is None:
            return None, None
        schedule_id = found.schedule_id
    prefetched = schedule_id in tx.locked  # read by the group after the lock: current
    schedule = await locked_schedule(tx, schedule_id)
    if prefetched:
        target = await tx.get(PublishTarget, target_id)
    else:
        target = await tx.session.get(PublishTarget, target_id, populate_existing=True)
    if target is None or target.schedule_id != schedule_id:
        return None, None
    return target, schedule


async def run_targets(tx: Tx, schedule: Schedule) -> list[PublishTarget]:
    """The targets of the Schedule's latest run, as this transaction sees them (changes included)."""
    assert schedule.latest_execution_id
    known = tx.run_targets.get(schedule.latest_execution_id)
    if known is not None:
        return sorted(known, key=lambda t: t.id)
    await tx.session.flush()
    found = list((await tx.session.exec(select(PublishTarget).where(
        PublishTarget.execution_id == schedule.latest_execution_id))).all())
    for target in found:
        tx.keep(target)
    return sorted(found, key=lambda t: t.id)


# --- starting a run ------------------------------------------------------------------------------------------

async def begin_run(tx: Tx, rt: Runtime, owner: str,
                    schedule_id: str) -> tuple[list[str], Attempt | bool | None] | None:
    """Start (or resume) the run; the first runnable target's attempt is recorded in the same transaction.
    The runnable target IDs and that attempt (None when nothing is to be attempted now); None: nothing to do
    for this worker (lease lost, cancelled, or held)."""
    now = rt.clock.now()
    schedule = await locked_schedule(tx, schedule_id)
    if schedule is None or not holds(schedule, owner):
        return None
    if schedule.status != "publishing":  # changed under us (cancelled): give the claim back
        schedule.lease_owner = schedule.lease_expires_at = None
        return None
    if schedule.approval_status != "approved" or not schedule.approved_by_key:
        log.warning("schedule %s is approved without a publish:execute approval; held", schedule_id)
        schedule.approval_status, schedule.status = "pending_review", "action_required"
        schedule.blocking_reason = dict(APPROVAL_MISSING)
        schedule.approved_at = schedule.next_attempt_at = None
        drop(schedule, now)
        record.schedule(tx.session, now, schedule, "schedule.held")
        return None
    execution = (await tx.get(PublishExecution, schedule.latest_execution_id)
                 if schedule.latest_execution_id else None)
    if execution is None or execution.status != "processing":
        targets = await start_execution(tx, schedule, now)
    else:
        targets = await run_targets(tx, schedule)
    ready = [t for t in targets if t.state not in TARGET_FINAL_STATES
             and (t.state != "retry_wait" or t.next_attempt_at is None or t.next_attempt_at <= now)]
    runnable = [t.id for t in ready]
    if not runnable or owner in rt.stopping:
        return runnable, None
    return runnable, await begin_attempt(tx, rt, owner, runnable[0], schedule=schedule, target=ready[0])


def _post_type(item: ContentItem | None, platform: str) -> str | None:
    settings = platform_settings(item, platform) or {}
    known = BY_KEY.get(platform)
    return settings.get("post_type") or (known.default_post_type if known else None)


def _media_type(kinds: list[str | None]) -> str | None:
    if not kinds:
        return None
    if len(kinds) > 1:
        return "carousel"
    return kinds[0] if kinds[0] in ("image", "video") else None


async def start_execution(tx: Tx, schedule: Schedule, now: datetime) -> list[PublishTarget]:
    """A new run of the Schedule: its PublishExecution, targets and publications; the targets, sorted."""
    run_id = new_id("run")
    await tx.insert(RUNS, {"id": run_id, "brand_id": schedule.brand_id, "schedule_id": schedule.id,
                           "status": "processing", "started_at": now, "finished_at": None,
                           "cleanup_authority_hash": None, "created_at": now, "updated_at": now})
    item = await tx.get(ContentItem, schedule.content_item_id)
    wanted_ids = sorted(set(schedule.integration_ids))
    if schedule.id in tx.locked and all((Integration, i) in tx.rows for i in wanted_ids):
        found = [await tx.get(Integration, i) for i in wanted_ids]
    else:
        found = list((await tx.session.exec(select(Integration).where(
            Integration.brand_id == schedule.brand_id, col(Integration.id).in_(wanted_ids)))).all())
    integrations = {i.id: i for i in found if i is not None and i.brand_id == schedule.brand_id}
    wanted: list[str] = []
    for integration in integrations.values():
        wanted.extend((platform_settings(item, integration.platform) or {}).get("media_ids") or [])
    media = await attempts.media_rows(tx.session, schedule.brand_id, wanted)
    targets: list[PublishTarget] = []
    for integration_id in wanted_ids:
        integration = integrations.get(integration_id)
        platform = integration.platform if integration else "unknown"
        settings = platform_settings(item, platform) or {}
        kinds = [media[m].kind if m in media else None for m in settings.get("media_ids") or []]
        target = PublishTarget(id=new_id("ptg"), execution_id=run_id, schedule_id=schedule.id,
                               brand_id=schedule.brand_id, integration_id=integration_id, platform=platform,
                               idempotency_token=target_token(run_id, integration_id), created_at=now,
                               updated_at=now, publication_id=new_id("pub"))
        # Nothing changes the publication in this transaction but a target skipped at once (read back then).
        await tx.insert(PUBLICATIONS, {
            "id": target.publication_id, "workspace_id": schedule.workspace_id, "brand_id": schedule.brand_id,
            "schedule_id": schedule.id, "execution_id": run_id, "target_id": target.id, "platform": platform,
            "integration_id": integration_id, "post_id": schedule.content_item_id,
            "post_name": item.name if item else None, "post_type": _post_type(item, platform),
            "media_type": _media_type(kinds), "status": "processing",
            "source": "queue" if schedule.source == "queue" else "calendar", "created_at": now, "updated_at": now})
        tx.session.add(target)
        tx.keep(target)
        targets.append(target)
    targets.sort(key=lambda t: t.id)
    tx.run_targets[run_id] = targets
    schedule.latest_execution_id = run_id
    schedule.failure_reason = schedule.blocking_reason = None
    schedule.updated_at = now
    return targets


# --- one target ----------------------------------------------------------------------------------------------

async def begin_attempt(tx: Tx, rt: Runtime, owner: str, target_id: str, *, schedule_id: str | None = None,
                        schedule: Schedule | None = None, target: PublishTarget | None = None) -> Attempt | bool:
    """Record the attempt of one target (the caller commits it before any provider call). A target that cannot
    be attempted is settled at once: then True when that finished the whole run, else False. `schedule` and
    `target`: the Schedule locked and the target read (or made) earlier in this transaction."""
    now = rt.clock.now()
    if schedule is not None:
        target = target or await tx.get(PublishTarget, target_id)
    else:
        target, schedule = await locked_target(tx, target_id, schedule_id)
    if target is None or schedule is None or not holds(schedule, owner) or target.state in TARGET_FINAL_STATES:
        return False
    try:
        attempt = await attempts.prepare(tx, rt, target, schedule)
    except Skip as skip:
        await settle_final(tx, now, target, schedule, skip.state, skip.reason, None)
        return await finish_if_final(tx, now, schedule)
    target.state, target.attempts, target.attempted_at = "attempting", target.attempts + 1, now
    target.next_attempt_at, target.updated_at = None, now
    schedule.lease_expires_at = now + LEASE
    return attempt


async def settle(tx: Tx, rt: Runtime, owner: str, target_id: str, attempt: Attempt, outcome: Outcome) -> bool:
    """Settle the target with the provider's outcome, only while this worker still holds the lease. True when
    that finished the whole run (every target final)."""
    now = rt.clock.now()
    if attempt.account.credentials_changed:  # rotated during the call: the old ones may no longer work
        await attempts.store_credentials(tx, rt, now, attempt.account)
    target, schedule = await locked_target(tx, target_id, attempt.schedule_id)
    if target is None or schedule is None or not holds(schedule, owner) or target.state != "attempting":
        log.warning("target %s: lease lost before settling; the new holder recovers it", target_id)
        return False
    result, error = outcome.result, outcome.error
    if result is not None:
        await settle_final(tx, now, target, schedule, "published", None, result)
    elif error is not None and error.kind == "reauth_required":
        integration = await tx.get(Integration, target.integration_id)
        if integration is not None and integration.status == "connected":
            integration.status, integration.updated_at = "needs_reauth", now
            await notify.integration_status_changed(tx.session, now, integration, "connected")
        await settle_final(tx, now, target, schedule, "action_required", attempts.reason(error, error.kind),
                           None, error_kind=error.kind)
    elif error is not None and error.retryable and not RETRY.exhausted(target.attempts):
        target.state, target.error_kind, target.updated_at = "retry_wait", error.kind, now
        count_outcome(target.platform, "retry", error.kind)
        target.next_attempt_at = now + RETRY.delay(target.attempts, error.retry_after)
    else:
        kind = error.kind if error is not None else "transient"
        await settle_final(tx, now, target, schedule, "failed", attempts.reason(error, kind), None,
                           error_kind=kind)
    # The run's last settlement finishes it in the same transaction (one commit fewer per Schedule).
    return await finish_if_final(tx, now, schedule)


async def settle_final(tx: Tx, now: datetime, target: PublishTarget, schedule: Schedule, state: str,
                       reason: str | None, result: PostResult | None, *, error_kind: str | None = None) -> None:
    target.state, target.settled_at, target.updated_at = state, now, now
    count_outcome(target.platform, state, error_kind)
    target.next_attempt_at, target.failure_reason, target.error_kind = None, reason, error_kind
    if result is not None:
        target.publish_id, target.permalink_url = result.publish_id, result.permalink_url
    publication = await tx.get(Publication, target.publication_id) if target.publication_id else None
    if publication is not None:
        publication.updated_at = now
        if state == "published":
            publication.status, publication.published_at, publication.failure_reason = "published", now, None
            publication.publish_id = result.publish_id if result else None
            publication.permalink_url = result.permalink_url if result else None
            metrics = enrollment(publication_id=publication.id, workspace_id=publication.workspace_id,
                                 brand_id=publication.brand_id, integration_id=publication.integration_id,
                                 platform=publication.platform, post_id=publication.post_id,
                                 publish_id=publication.publish_id, published_at=now)
            if metrics is not None:
                await tx.insert(POST_METRICS, metrics)
        else:
            publication.status, publication.failure_reason = "failed", reason
    await _notify_outcome(tx, now, target, schedule, state, reason, publication)


async def _notify_outcome(tx: Tx, now: datetime, target: PublishTarget, schedule: Schedule, state: str,
                          reason: str | None, publication: Publication | None) -> None:
    brand = await tx.get(Brand, schedule.brand_id)
    if brand is None:
        return
    known = BY_KEY.get(target.platform)
    platform = known.display_name if known else target.platform
    integration = await tx.get(Integration, target.integration_id)
    account = (integration.display_name or integration.username) if integration else None
    where = f"{platform} ({account})" if account else platform
    name = (publication.post_name if publication else None) or "A post"
    link = notify.console_link(brand.id, f"schedules/{schedule.id}")
    if state == "published":
        await notify.notify(tx.session, now, brand, "post_published", "post_published",
                            f"Published on {platform}", f"“{name}” was published to {where}.", link=link)
    else:
        await notify.notify(tx.session, now, brand, "post_failed", "post_failed", f"Post failed on {platform}",
                            f"“{name}” could not be published to {where}. {adapter_reason(reason) or reason or ''}",
                            link=link)


# --- the end of a pass ---------------------------------------------------------------------------------------

async def finish_if_final(tx: Tx, now: datetime, schedule: Schedule,
                          targets: list[PublishTarget] | None = None) -> bool:
    """When every target of the run is final: the run and the Schedule take the outcome, the lease is cleared."""
    if not schedule.latest_execution_id:
        return False
    targets = targets if targets is not None else await run_targets(tx, schedule)
    if not all(t.state in TARGET_FINAL_STATES for t in targets):
        return False
    published = sum(t.state == "published" for t in targets)
    status = ("failed" if published == 0 else
              "published" if published == len(targets) else "partially_published")
    schedule.status, schedule.next_attempt_at = status, None
    schedule.failure_reason = (None if status == "published" else
                               f"{len(targets) - published} of {len(targets)} targets did not publish.")
    drop(schedule, now)
    await tx.insert(record.EVENTS, record.schedule_values(now, schedule, f"schedule.{status}"))  # webhooks, MCP
    execution = await tx.get(PublishExecution, schedule.latest_execution_id)
    if execution is not None:
        execution.status, execution.finished_at, execution.updated_at = status, now, now
    return True


async def finish_schedule(tx: Tx, rt: Runtime, owner: str, schedule_id: str) -> None:
    """The end of this worker's pass over a run that is not final: release the lease until the earliest retry."""
    now = rt.clock.now()
    schedule = await locked_schedule(tx, schedule_id)
    if schedule is None or not holds(schedule, owner) or not schedule.latest_execution_id:
        return
    targets = await run_targets(tx, schedule)
    if await finish_if_final(tx, now, schedule, targets):
        return
    drop(schedule, now)
    # Targets still to go: wait for the earliest retry. An attempt left unsettled (its settlement failed)
    # is recovered after the base backoff, not at once, so a persistent fault cannot make workers spin.
    if owner in rt.stopping and any(t.state == "pending" for t in targets):
        schedule.next_attempt_at = now  # handed back by a stopping worker: due again for another at once
        return
    waits: list[Any] = [t.next_attempt_at for t in targets if t.state == "retry_wait" and t.next_attempt_at]
    if any(t.state in ("pending", "attempting") for t in targets) or not waits:
        waits.append(now + RETRY.base)
    schedule.next_attempt_at = min(waits)
