"""Post metrics over REST and MCP (toolset `analytics`, scope `analytics:read`). Read-only: nothing here calls a
network; readings are taken by the collection tick (tools/analytics/collect.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlmodel import col, select

from providers.metrics import support
from schemas import analytics as out
from schemas.errors import ApiError, issue
from schemas.metrics import COMMON
from schemas.time import iso, parse_timestamp
from storage.tables.analytics import MetricSnapshot, PostMetricsState
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication, PublishTarget
from tools.analytics import summary
from tools.endpoint import Call, Endpoint
from tools.links import link
from tools.services.redaction import safe_permalink

SCOPES = ("analytics:read",)
PERFORMANCE_DAYS = 30


def _zone(call: Call) -> ZoneInfo:
    try:
        return ZoneInfo(call.brand.timezone if call.brand else "UTC")
    except (KeyError, ValueError):
        return ZoneInfo("UTC")


def _period(call: Call, since: str | None, until: str | None, default_days: int = out.PERIOD_DEFAULT_DAYS
            ) -> tuple[datetime, datetime]:
    end = parse_timestamp(until) if until else call.now
    start = parse_timestamp(since) if since else end - timedelta(days=default_days)
    if end <= start:
        raise ApiError("INVALID_QUERY", "The period is not valid.",
                       issues=[issue("$.until", "WINDOW_ORDER", "until must be after since.")])
    if end - start > timedelta(days=out.PERIOD_MAX_DAYS):
        raise ApiError("INVALID_QUERY", "The period is not valid.",
                       issues=[issue("$.until", "WINDOW_TOO_LONG", f"until may be at most {out.PERIOD_MAX_DAYS} "
                                                                   "days after since; read a longer span in parts.")])
    return start, end


def _period_out(call: Call, start: datetime, end: datetime) -> dict[str, Any]:
    return {"since": iso(start), "until": iso(end), "time_zone": str(_zone(call))}


def _metrics(row: Any) -> dict[str, int | None]:
    return {name: getattr(row, name) for name in COMMON}


def _pub_links(brand_id: str, publication_id: str) -> dict[str, Any]:
    return {"self": link("get_publication_metrics", brand_id=brand_id, publication_id=publication_id),
            "history": link("list_history", brand_id=brand_id)}


async def get_publication_metrics(call: Call, req: out.PublicationMetricsRequest) -> out.PublicationMetrics:
    p = (await call.session.exec(select(Publication).where(Publication.id == req.publication_id,
                                                           Publication.brand_id == call.brand_id))).first()
    if p is None:
        raise ApiError("NOT_FOUND", "No publication of this brand has this ID, or it is not visible to this API key.")
    state = await call.session.get(PostMetricsState, p.id)
    snapshots: Sequence[MetricSnapshot] = []
    if state is not None:
        snapshots = (await call.session.exec(
            select(MetricSnapshot).where(MetricSnapshot.publication_id == p.id)
            .order_by(col(MetricSnapshot.step)).limit(out.HISTORY_MAX))).all()
        status = state.status
    elif p.status != "published":
        status = "not_published"
    else:
        status = "unsupported" if support(p.platform) is None else "collecting"
    target = await call.session.get(PublishTarget, p.target_id)
    removed = target is not None and target.cleanup_status == "done"
    return out.PublicationMetrics.model_validate({
        "publication_id": p.id, "platform": p.platform, "integration_id": p.integration_id, "post_id": p.post_id,
        "published_at": iso(p.published_at),
        "permalink_url": safe_permalink(p.permalink_url) if p.status == "published" and not removed else None,
        "collection": {"status": status, "readings": state.step if state else 0,
                       "read_at": iso(state.read_at) if state else None,
                       "next_reading_at": iso(state.next_due_at) if state and status == "collecting" else None},
        "latest": _metrics(state) if state is not None and state.read_at is not None else None,
        "readings": [{"taken_at": iso(s.taken_at), "metrics": _metrics(s), "network_metrics": dict(s.raw or {})}
                     for s in snapshots],
        "links": _pub_links(call.brand_id, p.id),
    })


async def get_analytics_summary(call: Call, req: out.SummaryRequest) -> out.Summary:
    start, end = _period(call, req.since, req.until)
    found = await summary.rows(call.session, call.brand_id, start, end)
    totals, groups, names = await summary.grouped(call.session, call.brand_id, found, req.group_by, _zone(call))
    keys = sorted(k for k in groups if req.cursor is None or k > req.cursor)
    page, more = keys[:req.limit], len(keys) > req.limit
    return out.Summary.model_validate({
        "period": _period_out(call, start, end), "group_by": req.group_by, "posts": totals.posts,
        "totals": totals.values,
        "groups": [{"key": k, "name": names.get(k), "posts": groups[k].posts, "metrics": groups[k].values}
                   for k in page],
        "next_cursor": page[-1] if more else None,
    })


async def _top(call: Call, found: Sequence[Any], metric: str, limit: int) -> list[dict[str, Any]]:
    best = summary.ranked(found, metric, limit)
    ids = [r.publication_id for r in best]
    pubs = {p.id: p for p in (await call.session.exec(
        select(Publication).where(col(Publication.id).in_(ids), Publication.brand_id == call.brand_id))).all()} \
        if ids else {}
    names = await summary.names_of(call.session, ContentItem, call.brand_id, [r.post_id for r in best])
    items = []
    for r in best:
        p = pubs.get(r.publication_id)
        items.append({"publication_id": r.publication_id, "platform": r.platform, "integration_id": r.integration_id,
                      "post_id": r.post_id, "post_name": (p.post_name if p else None) or names.get(r.post_id),
                      "published_at": iso(r.published_at),
                      "permalink_url": safe_permalink(p.permalink_url) if p else None,
                      "metrics": _metrics(r), "links": _pub_links(call.brand_id, r.publication_id)})
    return items


async def list_top_posts(call: Call, req: out.TopPostsRequest) -> out.TopPosts:
    start, end = _period(call, req.since, req.until)
    found = await summary.rows(call.session, call.brand_id, start, end, platform=req.platform)
    return out.TopPosts.model_validate({"period": _period_out(call, start, end), "metric": req.metric,
                                        "items": await _top(call, found, req.metric, req.limit)})


def _lead(totals: dict[str, int | None]) -> str:
    """The metric that best says how posts did: engagement where reported, else reach."""
    for name in ("likes", "video_views", "impressions", "reposts", "replies", "saves"):
        if totals.get(name) is not None:
            return name
    return "likes"


async def get_brand_performance(call: Call, req: out.PerformanceRequest) -> out.Performance:
    start, end = _period(call, None, None, PERFORMANCE_DAYS)
    zone = _zone(call)
    found = await summary.rows(call.session, call.brand_id, start, end)
    totals, by_platform, _ = await summary.grouped(call.session, call.brand_id, found, "platform", zone)
    _, by_hour, _ = await summary.grouped(call.session, call.brand_id, found, "weekday_hour", zone)
    lead = _lead(totals.values)
    top = await _top(call, found, lead, 3)
    if not found:
        text = (f"No published post of this brand has metrics from the last {PERFORMANCE_DAYS} days yet. Metrics "
                "are read 1 hour, 6 hours, 1 day, 3 days, 7 days and 30 days after a post publishes, on networks "
                "that offer them.")
    else:
        def per_post(t: summary.Totals) -> float:
            return (t.values.get(lead) or 0) / max(t.posts, 1)

        best_platform = max(by_platform, key=lambda k: per_post(by_platform[k]))
        best_hour = max(by_hour, key=lambda k: per_post(by_hour[k]))
        lines = [f"Last {PERFORMANCE_DAYS} days: {totals.posts} posts with metrics, {totals.values.get(lead) or 0} "
                 f"{lead.replace('_', ' ')} in all.",
                 f"Most {lead.replace('_', ' ')} per post on {best_platform} "
                 f"({per_post(by_platform[best_platform]):.0f} per post over {by_platform[best_platform].posts}).",
                 f"Best publishing slot: {best_hour.replace('-', ' ')}:00 ({zone}), "
                 f"{per_post(by_hour[best_hour]):.0f} {lead.replace('_', ' ')} per post."]
        if top:
            names = "; ".join(f"\"{(t['post_name'] or t['post_id'])[:80]}\" on {t['platform']} "
                              f"({t['metrics'][lead]} {lead.replace('_', ' ')})" for t in top)
            lines.append(f"Top posts: {names}.")
        text = " ".join(lines)
    return out.Performance.model_validate({
        "brand_id": call.brand_id, "period": _period_out(call, start, end), "posts": totals.posts, "text": text,
        "by_platform": [{"key": k, "name": None, "posts": v.posts, "metrics": v.values}
                        for k, v in sorted(by_platform.items())],
        "top_posts": top})


_GUIDE = ("Read-only; calls no network. Metrics are read by the service 1 h, 6 h, 24 h, 3 d, 7 d and 30 d after "
          "publishing, on networks that offer them (platform capabilities: metrics).")

ENDPOINTS = [
    Endpoint(
        name="get_publication_metrics", method="GET", path="/v1/brands/{brand_id}/publications/{publication_id}/metrics",
        toolset="analytics", handler=get_publication_metrics, request=out.PublicationMetricsRequest,
        response=out.PublicationMetrics, scopes=SCOPES, title="Get publication metrics", brand_row=False,
        summary="Read one published post's metrics: the latest figures, every reading, and whether readings go on.",
        guidance=_GUIDE + " collection.status says why there are none (unsupported, permission_missing, gone)."),
    Endpoint(
        name="get_analytics_summary", method="GET", path="/v1/brands/{brand_id}/analytics/summary",
        toolset="analytics", handler=get_analytics_summary, request=out.SummaryRequest, response=out.Summary,
        scopes=SCOPES, title="Get analytics summary",
        summary="Sum a brand's post metrics over a period, grouped by platform, label, weekday_hour, day or "
                "content_item.",
        guidance=_GUIDE + " Groups are sorted by key and paged with next_cursor."),
    Endpoint(
        name="list_top_posts", method="GET", path="/v1/brands/{brand_id}/analytics/top-posts",
        toolset="analytics", handler=list_top_posts, request=out.TopPostsRequest, response=out.TopPosts,
        scopes=SCOPES, title="List top posts",
        summary="List a brand's best-performing posts of a period by one metric, with links to each.",
        guidance=_GUIDE),
    Endpoint(
        name="get_brand_performance", method="GET", path="/v1/brands/{brand_id}/analytics/performance",
        toolset="analytics", handler=get_brand_performance, request=out.PerformanceRequest, response=out.Performance,
        scopes=SCOPES, title="Get brand performance",
        summary="Read a short digest of what worked for a brand over the last 30 days, for planning.",
        guidance=_GUIDE + " Also the resource socialpub://brands/{brand_id}/performance."),
]
