"""A brand's calendar: its Schedules by week, month or as a list, in the brand's time zone (`list_schedules`),
each with its time, post name, platforms and state; and moving one to another day or time
(`reschedule_schedule`, with its rules and authority), with an undo that moves it back the same way.

Moving is a plain form (the list view has one per post); static/calendar.js adds dragging an entry to another
day, which fills and submits the same form.
"""

from __future__ import annotations

import calendar
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from schemas.platforms import PLATFORMS
from schemas.scopes import PUBLISH_SCOPE
from server.console import compose_form as cf
from server.console import web
from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console, z
from server.console.web import ConsoleError, redirect, render
from storage.tables.brands import Brand

VIEWS = ("week", "month", "list")
LIST_DAYS = 31
MAX_NAMES = 100  # post names read per page (one get_content_item each); later ones show as "Post"
MOVABLE = ("action_required", "scheduled")  # no run has started: the reschedule route may move them
# The legend: state class, label, what it means. `state_of` maps a Schedule onto these.
STATES = (
    ("scheduled", "Scheduled", "approved; publishes at its time"),
    ("held", "Held", "waiting for review, or blocked until fixed"),
    ("publishing", "Publishing", "running now"),
    ("published", "Published", "out on every account"),
    ("partly", "Partly published", "out on some accounts, failed on others"),
    ("failed", "Failed", "did not publish"),
    ("cancelled", "Cancelled", "will not publish"),
)


def state_of(s: dict[str, Any]) -> str:
    status: str = s["status"]
    return {"action_required": "held", "partially_published": "partly"}.get(status, status)


def _day(value: str | None, fallback: date) -> date:
    try:
        return date.fromisoformat((value or "")[:10])
    except ValueError:
        return fallback


def window(view: str, day: date) -> tuple[list[date], date, date]:
    """The days a view shows, and the days its Previous and Next links go to."""
    if view == "list":
        return [day + timedelta(days=i) for i in range(LIST_DAYS)], day - timedelta(days=LIST_DAYS), \
            day + timedelta(days=LIST_DAYS)
    if view == "week":
        start = day - timedelta(days=day.weekday())
        return [start + timedelta(days=i) for i in range(7)], start - timedelta(days=7), start + timedelta(days=7)
    first = day.replace(day=1)
    start = first - timedelta(days=first.weekday())
    last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
    end = last + timedelta(days=6 - last.weekday())
    return ([start + timedelta(days=i) for i in range((end - start).days + 1)],
            (first - timedelta(days=1)).replace(day=1), last + timedelta(days=1))


async def _schedules(c: Console, me: SignedIn, b: Brand, lo: datetime, hi: datetime) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    for _ in range(10):  # at most 500 Schedules on one page
        args: dict[str, Any] = {"brand_id": b.id, "from": z(lo), "to": z(hi), "limit": 50}
        if cursor:
            args["cursor"] = cursor
        data = await c.api(me, "list_schedules", **args)
        items.extend(data["items"])
        cursor = data.get("next_cursor")
        if not data.get("has_more") or not cursor:
            break
    return items


async def _names(c: Console, me: SignedIn, b: Brand, items: list[dict[str, Any]]) -> dict[str, str]:
    names: dict[str, str] = {}
    if "posts:read" not in me.caller.scopes:
        return names
    for item_id in list(dict.fromkeys(s["content_item_id"] for s in items))[:MAX_NAMES]:
        try:
            found = await c.api(me, "get_content_item", brand_id=b.id, content_item_id=item_id)
            names[item_id] = found["content_item"]["name"]
        except ConsoleError:
            pass
    return names


async def render_calendar(c: Console, request: Request, me: SignedIn, *, view: str, day: date,
                          error: str | None = None, status: int = 200) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    tz = ZoneInfo(b.timezone or "UTC")
    today = c.rt.clock.now().astimezone(tz).date()
    days, prev_day, next_day = window(view, day)
    lo = datetime.combine(days[0], time(0), tz)
    hi = datetime.combine(days[-1] + timedelta(days=1), time(0), tz)
    items = await _schedules(c, me, b, lo, hi)
    names = await _names(c, me, b, items)
    platforms: dict[str, str] = {}
    if "integrations:read" in me.caller.scopes:
        targets = await c.api(me, "list_targets", brand_id=b.id)
        platforms = {t["integration_id"]: t["platform"] for t in targets["targets"] if t.get("integration_id")}
    order = {p.key: i for i, p in enumerate(PLATFORMS)}
    can_move = {"schedule:write", PUBLISH_SCOPE} <= me.caller.scopes
    by_day: dict[date, list[dict[str, Any]]] = {d: [] for d in days}
    for s in items:
        local = datetime.fromisoformat(s["scheduled_at"].replace("Z", "+00:00")).astimezone(tz)
        s["local_time"] = local.strftime("%H:%M")
        s["local_input"] = cf.local_input(local, tz)
        s["local_day"] = local.date()
        s["name"] = names.get(s["content_item_id"], "Post")
        s["platforms"] = sorted({platforms.get(i, "") for i in s["integration_ids"]} - {""},
                                key=lambda k: order.get(k, 99))
        s["state"] = state_of(s)
        s["movable"] = can_move and s["status"] in MOVABLE
        by_day.setdefault(local.date(), []).append(s)
    undo = None
    undo_id, was = request.query_params.get("undo"), request.query_params.get("was")
    if undo_id and was and request.query_params.get("notice") == "rescheduled":
        undo = {"schedule_id": undo_id[:64], "was": was[:32]}
    return render("calendar.html", status, **c.base(
        me, request, brand=b, tab="calendar", view=view, weeks=[days[i:i + 7] for i in range(0, len(days), 7)],
        days=days, by_day=by_day, items=sorted(items, key=lambda s: s["scheduled_at"]), month=day.month, day=day,
        prev_day=prev_day, next_day=next_day, today=today, tz=b.timezone or "UTC", states=STATES, cf=cf,
        can_move=can_move, undo=undo, error=error, idem=web.new_idempotency_key()))


async def calendar_page(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    view = request.query_params.get("view")
    today = c.rt.clock.now().astimezone(ZoneInfo(b.timezone or "UTC")).date()
    return await render_calendar(c, request, me, view=view if view in VIEWS else "week",
                                 day=_day(request.query_params.get("day"), today))


async def reschedule(c: Console, request: Request, me: SignedIn) -> Response:
    """Move a Schedule: to `scheduled_at` (a local date and time), or to `day` at its current time (a drag).
    Then back to the calendar, with an undo that moves it back to where it was."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    tz = ZoneInfo(b.timezone or "UTC")
    form = request.state.form
    sid = request.path_params["schedule_id"][:64]
    view = cf.text(form, "view", 10)
    view = view if view in VIEWS else "week"
    back_day = _day(cf.text(form, "back_day", 10), c.rt.clock.now().astimezone(tz).date())
    try:
        s = await c.api(me, "get_schedule", brand_id=b.id, schedule_id=sid)
        old = datetime.fromisoformat(s["scheduled_at"].replace("Z", "+00:00")).astimezone(tz)
        target_day = cf.text(form, "day", 10).strip()
        if target_day:
            when = z(datetime.combine(_day(target_day, old.date()), old.time(), tz))
        else:
            when = cf.utc_of_local(cf.text(form, "scheduled_at", 32), tz)
        if when is None:
            raise ConsoleError("Give the new date and time.", 422)
        idem = cf.text(form, "idempotency_key", 200).strip() or web.new_idempotency_key()
        await c.api(me, "reschedule_schedule", idempotency_key=idem, brand_id=b.id, schedule_id=sid,
                    confirm_schedule_id=sid, scheduled_at=when)
    except ConsoleError as exc:
        return await render_calendar(c, request, me, view=view, day=back_day, error=exc.message, status=exc.status)
    notice = "undone" if cf.text(form, "undo", 1) == "1" else "rescheduled"
    query = {"view": view, "day": back_day.isoformat(), "notice": notice}
    if notice == "rescheduled":
        query.update(undo=sid, was=cf.local_input(old, tz))
    return redirect(f"/brands/{b.id}/calendar?{urlencode(query)}")


def routes(c: Console) -> list[BaseRoute]:
    return [
        Route(f"{BRAND}/calendar", c.page(calendar_page), methods=["GET"]),
        Route(f"{BRAND}/schedules/{{schedule_id:str}}/reschedule", c.page(reschedule), methods=["POST"]),
    ]
