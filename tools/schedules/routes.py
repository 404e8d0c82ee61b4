"""Schedules: create (held or approved), read, list a time window, reschedule, cancel, approve, move to drafts
and delete.

A Schedule is an instruction, never an execution attempt: no route here calls a provider. Rows are created
only by `tools.schedules.rows.new_schedule`. Every write locks the row (`FOR UPDATE` on PostgreSQL; SQLite
writes are serialised) and refuses with 409 CONFLICT once a publish run has started, so it never races the
worker's claim. Readiness is the preflight engine's (`tools.schedules.preflight.run_preflight`, same transaction).
Receipts and provider cleanup live in tools/schedules/receipts.py; the worker that publishes is not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import schedules as out
from schemas.errors import ApiError, issue
from schemas.schedules import CreateScheduleRequest
from schemas.scopes import PUBLISH_SCOPE
from schemas.time import iso, parse_timestamp
from storage import keyset
from storage.tables.autopilot import AutopilotItem
from storage.tables.content import ContentItemLabel
from storage.tables.library import Label
from storage.tables.publishing import (
    UNSENT_STATUSES,
    Publication,
    PublishExecution,
    PublishTarget,
    Schedule,
)
from tools import catalogue
from tools.endpoint import Call, Endpoint
from tools.links import link
from tools.schedules.authority import record_approver, require_change_authority
from tools.schedules.preflight import require_schedulable
from tools.schedules.rows import is_held, new_schedule
from tools.services import event_log as record
from tools.services import signing

CURSOR_PURPOSE = "schedule-list-cursor"
# Statuses whose Schedule still uses its content item (for the drafts' usage check).
LIVE_STATUSES = (*UNSENT_STATUSES, "publishing")
# A Schedule that never ran may be removed (move to drafts, delete) also once cancelled.
REMOVABLE_STATUSES = (*UNSENT_STATUSES, "cancelled")

GUIDANCE = {
    "review_approval": "Held for review: a key holding schedule:write and publish:execute approves it with "
                       "approve_schedule before scheduled_at (run preflight_content with approval_status approved "
                       "first), or cancel_schedule drops it.",
    "wait_for_execution": "Nothing to do: it publishes at scheduled_at. Read it again with get_schedule after that "
                          "time for latest_execution.",
}


# -- the Schedule payload: one builder for every route ----------------------------------------------------------

def _next_actions(row: Schedule) -> list[dict[str, str]]:
    if is_held(row.status, row.approval_status):
        action = "review_approval"
    elif row.status in ("scheduled", "publishing"):
        action = "wait_for_execution"
    else:  # cancelled, rejected, finished runs
        return []
    return [{"action": action, "guidance": GUIDANCE[action]}]


def _execution(run: PublishExecution, targets: Sequence[PublishTarget]) -> dict[str, Any]:
    # Provider facts (publish_id, permalink_url, error_kind) are never read here.
    return {"id": run.id, "status": run.status, "started_at": iso(run.started_at), "finished_at": iso(run.finished_at),
            "targets": [{"integration_id": t.integration_id, "platform": t.platform, "state": t.state,
                         "attempts": t.attempts, "failure_reason": t.failure_reason}
                        for t in sorted(targets, key=lambda t: t.integration_id)]}


def schedule_payload(row: Schedule, execution: dict[str, Any] | None) -> out.Schedule:
    # One validation of the whole payload (nested dicts included) costs less than the generic walk the
    # dispatcher gave a dict (tools/endpoint.py); the model is dumped as the payload.
    return out.Schedule.model_validate({
        "id": row.id, "brand_id": row.brand_id, "content_item_id": row.content_item_id,
        "integration_ids": list(row.integration_ids), "scheduled_at": iso(row.scheduled_at),
        "approval_status": row.approval_status, "status": row.status,
        "blocking_reason": dict(row.blocking_reason) if row.blocking_reason else None,
        "latest_execution": execution, "next_actions": _next_actions(row),
        "created_at": iso(row.created_at), "updated_at": iso(row.updated_at),
        "links": {
            "self": link("get_schedule", brand_id=row.brand_id, schedule_id=row.id),
            "targets": link("list_targets", brand_id=row.brand_id),
            "preflight": link("preflight_content", brand_id=row.brand_id, content_item_id=row.content_item_id),
        },
    })


async def schedule_payloads(session: AsyncSession, rows: Sequence[Schedule]) -> list[out.Schedule]:
    """Payloads of many Schedules with two queries for all their latest executions (no query per row)."""
    run_ids = sorted({r.latest_execution_id for r in rows if r.latest_execution_id})
    executions: dict[str, dict[str, Any]] = {}
    if run_ids:
        runs = (await session.exec(select(PublishExecution).where(col(PublishExecution.id).in_(run_ids)))).all()
        targets = (await session.exec(select(PublishTarget).where(col(PublishTarget.execution_id).in_(run_ids)))).all()
        by_run: dict[str, list[PublishTarget]] = {}
        for t in targets:
            by_run.setdefault(t.execution_id, []).append(t)
        executions = {run.id: _execution(run, by_run.get(run.id, [])) for run in runs}
    return [schedule_payload(r, executions.get(r.latest_execution_id or "")) for r in rows]


async def one_payload(session: AsyncSession, row: Schedule) -> out.Schedule:
    return (await schedule_payloads(session, [row]))[0]


# -- shared checks ----------------------------------------------------------------------------------------------

def _not_found() -> ApiError:
    return ApiError("NOT_FOUND", "No Schedule of this brand has this ID, or it is not visible to this API key.",
                    next_action="list_schedules")


async def _load(call: Call, schedule_id: str, *, for_update: bool = False) -> Schedule:
    query = select(Schedule).where(Schedule.id == schedule_id, Schedule.brand_id == call.brand_id)
    if for_update:  # a concurrent write (or the worker's claim) waits for this transaction
        query = query.with_for_update()
    row = (await call.session.exec(query)).first()
    if row is None:
        raise _not_found()
    return row


def _confirm(schedule_id: str, confirm: str) -> None:
    if confirm != schedule_id:
        raise ApiError("DOMAIN_VALIDATION_FAILED", "confirm_schedule_id differs from the Schedule ID in the path; "
                                                   "nothing was changed.",
                       issues=[issue("$.confirm_schedule_id", "MISMATCH",
                                     "Send the same ID as the path's schedule_id.")])


async def _refuse_if_run(call: Call, row: Schedule, action: str) -> None:
    """409 CONFLICT once a publish run is processing or has run (or the worker holds a live claim)."""
    leased = row.lease_owner is not None and row.lease_expires_at is not None and row.lease_expires_at > call.now
    started = row.latest_execution_id is not None or row.status not in REMOVABLE_STATUSES or leased
    if not started:
        started = (await call.session.exec(select(PublishExecution.id).where(
            PublishExecution.schedule_id == row.id).limit(1))).first() is not None
    if started:
        raise ApiError("CONFLICT", f"A publish run of this Schedule has started or finished, so it cannot be "
                                   f"{action}; nothing was changed.",
                       details={"status": row.status}, next_action="get_schedule",
                       repair_guidance="Read the Schedule (latest_execution) and its receipt. Cancelling or "
                                       "deleting a Schedule never removes a post from a platform.")


def _refuse_if_cancelled(row: Schedule, action: str) -> None:
    if row.status == "cancelled":
        raise ApiError("CONFLICT", f"This Schedule is cancelled, so it cannot be {action}; nothing was changed.",
                       details={"status": row.status}, next_action="create_schedule",
                       repair_guidance="A cancelled Schedule stays cancelled (kept for audit). Create a new "
                                       "Schedule for the content item, or delete this one with delete_schedule.")


async def _ready(call: Call, row: Schedule, when: datetime, approval_status: str) -> None:
    """Readiness re-check with the preflight engine: 422 PREFLIGHT_BLOCKED with its blockers."""
    await require_schedulable(call, content_item_id=row.content_item_id, integration_ids=list(row.integration_ids),
                              scheduled_at=when, approval_status=approval_status)


def _replayed(data: Any) -> Any:
    return {**data, "outcome": "replayed"} if isinstance(data, dict) else data


# -- create, get, list ------------------------------------------------------------------------------------------

async def create_schedule(call: Call, req: CreateScheduleRequest) -> out.CreatedSchedule:
    caller, brand = call.caller, call.brand
    assert caller is not None and brand is not None
    if req.approval_status == "approved":
        # Before anything is read or written: an approved Schedule publishes, which is separate authority.
        call.require_scopes(PUBLISH_SCOPE, reason=" to create an approved Schedule (send approval_status "
                                                  "pending_review to hold it for review instead)")
    when = parse_timestamp(req.scheduled_at)
    await require_schedulable(call, content_item_id=req.content_item_id, integration_ids=req.integration_ids,
                              scheduled_at=when, approval_status=req.approval_status)
    row = new_schedule(call.session, brand=brand, content_item_id=req.content_item_id,
                       integration_ids=req.integration_ids, scheduled_at=when, approval_status=req.approval_status,
                       source="api", user_id=caller.user_id, key_id=caller.key_id, now=call.now)
    await call.session.flush()
    if row.status == "scheduled":
        call.wake_worker_after_commit()
    return out.CreatedSchedule(schedule=schedule_payload(row, None), outcome="created")


async def get_schedule(call: Call, req: out.SchedulePath) -> out.Schedule:
    return await one_payload(call.session, await _load(call, req.schedule_id))


def _cursor_parts(call: Call, start: datetime, end: datetime, label: str | None, direction: str) -> tuple[str, ...]:
    return (call.brand_id, iso(start) or "", iso(end) or "", label or "", direction)


def _encode_cursor(call: Call, parts: tuple[str, ...], row: Schedule) -> str:
    return keyset.encode(signing.signer(call.rt.settings, CURSOR_PURPOSE), parts, row.scheduled_at, row.id)


def _decode_cursor(call: Call, parts: tuple[str, ...], cursor: str) -> tuple[datetime, str]:
    position = keyset.decode(signing.signer(call.rt.settings, CURSOR_PURPOSE), parts, cursor, "sch")
    if position is None:
        raise keyset.invalid_cursor("This cursor is not a next_cursor of this list with the same window, label "
                                    "and order_direction; read the list again without cursor.",
                                    "Send next_cursor with the same from, to, label and order_direction as the "
                                    "page that returned it.")
    return position


def _window(req: Any) -> tuple[datetime, datetime]:
    issues: list[dict[str, Any]] = []
    times: dict[str, datetime] = {}
    for name in ("from", "to"):
        try:
            times[name] = parse_timestamp(getattr(req, name))
        except ValueError:
            issues.append(issue(f"$.{name}", "INVALID_TIMESTAMP", "Send a UTC timestamp with an explicit offset or "
                                                                  "Z, e.g. 2026-03-01T00:00:00.000Z."))
    if not issues:
        start, end = times["from"], times["to"]
        if end <= start:
            issues.append(issue("$.to", "WINDOW_ORDER", "to must be after from."))
        elif end - start > timedelta(days=out.WINDOW_MAX_DAYS):
            issues.append(issue("$.to", "WINDOW_TOO_LONG", f"to may be at most {out.WINDOW_MAX_DAYS} days after "
                                                           "from; read a longer period in several windows."))
    if issues:
        raise ApiError("INVALID_QUERY", "The time window is not valid.", issues=issues)
    return times["from"], times["to"]


async def list_schedules(call: Call, req: Any) -> out.SchedulePage:
    """Keyset pages on (scheduled_at, id) over ix_schedules_brand_time; a page costs the same at any depth."""
    start, end = _window(req)
    session = call.session
    if req.label is not None:
        known = (await session.exec(select(Label.id).where(Label.id == req.label,
                                                           Label.brand_id == call.brand_id))).first()
        if known is None:
            raise ApiError("DOMAIN_VALIDATION_FAILED", "No label of this brand has this ID.",
                           issues=[issue("$.label", "NOT_FOUND", "Use an id from list_labels.")])
    desc = req.order_direction == "desc"
    parts = _cursor_parts(call, start, end, req.label, req.order_direction)
    position = _decode_cursor(call, parts, req.cursor) if req.cursor is not None else None
    # A deeper page's position bounds the range on its side of the window: only one bound per side, so SQLite's
    # planner starts the index range at the position, not at the window's edge (and walks no earlier rows).
    bounds = [Schedule.scheduled_at >= start, Schedule.scheduled_at < end]
    if position is not None and not desc and position[0] >= start:
        bounds = [Schedule.scheduled_at < end]  # keyset.after adds scheduled_at >= the position's time
    elif position is not None and desc and position[0] < end:
        bounds = [Schedule.scheduled_at >= start]  # keyset.after adds scheduled_at <= the position's time
    query = select(Schedule).where(Schedule.brand_id == call.brand_id, *bounds)
    if req.label is not None:
        query = query.join(ContentItemLabel, col(ContentItemLabel.content_item_id) == Schedule.content_item_id).where(
            ContentItemLabel.label_id == req.label, ContentItemLabel.brand_id == call.brand_id)
    rows, has_more = await keyset.page(session, query, Schedule.scheduled_at, Schedule.id, desc=desc,
                                       limit=req.limit, position=position)
    return out.SchedulePage(items=await schedule_payloads(session, rows), has_more=has_more,
                            next_cursor=_encode_cursor(call, parts, rows[-1]) if has_more else None)


# -- changes to one Schedule ------------------------------------------------------------------------------------

async def reschedule_schedule(call: Call, req: out.RescheduleRequest) -> out.RescheduledSchedule:
    _confirm(req.schedule_id, req.confirm_schedule_id)
    row = await _load(call, req.schedule_id, for_update=True)
    await _refuse_if_run(call, row, "rescheduled")
    _refuse_if_cancelled(row, "rescheduled")
    when = parse_timestamp(req.scheduled_at)
    # The endpoint already requires publish:execute (spec, Authentication rule 6); the shared rule stays the one
    # place that says so for every route that moves an approved post.
    require_change_authority(call, row, {"scheduled_at"}, approved_after=row.approval_status == "approved")
    # Readiness at the new time, for the approval the Schedule has: a past time, a disconnected target or
    # content that no longer passes is refused with the preflight blockers.
    await _ready(call, row, when, row.approval_status)
    row.scheduled_at = when
    if row.approval_status == "approved":
        record_approver(call, row)
    row.updated_at = call.now
    call.session.add(row)
    await call.session.flush()
    if row.status == "scheduled":
        call.wake_worker_after_commit()
    return out.RescheduledSchedule(schedule=await one_payload(call.session, row), outcome="rescheduled")


async def cancel_schedule(call: Call, req: out.ConfirmRequest) -> out.CancelledSchedule:
    _confirm(req.schedule_id, req.confirm_schedule_id)
    row = await _load(call, req.schedule_id, for_update=True)
    await _refuse_if_run(call, row, "cancelled")
    _refuse_if_cancelled(row, "cancelled again")
    held = row.approval_status == "pending_review" and row.status == "action_required"
    row.status = "cancelled"
    row.cancelled_at = call.now
    row.blocking_reason = None
    row.lease_owner, row.lease_expires_at, row.next_attempt_at = None, None, None
    row.updated_at = call.now
    call.session.add(row)
    if held:  # a held Schedule cancelled is the review's "no" (the console's Reject)
        record.schedule(call.session, call.now, row, "schedule.rejected")
    await call.session.flush()
    return out.CancelledSchedule(schedule=await one_payload(call.session, row), outcome="cancelled")


async def approve_schedule(call: Call, req: out.ConfirmRequest) -> out.ApprovedSchedule:
    caller = call.caller
    assert caller is not None
    _confirm(req.schedule_id, req.confirm_schedule_id)
    row = await _load(call, req.schedule_id, for_update=True)
    await _refuse_if_run(call, row, "approved")
    _refuse_if_cancelled(row, "approved")
    if not is_held(row.status, row.approval_status):
        raise ApiError("CONFLICT", f"Only a Schedule held for review can be approved; this one is "
                                   f"{row.approval_status}. Nothing was changed.",
                       details={"status": row.status, "approval_status": row.approval_status},
                       next_action="get_schedule",
                       repair_guidance="An approved Schedule needs no approval; a rejected one never publishes: "
                                       "create a new Schedule with approval_status approved instead.")
    if row.scheduled_at <= call.now:
        raise ApiError("CONFLICT", "The scheduled time of this held Schedule has passed, so it cannot be approved; "
                                   "nothing was changed.",
                       details={"scheduled_at": iso(row.scheduled_at)}, next_action="reschedule_schedule",
                       repair_guidance="Reschedule it to a future time with reschedule_schedule, then approve it.")
    await _ready(call, row, row.scheduled_at, "approved")
    row.approval_status = "approved"
    row.status = "scheduled"
    row.blocking_reason = None
    row.approved_by_key = caller.key_id
    row.approved_at = call.now
    row.updated_at = call.now
    call.session.add(row)
    record.schedule(call.session, call.now, row, "schedule.approved")
    await call.session.flush()
    call.wake_worker_after_commit()
    return out.ApprovedSchedule(id=row.id, schedule=await one_payload(call.session, row), outcome="approved")


async def move_schedule_to_draft(call: Call, req: out.ConfirmRequest) -> out.MovedToDraft:
    _confirm(req.schedule_id, req.confirm_schedule_id)
    row = await _load(call, req.schedule_id, for_update=True)
    await _refuse_if_run(call, row, "moved to drafts")
    item_id = row.content_item_id
    states: set[str] = set((await _item_usage(call.session, call.brand_id, [item_id], exclude=row.id)).get(item_id, ()))
    for probe in catalogue.usage_probes():
        if probe is not schedule_usage:
            states.update((await probe(call.session, call.brand_id, [item_id])).get(item_id, ()))
    if states:
        listed = ", ".join(sorted(states))
        raise ApiError("CONFLICT", f"The content item is still in use elsewhere ({listed}), so this Schedule was "
                                   "not moved to drafts; nothing was changed.",
                       details={"usage": sorted(states)}, next_action="delete_schedule",
                       repair_guidance="Remove the other uses first (another Schedule, a queue), or delete only this "
                                       "Schedule with delete_schedule. Published content stays published.")
    await _remove(call, row)
    return out.MovedToDraft(id=row.id, content_item_id=item_id, outcome="moved_to_draft")


async def delete_schedule(call: Call, req: out.ConfirmRequest) -> out.DeletedSchedule:
    _confirm(req.schedule_id, req.confirm_schedule_id)
    row = await _load(call, req.schedule_id, for_update=True)
    await _refuse_if_run(call, row, "deleted")
    await _remove(call, row)
    return out.DeletedSchedule(id=row.id, content_item_id=row.content_item_id, outcome="deleted")


async def _remove(call: Call, row: Schedule) -> None:
    """Delete an unsent Schedule; an Autopilot item it came from no longer names it (the item can be scheduled
    again)."""
    if row.autopilot_item_id:
        await call.session.exec(update(AutopilotItem).where(col(AutopilotItem.schedule_id) == row.id)
                                .values(schedule_id=None, updated_at=call.now))
    await call.session.delete(row)
    await call.session.flush()


# -- content usage probe ----------------------------------------------------------------------------------------

async def _item_usage(session: AsyncSession, brand_id: str, content_item_ids: list[str],
                      exclude: str | None = None) -> dict[str, set[str]]:
    """"scheduled" (live, unsent), "publishing" and "published" (any Publication) per content item."""
    found: dict[str, set[str]] = {}
    query = select(Schedule.content_item_id, Schedule.status).where(
        Schedule.brand_id == brand_id, col(Schedule.content_item_id).in_(content_item_ids),
        col(Schedule.status).in_(LIVE_STATUSES))
    if exclude is not None:
        query = query.where(Schedule.id != exclude)
    for item_id, status in (await session.exec(query.distinct())).all():
        found.setdefault(item_id, set()).add("publishing" if status == "publishing" else "scheduled")
    published = await session.exec(select(Publication.post_id, func.count()).where(
        Publication.brand_id == brand_id, col(Publication.post_id).in_(content_item_ids)).group_by(Publication.post_id))
    for item_id, _ in published.all():
        found.setdefault(item_id, set()).add("published")
    return found


async def schedule_usage(session: AsyncSession, brand_id: str, content_item_ids: list[str]) -> dict[str, set[str]]:
    return await _item_usage(session, brand_id, content_item_ids)


# -- declarations -----------------------------------------------------------------------------------------------

ONE = "/v1/brands/{brand_id}/schedules/{schedule_id}"

ENDPOINTS = [
    Endpoint(
        name="create_schedule", method="POST", path="/v1/brands/{brand_id}/schedules", toolset="schedules",
        handler=create_schedule, request=CreateScheduleRequest, response=out.CreatedSchedule,
        scopes=("schedule:write",), idempotency="required", status=201, replay=_replayed, open_world=True,
        title="Create a Schedule",
        summary="Create a Schedule for a draft: targets, time and an explicit approval_status.",
        guidance="Preflight first with the same arguments; blocked: 422 PREFLIGHT_BLOCKED. "
                 "approved also needs publish:execute. Publishes nothing now. Next: get_schedule.",
    ),
    Endpoint(
        name="get_schedule", method="GET", path=ONE, toolset="schedules", handler=get_schedule,
        request=out.SchedulePath, response=out.Schedule, scopes=("schedule:read",), title="Get a Schedule",
        summary="Read one Schedule: targets, time, approval, status, blocking reason, latest execution and next "
                "actions.",
        guidance="One bounded read: changes nothing. Follow next_actions.",
    ),
    Endpoint(
        name="list_schedules", method="GET", path="/v1/brands/{brand_id}/schedules", toolset="schedules",
        handler=list_schedules, request=out.ListSchedulesRequest, response=out.SchedulePage,
        scopes=("schedule:read",), title="List Schedules",
        summary="List a brand's Schedules whose scheduled time falls in a window (from inclusive, to exclusive, at "
                "most 93 days), ordered by scheduled time.",
        guidance="Read-only. Page with cursor and the same filters.",
    ),
    Endpoint(
        name="reschedule_schedule", method="POST", path=ONE + "/reschedule", toolset="schedules",
        handler=reschedule_schedule, request=out.RescheduleRequest, response=out.RescheduledSchedule,
        scopes=("schedule:write", PUBLISH_SCOPE), idempotency="required", replay=_replayed, open_world=True,
        title="Reschedule a Schedule",
        summary="Move a Schedule that has not run to a new future time; only scheduled_at changes.",
        guidance="Readiness is checked again (422 PREFLIGHT_BLOCKED); once a run started: 409. "
                 "Calls no provider.",
    ),
    Endpoint(
        name="cancel_schedule", method="POST", path=ONE + "/cancel", toolset="schedules", handler=cancel_schedule,
        request=out.ConfirmRequest, response=out.CancelledSchedule, scopes=("schedule:write",),
        idempotency="required", replay=_replayed, destructive=True, title="Cancel a Schedule",
        summary="Cancel a Schedule before its run starts; it is kept for audit and never publishes.",
        guidance="Never removes a published post; calls no provider. Once a run started: 409.",
    ),
    Endpoint(
        name="approve_schedule", method="POST", path=ONE + "/approve", toolset="schedules",
        handler=approve_schedule, request=out.ConfirmRequest, response=out.ApprovedSchedule,
        scopes=("schedule:write", PUBLISH_SCOPE), idempotency="required", open_world=True,
        title="Approve a held Schedule",
        summary="Approve a future Schedule held for review, so it publishes at its scheduled time.",
        guidance="Readiness is checked again (422); a past time is 409 (reschedule first). Calls "
                 "no provider now.",
    ),
    Endpoint(
        name="move_schedule_to_draft", method="POST", path=ONE + "/move-to-draft", toolset="schedules",
        handler=move_schedule_to_draft, request=out.ConfirmRequest, response=out.MovedToDraft,
        scopes=("schedule:write", "posts:write"), idempotency="required", destructive=True,
        title="Move a Schedule to drafts",
        summary="Remove a Schedule that has not run and keep its content item as an editable draft.",
        guidance="Refused (409) once a run started or while other uses remain. Never deletes the "
                 "content item.",
    ),
    Endpoint(
        name="delete_schedule", method="DELETE", path=ONE, toolset="schedules", handler=delete_schedule,
        request=out.ConfirmRequest, response=out.DeletedSchedule, scopes=("schedule:write",),
        idempotency="required", destructive=True, title="Delete a Schedule",
        summary="Delete a Schedule whose execution has not started; its content item and media remain.",
        guidance="Once a run started: 409. Never removes a post from a platform.",
    ),
]
