"""Posting queues: routes, slot times (DST-correct), the worker tick that turns due slots into Schedules, and
the content-usage probe ("queued").

Authority: queue writes need only schedule:write, so a queue never publishes on its own. `approved_by_key`
records whether the key that last changed when, where or what the queue publishes (every field but its name;
pausing keeps it) held publish:execute (tools/schedules/authority.py, `renew_queue_approval`); only then (and
while that key is unrevoked and still holds the scope) are the Schedules a queue makes approved, otherwise
they are held as pending_review. Slot times: docs/queues.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from copy import copy
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import func, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import queues as sq
from schemas.errors import ApiError, Issues, issue, not_found
from schemas.ids import new_id
from schemas.library import Deleted
from schemas.scopes import PUBLISH_SCOPE
from schemas.time import iso, parse_timestamp
from storage.tables.accounts import ApiKey
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.publishing import Schedule
from storage.tables.queues import Queue
from tools.endpoint import Call, Endpoint
from tools.publishing.runs import check_ids
from tools.schedules.authority import QUEUE_COVERED, renew_queue_approval
from tools.schedules.preflight import run_preflight
from tools.schedules.rows import new_schedule

TICK_BATCH = 50  # due queues handled per tick transaction
# A queue whose Schedules are held for review gets its next slot's Schedule this far ahead (one at a time), so
# a reviewer can approve it before it is due (approval takes only future Schedules). docs/queues.md.
HOLD_AHEAD = timedelta(days=7)
SLOT_FIELDS = ("mode", "times_of_day", "timezone", "interval_minutes", "start_at", "active", "content_item_ids",
               "loop", "skip_count")


# -- slot times ---------------------------------------------------------------------------------------------

def local_slot(day: date, hhmm: str, tz: ZoneInfo) -> datetime:
    """The UTC instant of wall time `hhmm` on `day` in `tz`.

    fold=0 decides both DST edge cases: an ambiguous wall time (fall back, 01:30 happens twice) is its FIRST
    occurrence (daylight time); a wall time that does not exist (spring forward, 02:30) is read with the offset
    in force before the gap, so it lands the length of the gap later (03:30 daylight time). A slot is never
    dropped and never fires twice."""
    hour, minute = int(hhmm[:2]), int(hhmm[3:])
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz, fold=0).astimezone(UTC)


def next_slot(q: Queue, after: datetime) -> datetime | None:
    """The first slot strictly after `after` (None when the mode has no slots configured)."""
    if q.mode == "interval":
        if not q.interval_minutes or q.start_at is None:
            return None
        step = timedelta(minutes=q.interval_minutes)
        if after < q.start_at:
            return q.start_at
        return q.start_at + ((after - q.start_at) // step + 1) * step
    if not q.times_of_day:
        return None
    tz = ZoneInfo(q.timezone)
    today = after.astimezone(tz).date()
    slots = {local_slot(today + timedelta(days=d), t, tz) for d in (-1, 0, 1, 2) for t in q.times_of_day}
    return min(s for s in slots if s > after)


def pending(q: Queue) -> bool:
    """Is there an item left to post?"""
    return bool(q.content_item_ids) and (q.loop or q.skip_count < len(q.content_item_ids))


def arm(q: Queue, now: datetime) -> None:
    """Set next_run_at: the next slot after now, or None when inactive or nothing is left to post."""
    q.next_run_at = next_slot(q, now) if q.active and pending(q) else None


# -- shapes and checks --------------------------------------------------------------------------------------

def queue_out(q: Queue) -> sq.QueueOut:
    return sq.QueueOut.model_validate({"id": q.id, "name": q.name, "brand_id": q.brand_id, "active": q.active, "mode": q.mode,
            "times_of_day": list(q.times_of_day), "timezone": q.timezone, "interval_minutes": q.interval_minutes,
            "start_at": iso(q.start_at), "next_run_at": iso(q.next_run_at), "loop": q.loop,
            "content_item_ids": list(q.content_item_ids), "integration_ids": list(q.integration_ids),
            "skip_count": q.skip_count, "approval_status": "approved" if q.approved_by_key else "pending_review",
            "created_at": iso(q.created_at), "updated_at": iso(q.updated_at)})


async def check_content(session: AsyncSession, brand_id: str, ids: list[str]) -> None:
    if not ids:
        return
    have = set((await session.exec(select(ContentItem.id).where(
        ContentItem.brand_id == brand_id, col(ContentItem.id).in_(ids)))).all())
    issues = Issues()
    for i, cid in enumerate(ids):
        if cid not in have:
            issues.add(f"$.content_item_ids[{i}]", "NOT_FOUND",
                       "No content item of this brand has this ID; use an id from list_content_items.")
    issues.raise_if_any(message="Some IDs are not of this brand.")


def check_mode(q: Queue, code: str) -> None:
    """The fields the mode needs (400 on create, 422 on a PATCH whose merged state lacks them)."""
    if q.mode == "times_of_day" and not q.times_of_day:
        raise ApiError(code, "times_of_day mode needs at least one time.",
                       issues=[issue("$.times_of_day", "REQUIRED", "Send one or more HH:MM times, e.g. [\"09:00\"].")])
    if q.mode == "interval" and not q.interval_minutes:
        raise ApiError(code, "interval mode needs interval_minutes.",
                       issues=[issue("$.interval_minutes", "REQUIRED", "Send the minutes between slots (5 to "
                                                                       "40320).")])


# -- routes -------------------------------------------------------------------------------------------------

async def list_queues(call: Call, req: sq.BrandPath) -> sq.QueueList:
    rows = (await call.session.exec(select(Queue).where(Queue.brand_id == call.brand_id).order_by(
        col(Queue.created_at), Queue.id).limit(sq.QUEUES_PER_BRAND_MAX))).all()
    return sq.QueueList([queue_out(q) for q in rows])


async def load_queue(call: Call, queue_id: str, *, lock: bool = False) -> Queue:
    query = select(Queue).where(Queue.id == queue_id, Queue.brand_id == call.brand_id)
    # Writes lock the row (PostgreSQL), so a tick racing this PATCH either fires before it or sees its change.
    q = (await call.session.exec(query.with_for_update() if lock else query)).first()
    if q is None:
        raise not_found("Queue")
    return q


async def get_queue(call: Call, req: sq.QueuePath) -> sq.QueueOut:
    return queue_out(await load_queue(call, req.queue_id))



async def create_queue(call: Call, req: sq.CreateQueueRequest) -> sq.QueueOut:
    assert call.brand is not None and call.caller is not None
    count = (await call.session.exec(select(func.count()).select_from(Queue).where(
        Queue.brand_id == call.brand_id))).one()
    if count >= sq.QUEUES_PER_BRAND_MAX:
        raise ApiError("DOMAIN_VALIDATION_FAILED", f"A brand has at most {sq.QUEUES_PER_BRAND_MAX} queues.",
                       issues=[issue("$", "LIMIT_REACHED", "Delete a queue you no longer use first.")])
    q = Queue(id=new_id("que"), workspace_id=call.brand.workspace_id, brand_id=call.brand_id, name=req.name.strip(),
              active=req.active, mode=req.mode, times_of_day=sorted(req.times_of_day),
              timezone=req.timezone or call.brand.timezone or "UTC", interval_minutes=req.interval_minutes,
              start_at=parse_timestamp(req.start_at) if req.start_at else None, loop=req.loop,
              content_item_ids=list(req.content_item_ids), integration_ids=sorted(req.integration_ids),
              skip_count=0, created_by=call.caller.user_id, created_at=call.now, updated_at=call.now)
    check_mode(q, "MALFORMED_REQUEST")
    await check_ids(call.session, call.brand_id, integration_ids=req.integration_ids)
    await check_content(call.session, call.brand_id, req.content_item_ids)
    if q.mode == "interval" and q.start_at is None:
        q.start_at = call.now + timedelta(minutes=q.interval_minutes or 0)
    renew_queue_approval(call, q, QUEUE_COVERED)  # a new queue: approved only by a key holding publish:execute
    arm(q, call.now)
    call.session.add(q)
    await call.session.flush()
    if q.next_run_at is not None:
        call.wake_worker_after_commit()
    return queue_out(q)


async def update_queue(call: Call, req: sq.UpdateQueueRequest) -> sq.QueueOut:
    fields = set(sq.UpdateQueueRequest.model_fields) - {"brand_id", "queue_id"}
    provided = req.model_fields_set & fields
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send at least one field to change.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send at least one field of the queue to change.")])
    q = await load_queue(call, req.queue_id, lock=True)
    before = {name: copy(getattr(q, name)) for name in QUEUE_COVERED}
    if "integration_ids" in provided:
        await check_ids(call.session, call.brand_id, integration_ids=req.integration_ids)
    if "content_item_ids" in provided:
        await check_content(call.session, call.brand_id, req.content_item_ids)
    for name in provided:
        value = getattr(req, name)
        if name == "name":
            value = value.strip()
        elif name == "start_at":
            value = parse_timestamp(value)
        elif name in ("times_of_day", "integration_ids"):
            value = sorted(value)
        elif name == "content_item_ids":
            value = list(value)
        setattr(q, name, value)
    check_mode(q, "DOMAIN_VALIDATION_FAILED")
    if q.mode == "interval" and q.start_at is None:
        q.start_at = call.now + timedelta(minutes=q.interval_minutes or 0)
    renew_queue_approval(call, q, {name for name in QUEUE_COVERED if getattr(q, name) != before[name]}, provided)
    if provided & set(SLOT_FIELDS):
        arm(q, call.now)
    q.updated_at = call.now
    call.session.add(q)
    await call.session.flush()
    if q.next_run_at is not None:
        call.wake_worker_after_commit()
    return queue_out(q)


async def delete_queue(call: Call, req: sq.QueuePath) -> Deleted:
    q = await load_queue(call, req.queue_id, lock=True)
    await call.session.delete(q)
    await call.session.flush()
    return Deleted(id=q.id, outcome="deleted")


# -- the worker tick ----------------------------------------------------------------------------------------

async def _approving_key(session: AsyncSession, q: Queue) -> str | None:
    """The key whose publish authority approves this queue's Schedules, if it still has it."""
    if not q.approved_by_key:
        return None
    key = await session.get(ApiKey, q.approved_by_key)
    if key is None or key.revoked_at is not None or PUBLISH_SCOPE not in key.scopes:
        return None
    if key.brand_ids is not None and q.brand_id not in key.brand_ids:
        return None
    return key.id


async def _hold_ahead(session: AsyncSession, q: Queue, now: datetime) -> bool:
    """Should this future slot's Schedule be made now? Only for a queue whose Schedules are held (no key with
    publish authority approves them), and only when it has no held Schedule still to come: one slot ahead."""
    if await _approving_key(session, q) is not None:
        return False  # approved slots are made when due, checked by preflight at that time
    waiting = (await session.exec(select(Schedule.id).where(
        Schedule.queue_id == q.id, Schedule.scheduled_at > now).limit(1))).first()
    return waiting is None


async def fire(session: AsyncSession, q: Queue, now: datetime, upgrade_url: str = "") -> bool:
    """Turn the queue's due slot into at most one Schedule. The claim is a conditional update on the row as
    read (next_run_at, skip_count, updated_at): of two workers racing for one slot exactly one updates it;
    the other updates nothing and makes nothing. Returns whether this call claimed the slot."""
    slot = q.next_run_at
    assert slot is not None
    items = list(q.content_item_ids)
    skip = q.skip_count
    chosen: str | None = None
    if items:
        existing = set((await session.exec(select(ContentItem.id).where(
            ContentItem.brand_id == q.brand_id, col(ContentItem.id).in_(items)))).all())
        # Consume positions until an item that still exists (deleted items are skipped and counted).
        for _ in range(len(items)):
            if not q.loop and skip >= len(items):
                break
            candidate = items[skip % len(items)]
            skip += 1
            if candidate in existing:
                chosen = candidate
                break
    exhausted = not items or (not q.loop and skip >= len(items))
    if q.loop and chosen is None:
        exhausted = True  # every item of a looping queue is gone
    probe = Queue(**{**q.model_dump(), "skip_count": skip, "active": q.active and not exhausted})
    next_run = next_slot(probe, max(slot, now)) if probe.active else None
    connection = await session.connection()
    claimed = await connection.execute(
        update(Queue).where(col(Queue.id) == q.id, col(Queue.next_run_at) == slot, col(Queue.skip_count) == q.skip_count,
                            col(Queue.updated_at) == q.updated_at, col(Queue.active).is_(True))
        .values(next_run_at=next_run, skip_count=skip, active=probe.active, updated_at=now))
    if claimed.rowcount != 1:
        return False
    if chosen is not None:
        brand = await session.get(Brand, q.brand_id)
        assert brand is not None
        approver = await _approving_key(session, q)
        blocked = None
        if approver:
            # Defence in depth: an approved slot must pass the same rules as any Schedule (the time is the
            # slot, already due, so it is not checked). A blocked slot is made held, with a safe reason.
            found = await run_preflight(session, brand=brand, content_item_id=chosen,
                                        integration_ids=list(q.integration_ids), scheduled_at=None,
                                        approval_status="approved", scopes=frozenset({PUBLISH_SCOPE}), now=now,
                                        upgrade_url=upgrade_url)
            if not found.can_schedule:
                blocked = (f"Preflight found {len(found.result.blockers)} blocker(s) when the queue slot came, so "
                           "this Schedule is held; run preflight_content for the content item to see them.")
        schedule = new_schedule(
            session, brand=brand, content_item_id=chosen, integration_ids=list(q.integration_ids),
            scheduled_at=slot, approval_status="approved" if approver and not blocked else "pending_review",
            source="queue", user_id=q.created_by, key_id=approver if approver and not blocked else q.set_by_key,
            now=now, queue_id=q.id)
        schedule.failure_reason = blocked
    return True


async def queue_tick(rt: Any, worker_id: str) -> int:
    """Every active queue whose next_run_at has come: one Schedule for its slot, next_run_at advanced."""
    now = rt.clock.now()
    made = 0
    async with rt.db.session(write=True) as session:
        due = (await session.exec(select(Queue).where(col(Queue.active).is_(True), Queue.next_run_at <= now + HOLD_AHEAD)
                                  .order_by(col(Queue.next_run_at), Queue.id).limit(TICK_BATCH))).all()
        for q in due:
            assert q.next_run_at is not None
            if q.next_run_at > now and not await _hold_ahead(session, q, now):
                continue
            made += await fire(session, q, now, rt.settings.upgrade_url)
    if made:
        rt.wake_worker()
    return made


TICKS = [queue_tick]


# -- content usage ------------------------------------------------------------------------------------------

async def queued_usage(session: AsyncSession, brand_id: str, content_item_ids: list[str]) -> dict[str, Iterable[str]]:
    """"queued" for every given item listed by an active queue of the brand (bounded: at most 100 queues)."""
    wanted = set(content_item_ids)
    lists = (await session.exec(select(Queue.content_item_ids).where(
        Queue.brand_id == brand_id, col(Queue.active).is_(True)).limit(sq.QUEUES_PER_BRAND_MAX))).all()
    found: dict[str, Iterable[str]] = {}
    for ids in lists:
        for cid in ids or []:
            if cid in wanted:
                found[cid] = {"queued"}
    return found



PATH = "/v1/brands/{brand_id}/queues"
ONE = PATH + "/{queue_id}"

ENDPOINTS = [
    Endpoint(
        name="list_queues", method="GET", path=PATH, toolset="publishing", handler=list_queues,
        request=sq.BrandPath, response=sq.QueueList, scopes=("schedule:read",),
        title="List queues",
        summary="List every posting queue of the brand (at most 100), oldest first.",
        guidance="Read-only. next_run_at null means the queue will post nothing (inactive, empty or used up).",
    ),
    Endpoint(
        name="get_queue", method="GET", path=ONE, toolset="publishing", handler=get_queue, request=sq.QueuePath,
        response=sq.QueueOut, scopes=("schedule:read",), title="Get queue",
        summary="Read one posting queue with its next slot time and position.",
        guidance="Read-only. Schedules the queue made are listed by list_publish_runs (source queue).",
    ),
    Endpoint(
        name="create_queue", method="POST", path=PATH, toolset="publishing", handler=create_queue,
        request=sq.CreateQueueRequest, response=sq.QueueOut, scopes=("schedule:write",), status=201,
        idempotency="optional", open_world=True, title="Create queue",
        summary="Create a posting queue: an ordered list of content items posted to integrations one per slot, "
                "at local times of day or at a fixed interval.",
        guidance="Calls no provider. Each due slot becomes a Schedule; it is approved only when the key that set "
                 "the items and targets holds publish:execute, otherwise it is held for review.",
    ),
    Endpoint(
        name="update_queue", method="PATCH", path=ONE, toolset="publishing", handler=update_queue,
        request=sq.UpdateQueueRequest, response=sq.QueueOut, scopes=("schedule:write",), open_world=True,
        title="Update queue",
        summary="Change a queue's fields; only the given fields change and next_run_at is recomputed.",
        guidance="Calls no provider. Changing when, where or what it posts (any field but name; pausing is "
                 "free) records this key's publish authority: without publish:execute the queue's next "
                 "Schedules are held for review.",
    ),
    Endpoint(
        name="delete_queue", method="DELETE", path=ONE, toolset="publishing", handler=delete_queue,
        request=sq.QueuePath, response=Deleted, scopes=("schedule:write",), destructive=True, title="Delete queue",
        summary="Delete a queue; its content items and the Schedules it already made stay.",
        guidance="Never cancels the Schedules it made: cancel them with the schedule routes if they should not "
                 "publish.",
    ),
]
