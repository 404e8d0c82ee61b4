"""A brand's calendar: its Schedules by week or month, in the brand's time zone (`list_schedules`)."""

from __future__ import annotations

import calendar
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console, z
from server.console.web import render


async def calendar_page(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    tz = ZoneInfo(b.timezone or "UTC")
    view = "month" if request.query_params.get("view") == "month" else "week"
    try:
        day = date.fromisoformat(request.query_params.get("day", ""))
    except ValueError:
        day = c.rt.clock.now().astimezone(tz).date()
    if view == "week":
        start = day - timedelta(days=day.weekday())
        days = [start + timedelta(days=i) for i in range(7)]
        prev_day, next_day = start - timedelta(days=7), start + timedelta(days=7)
    else:
        first = day.replace(day=1)
        start = first - timedelta(days=first.weekday())
        last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
        end = last + timedelta(days=6 - last.weekday())
        days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
        prev_day = (first - timedelta(days=1)).replace(day=1)
        next_day = last + timedelta(days=1)
    lo = datetime.combine(days[0], time(0), tz)
    hi = datetime.combine(days[-1] + timedelta(days=1), time(0), tz)
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
    by_day: dict[date, list[dict[str, Any]]] = {d: [] for d in days}
    for s in items:
        local = datetime.fromisoformat(s["scheduled_at"].replace("Z", "+00:00")).astimezone(tz)
        s["local_time"] = local.strftime("%H:%M")
        by_day.setdefault(local.date(), []).append(s)
    weeks = [days[i:i + 7] for i in range(0, len(days), 7)]
    return render("calendar.html", **c.base(
        me, request, brand=b, tab="calendar", view=view, weeks=weeks, by_day=by_day, month=day.month,
        prev_day=prev_day, next_day=next_day, today=c.rt.clock.now().astimezone(tz).date(), tz=b.timezone or "UTC"))


def routes(c: Console) -> list[BaseRoute]:
    return [Route(f"{BRAND}/calendar", c.page(calendar_page), methods=["GET"])]
