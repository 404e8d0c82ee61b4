"""A brand's analytics: totals and a daily trend over a chosen period, per-platform figures, the best hours and the
top posts (`get_analytics_summary`, `list_top_posts`). Charts are SVG drawn here from numbers only (no script, no
charting library, no Node build step); every name reaches the page through the template's escaping."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from schemas.metrics import COMMON
from schemas.time import iso
from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console
from server.console.web import render

PERIODS = (7, 30, 90)
CHART_W, CHART_H = 640, 160
LEAD_ORDER = ("likes", "video_views", "impressions", "reposts", "replies", "saves", "link_clicks")


def lead_metric(totals: dict[str, int | None]) -> str:
    return next((m for m in LEAD_ORDER if totals.get(m) is not None), "likes")


def bars(groups: list[dict[str, Any]], metric: str, days: list[str]) -> list[dict[str, Any]]:
    """One bar per day of the period (0 where nothing published): x, y, width, height in the chart's units."""
    by_day = {g["key"]: g["metrics"].get(metric) or 0 for g in groups}
    top = max(by_day.values(), default=0) or 1
    width = CHART_W / max(len(days), 1)
    out = []
    for i, day in enumerate(days):
        value = by_day.get(day, 0)
        height = round(value / top * (CHART_H - 20), 1)
        out.append({"day": day, "value": value, "x": round(i * width, 1), "w": max(round(width - 2, 1), 1),
                    "h": height, "y": round(CHART_H - height, 1)})
    return out


async def analytics(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    try:
        days = int(request.query_params.get("days", "30"))
    except ValueError:
        days = 30
    days = days if days in PERIODS else 30
    now = c.rt.clock.now()
    period = {"since": iso(now - timedelta(days=days)), "until": iso(now)}
    by_platform = await c.api(me, "get_analytics_summary", brand_id=b.id, group_by="platform", **period)
    by_day = await c.api(me, "get_analytics_summary", brand_id=b.id, group_by="day", limit=100, **period)
    by_hour = await c.api(me, "get_analytics_summary", brand_id=b.id, group_by="weekday_hour", limit=100, **period)
    metric = lead_metric(by_platform["totals"])
    top = await c.api(me, "list_top_posts", brand_id=b.id, metric=metric, limit=10, **period)
    zone = by_platform["period"]["time_zone"]
    first = (now - timedelta(days=days - 1))
    local = first.astimezone(ZoneInfo(zone)).date()
    day_keys = [(local + timedelta(days=i)).isoformat() for i in range(days)]
    hours = sorted(by_hour["groups"], key=lambda g: -((g["metrics"].get(metric) or 0) / max(g["posts"], 1)))[:5]
    shown = [m for m in COMMON if by_platform["totals"].get(m) is not None]
    return render("analytics.html", **c.base(
        me, request, brand=b, tab="analytics", days=days, periods=PERIODS, metric=metric, shown=shown,
        summary=by_platform, top=top["items"], best_hours=hours, chart=bars(by_day["groups"], metric, day_keys),
        chart_w=CHART_W, chart_h=CHART_H))


def routes(c: Console) -> list[BaseRoute]:
    return [Route(f"{BRAND}/analytics", c.page(analytics), methods=["GET"])]
