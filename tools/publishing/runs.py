"""Publish runs: the older scheduling routes, a second shape over the same Schedule rows (one source of truth).

A publish run IS a Schedule row: creating one calls `tools.schedules.rows.new_schedule` (source "publish_run"),
and every Schedule of the brand (whatever made it) is listed here. Status in the older vocabulary:
unsent (action_required, scheduled) -> ready_for_processing; publishing -> processing; published,
partially_published, failed and cancelled as themselves. Admission is the Schedule rule: IDs of the brand
(422 field issues), then preflight (422 PREFLIGHT_BLOCKED); approved needs publish:execute (403), and so does
changing the time, content or targets of a run that stays approved (tools/schedules/authority.py). A run
that is executing or has run is never changed or deleted (409 CONFLICT). See docs/queues.md.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import queues as sq
from schemas.errors import ApiError, Issues, issue, not_found
from schemas.library import Deleted
from schemas.scopes import PUBLISH_SCOPE
from schemas.time import iso, parse_timestamp
from storage.pagination import older_page, sort_order
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.media import Media
from storage.tables.publishing import UNSENT_STATUSES, Schedule
from tools.content.rules import media_ids
from tools.endpoint import Call, Endpoint, Reply
from tools.media.items import asset_url
from tools.schedules.authority import record_approver, require_change_authority
from tools.schedules.preflight import require_schedulable
from tools.schedules.rows import held_state, new_schedule

OLDER_STATUS = {"action_required": "ready_for_processing", "scheduled": "ready_for_processing",
                "publishing": "processing"}
# Fields whose change returns a run to ready_for_processing and clears its failure metadata (spec: States).
RESET_FIELDS = ("scheduled_at", "content_item_id", "integration_ids")


def older_status(schedule: Schedule) -> str:
    return OLDER_STATUS.get(schedule.status, schedule.status)


def has_run(schedule: Schedule) -> bool:
    """Executing or executed: the worker claimed it, or a run exists."""
    return schedule.status not in UNSENT_STATUSES or schedule.latest_execution_id is not None \
        or schedule.lease_owner is not None


async def thumbnails(session: AsyncSession, settings: Any, brand_id: str, item_ids: list[str]) -> dict[str, str]:
    """content item ID -> URL of its thumbnail (or first media item's) preview, for the items that have one."""
    if not item_ids:
        return {}
    items = (await session.exec(select(ContentItem).where(ContentItem.brand_id == brand_id,
                                                          col(ContentItem.id).in_(sorted(set(item_ids)))))).all()
    first = {}
    for item in items:
        media = media_ids(item)
        chosen = item.thumbnail_media_id or (media[0] if media else None)
        if chosen:
            first[item.id] = chosen
    if not first:
        return {}
    rows = (await session.exec(select(Media).where(Media.brand_id == brand_id,
                                                   col(Media.id).in_(sorted(set(first.values())))))).all()
    urls = {}
    for m in rows:
        asset = m.thumbnail_large_id or (m.asset_id if m.kind == "image" else None)
        if asset:
            urls[m.id] = asset_url(settings, asset)
    return {item_id: urls[media_id] for item_id, media_id in first.items() if media_id in urls}


def run_out(s: Schedule, thumbnail_url: str | None) -> sq.PublishRun:
    return sq.PublishRun.model_validate({"id": s.id, "brand_id": s.brand_id, "content_item_id": s.content_item_id,
            "scheduled_at": iso(s.scheduled_at), "integration_ids": list(s.integration_ids),
            "status": older_status(s), "approval_status": s.approval_status, "source": s.source,
            "failure_reason": s.failure_reason, "thumbnail_url": thumbnail_url, "created_at": iso(s.created_at),
            "updated_at": iso(s.updated_at)})


async def _out(call: Call, s: Schedule) -> sq.PublishRun:
    thumbs = await thumbnails(call.session, call.rt.settings, call.brand_id, [s.content_item_id])
    return run_out(s, thumbs.get(s.content_item_id))


async def check_ids(session: AsyncSession, brand_id: str, *, content_item_id: str | None = None,
                    integration_ids: list[str] | None = None, item_path: str = "$.content_item_id",
                    targets_path: str = "$.integration_ids") -> None:
    """422 DOMAIN_VALIDATION_FAILED with one field issue per ID that is not of this brand."""
    issues = Issues()
    if content_item_id is not None:
        found = (await session.exec(select(ContentItem.id).where(
            ContentItem.brand_id == brand_id, ContentItem.id == content_item_id))).first()
        if found is None:
            issues.add(item_path, "NOT_FOUND", "No content item of this brand has this ID; use an id from "
                                               "list_content_items.")
    if integration_ids:
        have = set((await session.exec(select(Integration.id).where(
            Integration.brand_id == brand_id, col(Integration.id).in_(integration_ids)))).all())
        for i, iid in enumerate(integration_ids):
            if iid not in have:
                issues.add(f"{targets_path}[{i}]", "NOT_FOUND",
                           "No integration of this brand has this ID; use an integration_id from list_targets.")
    issues.raise_if_any(message="Some IDs are not of this brand.")


async def _admit(call: Call, *, content_item_id: str, integration_ids: list[str], scheduled_at: Any,
                 approval_status: str) -> None:
    """The Schedule admission rule: preflight must not block (same check as create_schedule)."""
    await require_schedulable(call, content_item_id=content_item_id, integration_ids=integration_ids,
                              scheduled_at=scheduled_at, approval_status=approval_status)



async def list_publish_runs(call: Call, req: sq.ListPublishRunsRequest) -> Reply[list[sq.PublishRun]]:
    order = sort_order(getattr(Schedule, req.sort_by), Schedule.id, req.sort_dir)
    rows, pagination = await older_page(
        call.session, select(Schedule).where(Schedule.brand_id == call.brand_id).order_by(*order), req.page,
        req.limit)
    thumbs = await thumbnails(call.session, call.rt.settings, call.brand_id, [r.content_item_id for r in rows])
    return Reply(data=[run_out(r, thumbs.get(r.content_item_id)) for r in rows], pagination=pagination)


async def create_publish_run(call: Call, req: sq.CreatePublishRunRequest) -> sq.PublishRun:
    assert call.brand is not None and call.caller is not None
    if req.approval_status == "approved":
        call.require_scopes(PUBLISH_SCOPE, reason=" to create an approved publish run (it publishes to connected "
                                                  "accounts); send approval_status pending_review to hold it")
    integration_ids = sorted(req.integration_ids)
    await check_ids(call.session, call.brand_id, content_item_id=req.content_item_id,
                    integration_ids=req.integration_ids)
    when = parse_timestamp(req.scheduled_at)
    await _admit(call, content_item_id=req.content_item_id, integration_ids=integration_ids, scheduled_at=when,
                 approval_status=req.approval_status)
    schedule = new_schedule(call.session, brand=call.brand, content_item_id=req.content_item_id,
                            integration_ids=integration_ids, scheduled_at=when, approval_status=req.approval_status,
                            source="publish_run", user_id=call.caller.user_id, key_id=call.caller.key_id,
                            now=call.now)
    await call.session.flush()
    if req.approval_status == "approved":
        call.wake_worker_after_commit()
    return await _out(call, schedule)


async def load_run(call: Call, run_id: str) -> Schedule:
    """The run, row-locked for this write (PostgreSQL; SQLite writes are serial): the worker's claim cannot
    slip between our "has it run?" check and our write."""
    row = (await call.session.exec(select(Schedule).where(Schedule.id == run_id, Schedule.brand_id == call.brand_id)
                                   .with_for_update())).first()
    if row is None:
        raise not_found("Publish run")
    return row


def _refuse_if_run(s: Schedule, action: str) -> None:
    if has_run(s):
        raise ApiError("CONFLICT", f"This publish run is {older_status(s)}; a run that is executing or has run "
                                   f"cannot be {action}.",
                       details={"status": older_status(s)}, next_action="create_publish_run",
                       repair_guidance="Create a new publish run for the content item instead.")


async def update_publish_run(call: Call, req: sq.UpdatePublishRunRequest) -> sq.PublishRun:
    assert call.caller is not None
    provided = req.model_fields_set & {"content_item_id", "scheduled_at", "integration_ids", "approval_status"}
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send at least one field to change.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send at least one of content_item_id, scheduled_at, "
                                                          "integration_ids, approval_status.")])
    s = await load_run(call, req.publish_run_id)
    _refuse_if_run(s, "changed")
    content_item_id = req.content_item_id if "content_item_id" in provided else s.content_item_id
    integration_ids = sorted(req.integration_ids) if "integration_ids" in provided else list(s.integration_ids)
    when = parse_timestamp(req.scheduled_at) if "scheduled_at" in provided else s.scheduled_at
    approval = req.approval_status if "approval_status" in provided else s.approval_status
    changed = {name for name, old, new in (("content_item_id", s.content_item_id, content_item_id),
                                           ("integration_ids", list(s.integration_ids), integration_ids),
                                           ("scheduled_at", s.scheduled_at, when),
                                           ("approval_status", s.approval_status, approval)) if old != new}
    # Approving needs publish:execute; so does changing when, where or what a run that stays approved publishes
    # (tools/schedules/authority.py, the rule every route follows). Both fail closed.
    if approval == "approved" and "approval_status" in changed:
        call.require_scopes(PUBLISH_SCOPE, reason=" to approve this publish run (it publishes to connected "
                                                  "accounts); send approval_status pending_review to hold it")
    require_change_authority(call, s, changed, approved_after=approval == "approved", what="publish run")
    await check_ids(call.session, call.brand_id,
                    content_item_id=req.content_item_id if "content_item_id" in provided else None,
                    integration_ids=req.integration_ids if "integration_ids" in provided else None)
    if changed and (approval == "approved" or changed & set(RESET_FIELDS)):
        # Holding or rejecting alone is always allowed; anything else must still pass the Schedule rule.
        await _admit(call, content_item_id=content_item_id, integration_ids=integration_ids, scheduled_at=when,
                     approval_status=approval)
    if changed:
        s.content_item_id, s.integration_ids, s.scheduled_at = content_item_id, integration_ids, when
        s.approval_status = approval
        if approval == "approved":  # the caller holds publish:execute (checked above) and approves it as it is now
            record_approver(call, s)
        else:
            s.approved_by_key, s.approved_at = None, None
        if changed & set(RESET_FIELDS) or "approval_status" in changed:
            # Back to ready_for_processing (held or scheduled by approval), prior failure metadata cleared.
            s.status, s.blocking_reason = held_state(s.approval_status)
            s.failure_reason, s.next_attempt_at, s.lease_owner, s.lease_expires_at = None, None, None, None
        s.updated_at = call.now
        call.session.add(s)
        await call.session.flush()
        if s.approval_status == "approved":
            call.wake_worker_after_commit()
    return await _out(call, s)


async def delete_publish_run(call: Call, req: sq.PublishRunPath) -> Deleted:
    s = await load_run(call, req.publish_run_id)
    if not (s.status == "cancelled" and s.latest_execution_id is None):  # a cancelled, never-run one may go
        _refuse_if_run(s, "deleted")
    await call.session.delete(s)
    await call.session.flush()
    return Deleted(id=s.id, outcome="deleted")


PATH = "/v1/brands/{brand_id}/publish-runs"
ONE = PATH + "/{publish_run_id}"

ENDPOINTS = [
    Endpoint(
        name="list_publish_runs", method="GET", path=PATH, toolset="publishing", handler=list_publish_runs,
        request=sq.ListPublishRunsRequest, response=sq.PublishRun, list_shape="older", scopes=("schedule:read",),
        title="List publish runs",
        summary="List the brand's Schedules in the older publish-run shape (page/limit), sorted by scheduled or "
                "creation time.",
        guidance="Read-only. status: ready_for_processing (not yet run; approval_status tells held from "
                 "approved), processing, published, partially_published, failed, cancelled.",
    ),
    Endpoint(
        name="create_publish_run", method="POST", path=PATH, toolset="publishing", handler=create_publish_run,
        request=sq.CreatePublishRunRequest, response=sq.PublishRun, scopes=("schedule:write",), status=201,
        idempotency="optional", open_world=True, title="Create publish run",
        summary="Schedule a content item to integrations at a time through the older publish-run route; held as "
                "pending_review unless approval_status approved is sent by a key holding publish:execute.",
        guidance="Calls no provider. Runs the same preflight as create_schedule and refuses blockers (422 "
                 "PREFLIGHT_BLOCKED); run preflight_content first. A held run publishes only once approved.",
    ),
    Endpoint(
        name="update_publish_run", method="PATCH", path=ONE, toolset="publishing", handler=update_publish_run,
        request=sq.UpdatePublishRunRequest, response=sq.PublishRun, scopes=("schedule:write",), open_world=True,
        title="Update publish run",
        summary="Change a publish run's content item, time, targets or approval; only the given fields change, "
                "and changing the time, content or targets returns it to ready_for_processing.",
        guidance="Calls no provider. 409 once the run is processing or has run. Approving, or changing the time, "
                 "content or targets of an approved run, needs publish:execute (or send approval_status "
                 "pending_review with the change to hold it).",
    ),
    Endpoint(
        name="delete_publish_run", method="DELETE", path=ONE, toolset="publishing", handler=delete_publish_run,
        request=sq.PublishRunPath, response=Deleted, scopes=("schedule:write",), destructive=True,
        title="Delete publish run",
        summary="Delete a publish run that has not run; the content item stays.",
        guidance="Deletes nothing on any platform. 409 once the run is processing or has run.",
    ),
]
