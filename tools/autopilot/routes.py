"""Autopilot: read a brand's weekly plan and weeks; approve an item's topic; regenerate one unused topic.

Reads create nothing. Approve and regenerate need posts:write, a plan with the `autopilot` feature
(403 ENTITLEMENT_REQUIRED otherwise), an idempotency key, `plan_id` and `confirm_item_id` equal to the path.
Approve queues no generation, approves no Schedule and publishes nothing. Regenerate replaces the topic of
exactly one unused item (not approved, no content item, no Schedule) using `Runtime.topic_generator`; it
writes a marker under its idempotency key first, so a regeneration whose result is uncertain (generator
failed or timed out) blocks a second regeneration under the same key.

Operators make plans (`create_plan`, CLI `socialpub autopilot plan`); the generation pipeline records a
Schedule for an item with `schedule_generated_item`, always held as pending_review.
"""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import anyio
from sqlalchemy import update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import autopilot as sap
from schemas.errors import ApiError, issue
from schemas.ids import new_id
from schemas.time import iso
from storage.tables.autopilot import (
    TOPIC_MAX,
    AutopilotItem,
    AutopilotPlan,
    AutopilotRegeneration,
    AutopilotWeek,
)
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.publishing import Schedule
from tools.autopilot.topics import BUILTIN, TopicGenerator, context_for, norm
from tools.context.plans import require_feature
from tools.endpoint import Call, Endpoint
from tools.links import link
from tools.notifications.notify import notify
from tools.schedules.rows import new_schedule

log = logging.getLogger("socialpub.autopilot")

GENERATOR_TIMEOUT_SECONDS = 30.0  # a generator may set `timeout_seconds` to change it
PLAN_WEEKS_MAX = 52  # weeks one `create_plan` call may add
INTEGRATIONS_MAX = 20


class AutopilotError(ValueError):
    """An operator or pipeline call that cannot be carried out (message is safe to print)."""


# -- shapes -------------------------------------------------------------------------------------------------

def _ends_on(starts_on: str) -> str:
    return (date.fromisoformat(starts_on) + timedelta(days=6)).isoformat()


def item_out(item: AutopilotItem) -> sap.AutopilotItemOut:
    brand_id, week_number, item_id = item.brand_id, str(item.week_number), item.id
    content = (link("get_content_item", brand_id=item.brand_id, content_item_id=item.content_item_id)
               if item.content_item_id else None)
    schedule = (link("get_schedule", brand_id=item.brand_id, schedule_id=item.schedule_id)
                if item.schedule_id else None)
    return sap.AutopilotItemOut.model_validate({
        "id": item.id, "plan_id": item.plan_id, "week_number": item.week_number, "position": item.position,
        "topic": item.topic, "review_status": item.review_status, "regeneration_status": item.regeneration_status,
        "content_item_id": item.content_item_id, "schedule_id": item.schedule_id,
        "approved_at": iso(item.approved_at), "created_at": iso(item.created_at), "updated_at": iso(item.updated_at),
        "links": {"approve": link("approve_autopilot_item", brand_id=brand_id, week_number=week_number,
                                  item_id=item_id),
                  "regenerate": link("regenerate_autopilot_item", brand_id=brand_id, week_number=week_number,
                                     item_id=item_id),
                  "content_item": content, "schedule": schedule},
    })


def week_out(week: AutopilotWeek, items: list[AutopilotItem]) -> sap.AutopilotWeekOut:
    return sap.AutopilotWeekOut.model_validate({
        "plan_id": week.plan_id, "week_number": week.week_number, "status": week.status, "theme": week.theme,
        "starts_on": week.starts_on, "ends_on": _ends_on(week.starts_on), "items": [item_out(i) for i in items],
        "links": {"self": link("get_autopilot_week", brand_id=week.brand_id, week_number=str(week.week_number),
                               query=f"plan_id={week.plan_id}"),
                  "plan": link("get_autopilot_plan", brand_id=week.brand_id)},
    })


def week_status(items: list[AutopilotItem]) -> str:
    if items and all(i.schedule_id for i in items):
        return "scheduled"
    if items and all(i.review_status == "approved" for i in items):
        return "approved"
    return "pending_review"


# -- loading ------------------------------------------------------------------------------------------------

async def active_plan(session: AsyncSession, brand_id: str) -> AutopilotPlan | None:
    return (await session.exec(select(AutopilotPlan).where(
        AutopilotPlan.brand_id == brand_id, AutopilotPlan.status == "active")
        .order_by(col(AutopilotPlan.created_at).desc(), col(AutopilotPlan.id).desc()).limit(1))).first()


async def _plan(session: AsyncSession, brand_id: str, plan_id: str) -> AutopilotPlan:
    plan = await session.get(AutopilotPlan, plan_id)
    if plan is None or plan.brand_id != brand_id:
        raise ApiError("NOT_FOUND", "No Autopilot plan of this brand has this plan_id.",
                       issues=[issue("$.plan_id", "PLAN_NOT_FOUND", "Use data.plan.id from get_autopilot_plan.")],
                       details={"resource": "autopilot_plan"}, next_action="get_autopilot_plan")
    return plan


async def _week(session: AsyncSession, plan: AutopilotPlan, week_number: int) -> AutopilotWeek:
    week = (await session.exec(select(AutopilotWeek).where(AutopilotWeek.plan_id == plan.id,
                                                           AutopilotWeek.week_number == week_number))).first()
    if week is None:
        raise ApiError("NOT_FOUND", f"The Autopilot plan has no week {week_number}.",
                       issues=[issue("$.week_number", "WEEK_NOT_FOUND",
                                     "Use a week number listed in data.plan.weeks of get_autopilot_plan.")],
                       details={"resource": "autopilot_week"}, next_action="get_autopilot_plan")
    return week


async def _items(session: AsyncSession, week_id: str) -> list[AutopilotItem]:
    return list((await session.exec(select(AutopilotItem).where(AutopilotItem.week_id == week_id)
                                    .order_by(col(AutopilotItem.position)).limit(sap.ITEMS_PER_WEEK_MAX))).all())


async def _item(session: AsyncSession, week: AutopilotWeek, item_id: str) -> AutopilotItem:
    item = await session.get(AutopilotItem, item_id)
    if item is None or item.week_id != week.id:
        raise ApiError("NOT_FOUND", f"Week {week.week_number} of this Autopilot plan has no item with this ID.",
                       issues=[issue("$.item_id", "ITEM_NOT_FOUND", "Use an item id from get_autopilot_week.")],
                       details={"resource": "autopilot_item"}, next_action="get_autopilot_week")
    return item


# -- reads --------------------------------------------------------------------------------------------------

async def get_plan(call: Call, req: sap.GetAutopilotPlanRequest) -> sap.AutopilotPlanRead:
    plan = await active_plan(call.session, call.brand_id)
    if plan is None:
        return sap.AutopilotPlanRead(plan=None, has_more_weeks=False)
    numbers = list((await call.session.exec(
        select(AutopilotWeek.week_number).where(AutopilotWeek.plan_id == plan.id)
        .order_by(col(AutopilotWeek.week_number).desc()).limit(sap.RECENT_WEEKS_MAX + 1))).all())
    has_more = len(numbers) > sap.RECENT_WEEKS_MAX
    weeks = sorted(numbers[: sap.RECENT_WEEKS_MAX])
    latest = (link("get_autopilot_week", brand_id=plan.brand_id, week_number=str(weeks[-1]),
                   query=f"plan_id={plan.id}") if weeks else None)
    return sap.AutopilotPlanRead.model_validate({"plan": {
        "id": plan.id, "brand_id": plan.brand_id, "status": plan.status, "auto_approval": plan.auto_approval,
        "items_per_week": plan.items_per_week, "weeks": weeks,
        "created_at": iso(plan.created_at), "updated_at": iso(plan.updated_at),
        "links": {"self": link("get_autopilot_plan", brand_id=plan.brand_id), "latest_week": latest},
    }, "has_more_weeks": has_more})


async def get_week(call: Call, req: sap.GetAutopilotWeekRequest) -> sap.AutopilotWeekOut:
    plan = await _plan(call.session, call.brand_id, req.plan_id)
    week = await _week(call.session, plan, req.week_number)
    return week_out(week, await _items(call.session, week.id))


# -- writes -------------------------------------------------------------------------------------------------

async def _writable(call: Call, req: sap.ApproveAutopilotItemRequest | sap.RegenerateAutopilotItemRequest
                    ) -> tuple[AutopilotPlan, AutopilotWeek, AutopilotItem]:
    assert call.brand is not None
    await require_feature(call.session, call.brand, "autopilot", upgrade_url=call.rt.settings.upgrade_url)
    if req.confirm_item_id != req.item_id:
        raise ApiError("DOMAIN_VALIDATION_FAILED", "confirm_item_id differs from the item ID in the path; nothing "
                                                   "was changed.",
                       issues=[issue("$.confirm_item_id", "MISMATCH", "Send the same ID as the path's item_id.")])
    plan = await _plan(call.session, call.brand_id, req.plan_id)
    week = await _week(call.session, plan, req.week_number)
    item = await _item(call.session, week, req.item_id)
    return plan, week, item


def _require_active(plan: AutopilotPlan) -> None:
    if plan.status != "active":
        raise ApiError("CONFLICT", "This Autopilot plan is archived; its items can no longer change.",
                       repair_guidance="Read get_autopilot_plan for the brand's active plan.",
                       next_action="get_autopilot_plan")


async def _refresh_week(session: AsyncSession, week: AutopilotWeek, now: datetime) -> list[AutopilotItem]:
    items = await _items(session, week.id)
    status = week_status(items)
    if status != week.status:
        week.status, week.updated_at = status, now
        session.add(week)
    return items


async def approve_item(call: Call, req: sap.ApproveAutopilotItemRequest) -> sap.AutopilotItemWrite:
    plan, week, item = await _writable(call, req)
    _require_active(plan)
    if item.review_status != "approved":  # approving an approved item changes nothing and succeeds
        item.review_status, item.approved_at = "approved", call.now
        item.approved_by_key = call.caller.key_id if call.caller else None
        item.revision += 1
        item.updated_at = call.now
        call.session.add(item)
        await call.session.flush()
        await _refresh_week(call.session, week, call.now)
        await call.session.flush()
    return sap.AutopilotItemWrite(id=item.id, outcome="approved", item=item_out(item))


def _refuse_used(item: AutopilotItem) -> None:
    reasons = []
    if item.content_item_id:
        reasons.append("content was generated from it")
    if item.schedule_id:
        reasons.append("it has a Schedule")
    if item.review_status == "approved":
        reasons.append("it is approved")
    if reasons:
        raise ApiError("CONFLICT", f"Only an unused topic can be regenerated; this item is in use: "
                                   f"{', '.join(reasons)}. Nothing was changed.",
                       details={"review_status": item.review_status, "content_item_id": item.content_item_id,
                                "schedule_id": item.schedule_id},
                       repair_guidance="Pick an item with review_status pending_review and no content_item_id or "
                                       "schedule_id from get_autopilot_week.",
                       next_action="get_autopilot_week")


def _uncertain_error(item: AutopilotItem, *, first: bool) -> ApiError:
    guidance = ("Read the week with get_autopilot_week to see the item's current topic, then, if you still want a "
                "new topic, call regenerate_autopilot_item again with a NEW idempotency key.")
    if first:
        return ApiError("DEPENDENCY_UNAVAILABLE", "The topic generator failed or timed out; the result of this "
                        "regeneration is uncertain and this idempotency key cannot start another one.",
                        retryable=False, repair_guidance=guidance, next_action="get_autopilot_week",
                        details={"item_id": item.id, "regeneration_status": "uncertain"}, keep_changes=True)
    return ApiError("CONFLICT", "A regeneration under this idempotency key has an uncertain result; the same key "
                    "cannot start a second regeneration.", retryable=False, repair_guidance=guidance,
                    next_action="get_autopilot_week",
                    details={"item_id": item.id, "regeneration_status": "uncertain"})


async def _generate(generator: TopicGenerator, ctx: Any) -> str:
    timeout = float(getattr(generator, "timeout_seconds", GENERATOR_TIMEOUT_SECONDS))
    with anyio.fail_after(timeout):
        return await generator.topic(ctx)


async def regenerate_item(call: Call, req: sap.RegenerateAutopilotItemRequest) -> sap.AutopilotItemWrite:
    plan, week, item = await _writable(call, req)
    assert call.brand is not None
    session = call.session
    key_id = call.caller.key_id if call.caller else ""
    idem = call.idempotency_key or ""
    marker = (await session.exec(select(AutopilotRegeneration).where(
        AutopilotRegeneration.api_key_id == key_id, AutopilotRegeneration.idempotency_key == idem))).first()
    if marker is not None:
        # A successful regeneration is replayed by the dispatcher before this runs; a marker here means the
        # earlier attempt under this key failed or timed out after it started.
        raise _uncertain_error(item, first=False)
    _require_active(plan)
    _refuse_used(item)

    marker = AutopilotRegeneration(id=new_id("apr"), api_key_id=key_id, idempotency_key=idem, brand_id=item.brand_id,
                                   item_id=item.id, status="in_flight", created_at=call.now, updated_at=call.now)
    session.add(marker)
    await session.flush()

    siblings = await _items(session, week.id)
    taken = [i.topic for i in siblings]
    ctx = await context_for(session, call.brand, week_number=week.week_number, theme=week.theme, taken=taken,
                            guidance=req.guidance, seed=f"{item.id}:{item.revision + 1}", now=call.now)
    revision = item.revision
    try:
        topic = await _generate(call.rt.topic_generator, ctx)
        topic = " ".join(str(topic).split())
        if not topic or len(topic) > TOPIC_MAX or norm(topic) in {norm(t) for t in taken}:
            raise ValueError("the generator returned an empty, oversized or repeated topic")
    except Exception as exc:  # any generator failure makes the result uncertain
        log.warning("autopilot topic generation failed for %s: %s", item.id, type(exc).__name__)
        item.regeneration_status, item.updated_at = "uncertain", call.now
        marker.status, marker.updated_at = "uncertain", call.now
        session.add_all([item, marker])
        await session.flush()
        raise _uncertain_error(item, first=True) from None

    result = await session.exec(
        update(AutopilotItem).where(col(AutopilotItem.id) == item.id, col(AutopilotItem.revision) == revision,
                                    col(AutopilotItem.review_status) == "pending_review",
                                    col(AutopilotItem.content_item_id).is_(None), col(AutopilotItem.schedule_id).is_(None))
        .values(topic=topic, regeneration_status="none", revision=revision + 1, updated_at=call.now)
        .execution_options(synchronize_session=False))
    if result.rowcount != 1:
        raise ApiError("CONFLICT", "The item changed while its topic was being regenerated; nothing was changed.",
                       retryable=True, repair_guidance="Read the week with get_autopilot_week, then retry with a "
                                                       "new idempotency key if the item is still unused.",
                       next_action="get_autopilot_week")
    marker.status, marker.updated_at = "succeeded", call.now
    session.add(marker)
    await session.flush()
    await session.refresh(item)
    await _refresh_week(session, week, call.now)
    await session.flush()
    return sap.AutopilotItemWrite(id=item.id, outcome="regenerated", item=item_out(item))


# -- operator and pipeline functions ------------------------------------------------------------------------

def _next_monday(now: datetime, timezone: str) -> date:
    try:
        local = now.astimezone(ZoneInfo(timezone)).date()
    except Exception:  # an unknown zone name falls back to UTC
        local = now.date()
    return local + timedelta(days=(7 - local.weekday()) % 7 or 7)


async def create_plan(session: AsyncSession, now: datetime, brand: Brand, *, weeks: int = 4, items_per_week: int = 3,
                      auto_approval: bool = False, generator: TopicGenerator = BUILTIN,
                      starts_on: date | None = None) -> tuple[AutopilotPlan, list[AutopilotWeek]]:
    """Add `weeks` weeks (themes and topics from `generator`) to the brand's active plan, creating the plan
    when there is none. Week 1 starts on `starts_on` (a Monday) or the next Monday in the brand's timezone;
    added weeks follow the plan's last week and keep its items per week."""
    if not 1 <= weeks <= PLAN_WEEKS_MAX:
        raise AutopilotError(f"weeks must be 1 to {PLAN_WEEKS_MAX}")
    if not 1 <= items_per_week <= sap.ITEMS_PER_WEEK_MAX:
        raise AutopilotError(f"items per week must be 1 to {sap.ITEMS_PER_WEEK_MAX}")
    if starts_on is not None and starts_on.weekday() != 0:
        raise AutopilotError("a plan's weeks start on a Monday")
    plan = await active_plan(session, brand.id)
    last = None
    if plan is None:
        plan = AutopilotPlan(id=new_id("apl"), workspace_id=brand.workspace_id, brand_id=brand.id,
                             auto_approval=auto_approval, items_per_week=items_per_week, created_at=now,
                             updated_at=now)
        session.add(plan)
        await session.flush()
    else:
        if starts_on is not None:
            raise AutopilotError("the brand already has an active plan; new weeks follow its last week")
        last = (await session.exec(select(AutopilotWeek).where(AutopilotWeek.plan_id == plan.id)
                                   .order_by(col(AutopilotWeek.week_number).desc()).limit(1))).first()
        plan.updated_at = now
    if last is not None:
        number, start = last.week_number + 1, date.fromisoformat(last.starts_on) + timedelta(days=7)
    else:
        number, start = 1, starts_on or _next_monday(now, brand.timezone)
    made = []
    for n in range(number, number + weeks):
        ctx = await context_for(session, brand, week_number=n, theme=None, seed=f"{plan.id}:{n}")
        theme = " ".join((await generator.theme(ctx)).split())[:200] or f"Week {n}"
        week = AutopilotWeek(id=new_id("apw"), plan_id=plan.id, brand_id=brand.id, week_number=n,
                             starts_on=start.isoformat(), theme=theme, created_at=now, updated_at=now)
        session.add(week)
        await session.flush()
        topics: list[str] = []
        for position in range(1, plan.items_per_week + 1):
            ctx = await context_for(session, brand, week_number=n, theme=theme, taken=topics,
                                    seed=f"{plan.id}:{n}:{position}", now=now)
            topic = " ".join((await generator.topic(ctx)).split())[:TOPIC_MAX]
            if not topic or norm(topic) in {norm(t) for t in topics}:
                raise AutopilotError(f"the topic generator returned an empty or repeated topic for week {n}")
            topics.append(topic)
            session.add(AutopilotItem(id=new_id("api"), plan_id=plan.id, week_id=week.id, brand_id=brand.id,
                                      week_number=n, position=position, topic=topic, created_at=now, updated_at=now))
        made.append(week)
        start += timedelta(days=7)
    await session.flush()
    return plan, made


async def schedule_generated_item(session: AsyncSession, now: datetime, item: AutopilotItem, content_item_id: str,
                                  scheduled_at: datetime, integration_ids: list[str], user_id: str,
                                  *, requested_approval: str | None = None) -> Schedule:
    """Record the Schedule of content generated from an Autopilot item.

    The Schedule is ALWAYS held as pending_review (status action_required): whatever `requested_approval`
    says and even when the plan's auto_approval is on (spec, Schedule states). Approval is a separate step
    (approve_schedule, needing publish:execute). Notifies planner_review_reminders.
    """
    if requested_approval not in (None, "pending_review"):
        log.info("autopilot item %s: requested approval %s ignored; Autopilot schedules are held",
                 item.id, requested_approval)
    if item.schedule_id is not None:
        raise AutopilotError(f"item {item.id} already has a Schedule")
    if item.content_item_id is not None and item.content_item_id != content_item_id:
        raise AutopilotError(f"item {item.id} was generated as content item {item.content_item_id}")
    if scheduled_at.tzinfo is None:
        raise AutopilotError("scheduled_at needs a timezone")
    ids = list(integration_ids)
    if not 1 <= len(ids) <= INTEGRATIONS_MAX or len(set(ids)) != len(ids):
        raise AutopilotError(f"integration_ids must be 1 to {INTEGRATIONS_MAX} unique IDs")
    plan = await session.get(AutopilotPlan, item.plan_id)
    brand = await session.get(Brand, item.brand_id)
    assert plan is not None and brand is not None
    if plan.status != "active":
        raise AutopilotError(f"plan {plan.id} is archived")
    content = await session.get(ContentItem, content_item_id)
    if content is None or content.brand_id != brand.id:
        raise AutopilotError(f"no content item {content_item_id} in brand {brand.id}")
    found = set((await session.exec(select(Integration.id).where(Integration.brand_id == brand.id,
                                                                 col(Integration.id).in_(ids)))).all())
    if found != set(ids):
        raise AutopilotError(f"integrations not in brand {brand.id}: {', '.join(sorted(set(ids) - found))}")

    schedule = new_schedule(session, brand=brand, content_item_id=content_item_id, integration_ids=ids,
                            scheduled_at=scheduled_at, approval_status="pending_review", source="autopilot",
                            user_id=user_id, key_id=None, now=now, autopilot_item_id=item.id)
    item.content_item_id, item.schedule_id = content_item_id, schedule.id
    item.revision += 1
    item.updated_at = now
    session.add(item)
    await session.flush()
    week = await session.get(AutopilotWeek, item.week_id)
    assert week is not None
    await _refresh_week(session, week, now)
    await session.flush()
    await notify(session, now, brand, "autopilot_review_pending", "planner_review_reminders",
                 f"Review Autopilot post: {item.topic}",
                 f"A post for week {item.week_number} of {brand.name}'s Autopilot plan is scheduled for "
                 f"{iso(scheduled_at)} and is held for review. It will not publish until someone with publishing "
                 f"permission approves it.", dedupe_key=f"autopilot_review:{schedule.id}")
    return schedule


# -- catalogue ----------------------------------------------------------------------------------------------

ITEM_PATH = "/v1/brands/{brand_id}/autopilot/weeks/{week_number}/items/{item_id}"

ENDPOINTS = [
    Endpoint(
        name="get_autopilot_plan", method="GET", path="/v1/brands/{brand_id}/autopilot/plan", toolset="autopilot",
        handler=get_plan, request=sap.GetAutopilotPlanRequest, response=sap.AutopilotPlanRead, scopes=("posts:read",),
        title="Get Autopilot plan",
        summary="Read the brand's active Autopilot plan: its ID, status and up to 100 most recent week numbers, "
                "or null when the brand has no plan.",
        guidance="Read-only; creates nothing (no plan is made on read). has_more_weeks reports older weeks. Next: "
                 "get_autopilot_week with a week number and plan_id.",
    ),
    Endpoint(
        name="get_autopilot_week", method="GET", path="/v1/brands/{brand_id}/autopilot/weeks/{week_number}",
        toolset="autopilot", handler=get_week, request=sap.GetAutopilotWeekRequest, response=sap.AutopilotWeekOut,
        scopes=("posts:read",), title="Get Autopilot week",
        summary="Read one week of an Autopilot plan: theme, status and items (topic, review status, content item "
                "and Schedule IDs).",
        guidance="Read-only; creates nothing. plan_id is required. Unknown plan, week or a week outside the plan "
                 "is 404. Next: approve_autopilot_item or regenerate_autopilot_item for an item.",
    ),
    Endpoint(
        name="approve_autopilot_item", method="POST", path=f"{ITEM_PATH}/approve", toolset="autopilot",
        handler=approve_item, request=sap.ApproveAutopilotItemRequest, response=sap.AutopilotItemWrite, scopes=("posts:write",),
        idempotency="required", title="Approve Autopilot item",
        summary="Approve the topic of one Autopilot item; outcome approved.",
        guidance="Needs a paid plan (403 ENTITLEMENT_REQUIRED), an idempotency key, plan_id and confirm_item_id "
                 "equal to the path item ID (else 422). Queues no generation, approves no Schedule and publishes "
                 "nothing; Schedules made later from Autopilot are held for review (approve_schedule).",
    ),
    Endpoint(
        name="regenerate_autopilot_item", method="POST", path=f"{ITEM_PATH}/regenerate", toolset="autopilot",
        handler=regenerate_item, request=sap.RegenerateAutopilotItemRequest, response=sap.AutopilotItemWrite, scopes=("posts:write",),
        idempotency="required", title="Regenerate Autopilot item",
        summary="Replace the topic of one unused Autopilot item with a new one, optionally steered by guidance; "
                "outcome regenerated.",
        guidance="Needs a paid plan, an idempotency key, plan_id and confirm_item_id equal to the path. Only an "
                 "unused item (pending_review, no content item or Schedule) changes, else 409. Makes no Studio "
                 "images or videos and publishes nothing. If the result is uncertain (503), the same key cannot "
                 "start a second regeneration (409): read the week, then use a new key.",
    ),
]
