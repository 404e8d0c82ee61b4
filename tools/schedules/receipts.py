"""The publish receipt of a Schedule's latest run, and provider cleanup of what that run published.

Receipt (`GET .../schedules/{schedule_id}/receipt`): exactly the run named by `Schedule.latest_execution_id`,
with one redacted outcome per target. It reads the run's PublishTarget rows and returns our own states,
times and a safe reason chosen from a fixed table by the failure kind; never a provider post ID, token,
idempotency token, payload, provider message or an earlier run.

Cleanup authority: when the run is bounded (finished, no target pending, attempting or waiting to retry) and
has at least one published post not yet cleaned up, the receipt carries `cleanup_authority`, an opaque
server-signed capability bound to the brand, the Schedule, that run, an expiry and the run's current
`cleanup_authority_hash`. The receipt stays a pure read (a GET changes nothing), so the authority is
derived, not stored; the run's `cleanup_authority_hash` stores the SHA-256 of the authority that was spent.
Spending one changes the hash, which is signed into every authority, so each authority works once.

Provider cleanup (`POST .../provider-cleanup`): checks the authority against the Schedule's latest run and
queues one `provider_cleanup` job per published target of that run (dedupe key per target); it calls no
provider. The job (`JOBS`) calls the provider's delete_post and settles the target's cleanup_status.
Cancelling a Schedule never deletes anything: this is the only path that does.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime
from typing import Any

import anyio
from sqlalchemy import update
from sqlmodel import col, select

from providers.base import ProviderError
from schemas import history as out
from schemas.errors import ApiError, issue, not_found
from schemas.history import ProviderCleanupRequest, ReceiptRequest
from schemas.scopes import PUBLISH_SCOPE
from schemas.time import UTC, iso
from storage.queue import RetryLater, enqueue
from storage.tables.integrations import Integration
from storage.tables.jobs import Job
from storage.tables.publishing import PublishExecution, PublishTarget, Schedule
from tools.endpoint import Call, Endpoint
from tools.links import link
from tools.runtime import Runtime
from tools.services import signing
from tools.services.accounts import account_of, outbound
from tools.services.redaction import safe_failure, safe_permalink
from tools.targets import PROVIDER_TIMEOUT_SECONDS

log = logging.getLogger("socialpub.receipts")

CLEANUP_JOB = "provider_cleanup"
SIGNING_PURPOSE = "provider_cleanup"
# An authority is valid until the end of the quarter hour after the one it was issued in: between 15 and 30
# minutes, and every read within one quarter hour returns the same authority (so a retried POST matches).
AUTHORITY_WINDOW_SECONDS = 15 * 60
IN_PROGRESS_STATES = ("pending", "attempting", "retry_wait")


# -- shared reads ------------------------------------------------------------------------------------------------


async def _schedule(call: Call, schedule_id: str) -> Schedule:
    schedule = (await call.session.exec(select(Schedule).where(
        Schedule.id == schedule_id, Schedule.brand_id == call.brand_id))).first()
    if schedule is None:
        raise not_found("Schedule")
    return schedule


async def _latest_run(call: Call, schedule: Schedule) -> tuple[PublishExecution | None, list[PublishTarget]]:
    if schedule.latest_execution_id is None:
        return None, []
    run = (await call.session.exec(select(PublishExecution).where(
        PublishExecution.id == schedule.latest_execution_id, PublishExecution.schedule_id == schedule.id,
        PublishExecution.brand_id == call.brand_id))).first()
    if run is None:
        return None, []
    targets = list((await call.session.exec(select(PublishTarget).where(PublishTarget.execution_id == run.id)
                                            .order_by(PublishTarget.platform, PublishTarget.integration_id)
                                            .limit(out.RECEIPT_TARGETS_MAX))).all())
    return run, targets


def _bounded(run: PublishExecution, targets: list[PublishTarget]) -> bool:
    return (run.status != "processing" and run.finished_at is not None
            and not any(t.state in IN_PROGRESS_STATES for t in targets))


def _cleanable(t: PublishTarget) -> bool:
    """A published post that cleanup may (again) be asked to remove."""
    return t.state == "published" and bool(t.publish_id) and t.cleanup_status in (None, "failed")


# -- the cleanup authority ---------------------------------------------------------------------------------------


def _authority_parts(schedule: Schedule, run: PublishExecution, expires: int) -> tuple[str, ...]:
    return (schedule.brand_id, schedule.id, run.id, str(expires), run.cleanup_authority_hash or "-")


def issue_authority(rt: Runtime, schedule: Schedule, run: PublishExecution, now: datetime) -> tuple[str, datetime]:
    window = int(now.timestamp()) // AUTHORITY_WINDOW_SECONDS
    expires = (window + 2) * AUTHORITY_WINDOW_SECONDS
    signature = signing.sign(rt.settings, SIGNING_PURPOSE, *_authority_parts(schedule, run, expires))
    return f"cla_{expires:010d}.{signature}", datetime.fromtimestamp(expires, UTC)


def authority_hash(authority: str) -> str:
    return hashlib.sha256(authority.encode()).hexdigest()


def _authority_error(code: str, message: str, guidance: str) -> ApiError:
    return ApiError("DOMAIN_VALIDATION_FAILED", message, issues=[issue("$.cleanup_authority", code, guidance)],
                    next_action="get_schedule_receipt",
                    repair_guidance="Read get_schedule_receipt again and send its current cleanup_authority; it is "
                                    "present only while the latest run has published posts not yet cleaned up.")


def check_authority(rt: Runtime, schedule: Schedule, run: PublishExecution, authority: str, now: datetime) -> None:
    if run.cleanup_authority_hash is not None and authority_hash(authority) == run.cleanup_authority_hash:
        raise ApiError("CONFLICT", "This cleanup authority was already used; cleanup of that run was queued.",
                       next_action="get_schedule_receipt",
                       repair_guidance="Read the receipt: each target's cleanup_status shows the cleanup. A new "
                                       "authority appears only if a published post still needs cleanup.")
    expires_text, _, signature = authority.removeprefix("cla_").partition(".")
    expires = int(expires_text)
    if not signing.verify(rt.settings, signature, SIGNING_PURPOSE, *_authority_parts(schedule, run, expires)):
        raise _authority_error("CLEANUP_AUTHORITY_INVALID",
                               "This cleanup authority was not issued for this Schedule's latest run.",
                               "Use the cleanup_authority of this Schedule's current receipt, unchanged.")
    if now.timestamp() >= expires:
        raise _authority_error("CLEANUP_AUTHORITY_EXPIRED", "This cleanup authority has expired.",
                               "Read the receipt again for a fresh cleanup_authority.")


# -- GET receipt -------------------------------------------------------------------------------------------------


def _target_out(t: PublishTarget) -> dict[str, Any]:
    reason, action = safe_failure(t.error_kind, t.failure_reason, t.state)
    return {"integration_id": t.integration_id, "platform": t.platform, "state": t.state, "attempts": t.attempts,
            "attempted_at": iso(t.attempted_at), "settled_at": iso(t.settled_at), "failure_reason": reason,
            "next_action": action,
            "has_permalink": t.state == "published" and t.cleanup_status != "done"
            and safe_permalink(t.permalink_url) is not None,
            "cleanup_status": t.cleanup_status}


def _summary(targets: list[PublishTarget]) -> dict[str, int]:
    return {"total": len(targets), "published": sum(t.state == "published" for t in targets),
            "failed": sum(t.state == "failed" for t in targets),
            "action_required": sum(t.state == "action_required" for t in targets),
            "in_progress": sum(t.state in IN_PROGRESS_STATES for t in targets)}


async def get_schedule_receipt(call: Call, req: ReceiptRequest) -> out.ReceiptResult:
    schedule = await _schedule(call, req.schedule_id)
    run, targets = await _latest_run(call, schedule)
    links: dict[str, Any] = {"self": link("get_schedule_receipt", brand_id=call.brand_id, schedule_id=schedule.id),
                             "history": link("list_history", brand_id=call.brand_id)}
    data: dict[str, Any] = {"schedule_id": schedule.id, "receipt": None}
    next_actions: list[dict[str, str]] = []
    if run is None:
        if schedule.status != "cancelled":
            next_actions.append({"action": "wait_for_execution", "guidance": (
                "No publish run has started yet. Read this receipt again after the Schedule's scheduled_at; "
                "a held Schedule runs only after it is approved.")})
    else:
        bounded = _bounded(run, targets)
        data["receipt"] = {"execution_id": run.id, "status": run.status, "started_at": iso(run.started_at),
                           "finished_at": iso(run.finished_at), "bounded": bounded, "summary": _summary(targets),
                           "targets": [_target_out(t) for t in targets]}
        if not bounded:
            next_actions.append({"action": "wait_for_execution", "guidance": (
                "The run is still working on some targets. Read this receipt again later; it never polls for you.")})
        else:
            if any(t.state in ("failed", "action_required") for t in targets):
                next_actions.append({"action": "review_failures", "guidance": (
                    "Some targets were not published: follow each target's next_action, then create a new "
                    "Schedule for them if still wanted.")})
            if any(t.state == "published" for t in targets):
                next_actions.append({"action": "read_history", "guidance": (
                    "Public links of the published posts are in list_history.")})
            if any(_cleanable(t) for t in targets):
                authority, expires = issue_authority(call.rt, schedule, run, call.now)
                data["cleanup_authority"] = authority
                data["cleanup_authority_expires_at"] = iso(expires)
                links["provider_cleanup"] = link("request_provider_cleanup", brand_id=call.brand_id,
                                                 schedule_id=schedule.id)
                next_actions.append({"action": "request_provider_cleanup", "guidance": (
                    "Only if these posts must be removed from the platforms: send cleanup_authority to "
                    "request_provider_cleanup (needs publish:execute) before cleanup_authority_expires_at.")})
    data["next_actions"] = next_actions
    data["links"] = links
    return out.ReceiptResult.model_validate(data)


# -- POST provider-cleanup ---------------------------------------------------------------------------------------


def _skip_reason(t: PublishTarget) -> str | None:
    if t.state != "published" or not t.publish_id:
        return "not_published"
    if t.cleanup_status == "queued":
        return "cleanup_in_progress"
    if t.cleanup_status == "done":
        return "already_cleaned_up"
    return None


async def request_provider_cleanup(call: Call, req: ProviderCleanupRequest) -> out.CleanupResult:
    schedule = await _schedule(call, req.schedule_id)
    run, targets = await _latest_run(call, schedule)
    if run is None:
        raise ApiError("CONFLICT", "This Schedule has no publish run, so there is nothing to clean up.",
                       next_action="get_schedule_receipt")
    if not _bounded(run, targets):
        raise ApiError("CONFLICT", "The latest run of this Schedule is still in progress; cleanup needs a finished "
                                   "run.", next_action="wait_for_execution",
                       repair_guidance="Read get_schedule_receipt until receipt.bounded is true, then use its "
                                       "cleanup_authority.")
    check_authority(call.rt, schedule, run, req.cleanup_authority, call.now)
    if not any(_cleanable(t) for t in targets):
        raise ApiError("CONFLICT", "No published post of this run needs cleanup.", next_action="get_schedule_receipt")

    # Spend the authority: a conditional update, so two requests racing with one authority queue once.
    previous = run.cleanup_authority_hash
    spent = await call.session.exec(
        update(PublishExecution)
        .where(col(PublishExecution.id) == run.id,
               col(PublishExecution.cleanup_authority_hash).is_(None) if previous is None
               else col(PublishExecution.cleanup_authority_hash) == previous)
        .values(cleanup_authority_hash=authority_hash(req.cleanup_authority), updated_at=call.now)
        .execution_options(synchronize_session=False))
    if spent.rowcount != 1:
        raise ApiError("CONFLICT", "This cleanup authority was already used; cleanup of that run was queued.",
                       next_action="get_schedule_receipt")

    results = []
    for t in targets:
        reason = _skip_reason(t)
        if reason is None:
            await enqueue(call.session, call.now, CLEANUP_JOB, {"target_id": t.id, "execution_id": run.id},
                          dedupe_key=f"{CLEANUP_JOB}:{t.id}")
            t.cleanup_status, t.updated_at = "queued", call.now
            call.session.add(t)
        results.append({"integration_id": t.integration_id, "platform": t.platform, "state": t.state,
                        "cleanup": "skipped" if reason else "queued", "skip_reason": reason})
    await call.session.flush()
    call.wake_worker_after_commit()
    queued = sum(r["cleanup"] == "queued" for r in results)
    return out.CleanupResult.model_validate({
        "schedule_id": schedule.id, "execution_id": run.id, "outcome": "cleanup_queued", "queued": queued,
        "skipped": len(results) - queued, "targets": results,
        "links": {"receipt": link("get_schedule_receipt", brand_id=call.brand_id, schedule_id=schedule.id)}})


def _replayed(data: Any) -> Any:
    return {**data, "outcome": "replayed"} if isinstance(data, dict) else data


# -- the cleanup job ---------------------------------------------------------------------------------------------


async def _settle(rt: Runtime, target_id: str, status: str, why: str | None = None) -> None:
    if why is not None:  # our own words or a provider error kind, never the provider's message
        log.warning("provider cleanup of target %s failed: %s", target_id, why)
    async with rt.db.session(write=True) as session:
        target = await session.get(PublishTarget, target_id)
        if target is not None and target.cleanup_status == "queued":
            target.cleanup_status, target.updated_at = status, rt.clock.now()
            session.add(target)


async def run_provider_cleanup(rt: Runtime, job_id: str, payload: dict[str, Any]) -> None:
    """Delete one published post at its provider; retryable failures back off, final ones mark it failed."""
    target_id = str(payload.get("target_id", ""))
    async with rt.db.session(write=False) as session:
        target = await session.get(PublishTarget, target_id)
        job = await session.get(Job, job_id)
        integration = await session.get(Integration, target.integration_id) if target is not None else None
    if target is None or target.cleanup_status != "queued":
        return  # settled already (a rerun after a lost lease) or never queued
    last_attempt = job is None or job.attempts >= job.max_attempts
    if (target.state != "published" or not target.publish_id or integration is None
            or integration.brand_id != target.brand_id or integration.status != "connected"):
        # Nothing to delete, or no usable account: a reconnect makes the post eligible for cleanup again.
        await _settle(rt, target_id, "failed", "no published post or no connected account")
        return
    try:
        provider = rt.provider(integration.provider)
    except KeyError:
        await _settle(rt, target_id, "failed", f"no provider adapter {integration.provider}")
        return
    try:
        with anyio.fail_after(PROVIDER_TIMEOUT_SECONDS), outbound(rt.settings):
            await provider.delete_post(account_of(integration, rt.settings), target.publish_id)
    except ProviderError as exc:
        if exc.retryable and not last_attempt:
            raise RetryLater(exc.kind) from None  # the kind only: provider words stay out of job rows too
        await _settle(rt, target_id, "failed", exc.kind)
        return
    except TimeoutError:
        if not last_attempt:
            raise RetryLater("timeout") from None
        await _settle(rt, target_id, "failed", "timeout")
        return
    await _settle(rt, target_id, "done")


JOBS = {CLEANUP_JOB: run_provider_cleanup}

SCHEDULE = "/v1/brands/{brand_id}/schedules/{schedule_id}"

ENDPOINTS = [
    Endpoint(
        name="get_schedule_receipt", method="GET", path=SCHEDULE + "/receipt", toolset="schedules",
        handler=get_schedule_receipt, request=ReceiptRequest, response=out.ReceiptResult, scopes=("schedule:read",),
        title="Get publish receipt",
        summary="Read the receipt of a Schedule's latest publish run: per-target outcome, times "
                "and a safe failure reason.",
        guidance="Read-only; never returns provider IDs or tokens. Null until a run starts; "
                 "links.provider_cleanup when posts can be removed.",
    ),
    Endpoint(
        name="request_provider_cleanup", method="POST", path=SCHEDULE + "/provider-cleanup", toolset="schedules",
        handler=request_provider_cleanup, request=ProviderCleanupRequest, response=out.CleanupResult,
        scopes=(PUBLISH_SCOPE,), idempotency="required", destructive=True, open_world=True,
        replay=_replayed, title="Request provider cleanup",
        summary="Queue removal of the posts a Schedule's latest run published, with the receipt's "
                "cleanup_authority.",
        guidance="Single use; accepts no provider IDs. Calls no provider itself (the worker "
                 "does). Next: get_schedule_receipt.",
    ),
]
