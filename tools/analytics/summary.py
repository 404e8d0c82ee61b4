"""Aggregates over a brand's post metrics: totals, groups and top posts over a period.

Every query starts from `ix_post_metrics_brand (brand_id, published_at)`, so a summary reads one brand's posts
of the period and nothing of other brands' (bench/analytics_summary.py prints the ratio). Only posts with at
least one reading count; a metric no post of a group reported stays null rather than 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlmodel import col, select

from schemas.metrics import COMMON
from storage.tables.analytics import PostMetricsState
from storage.tables.content import ContentItem, ContentItemLabel
from storage.tables.library import Label

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
IN_CHUNK = 500  # IDs per IN list (SQLite's parameter limit is far above; PostgreSQL plans stay small)


@dataclass
class Totals:
    posts: int = 0
    values: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(COMMON))

    def add(self, row: Any) -> None:
        self.posts += 1
        for name in COMMON:
            value = getattr(row, name)
            if value is not None:
                self.values[name] = (self.values[name] or 0) + value


def columns() -> tuple[Any, ...]:
    c = PostMetricsState
    return (c.publication_id, c.platform, c.integration_id, c.post_id, c.published_at,
            *(getattr(c, name) for name in COMMON))


async def rows(session: Any, brand_id: str, since: datetime, until: datetime, *,
               platform: str | None = None) -> Sequence[Any]:
    """The brand's posts published in [since, until) that have at least one reading."""
    q = (select(*columns())
         .where(PostMetricsState.brand_id == brand_id, PostMetricsState.published_at >= since,
                PostMetricsState.published_at < until, col(PostMetricsState.read_at).is_not(None)))
    if platform is not None:
        q = q.where(PostMetricsState.platform == platform)
    return (await session.exec(q)).all()


def chunks(ids: Sequence[str]) -> Iterable[list[str]]:
    for i in range(0, len(ids), IN_CHUNK):
        yield list(ids[i:i + IN_CHUNK])


async def labels_of(session: Any, brand_id: str, post_ids: Sequence[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in chunks(sorted(set(post_ids))):
        found = await session.exec(select(ContentItemLabel.content_item_id, ContentItemLabel.label_id)
                                   .where(ContentItemLabel.brand_id == brand_id,
                                          col(ContentItemLabel.content_item_id).in_(part)))
        for item_id, label_id in found.all():
            out.setdefault(item_id, []).append(label_id)
    return out


async def names_of(session: Any, model: Any, brand_id: str, ids: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in chunks(sorted(set(ids))):
        found = await session.exec(select(model.id, model.name).where(model.brand_id == brand_id,
                                                                      col(model.id).in_(part)))
        out.update(dict(found.all()))
    return out


def weekday_hour(when: datetime, zone: ZoneInfo) -> str:
    local = when.astimezone(zone)
    return f"{WEEKDAYS[local.weekday()]}-{local.hour:02d}"


async def grouped(session: Any, brand_id: str, found: Sequence[Any], group_by: str, zone: ZoneInfo
                  ) -> tuple[Totals, dict[str, Totals], dict[str, str]]:
    """Totals, groups by key and the groups' names."""
    totals = Totals()
    groups: dict[str, Totals] = {}
    labels: dict[str, list[str]] = {}
    if group_by == "label":
        labels = await labels_of(session, brand_id, [r.post_id for r in found])
    for row in found:
        totals.add(row)
        if group_by == "platform":
            keys = [row.platform]
        elif group_by == "content_item":
            keys = [row.post_id]
        elif group_by == "weekday_hour":
            keys = [weekday_hour(row.published_at, zone)]
        elif group_by == "day":
            keys = [row.published_at.astimezone(zone).date().isoformat()]
        else:
            keys = labels.get(row.post_id, [])
        for key in keys:
            groups.setdefault(key, Totals()).add(row)
    names: dict[str, str] = {}
    if group_by == "label":
        names = await names_of(session, Label, brand_id, list(groups))
    elif group_by == "content_item":
        names = await names_of(session, ContentItem, brand_id, list(groups))
    return totals, groups, names


def ranked(found: Sequence[Any], metric: str, limit: int) -> list[Any]:
    """The posts with the highest value of `metric` (posts without it are left out), newest first on ties."""
    having = [r for r in found if getattr(r, metric) is not None]
    having.sort(key=lambda r: (getattr(r, metric), r.published_at, r.publication_id), reverse=True)
    return having[:limit]


PERFORMING_DAYS = 30


async def best_post_names(session: Any, brand_id: str, now: datetime, limit: int = 3) -> tuple[str, ...]:
    """The analytics area's service to planning (Autopilot): names of the brand's best posts of the last 30 days
    by likes (or the first metric its networks report), best first; empty without readings."""
    found = await rows(session, brand_id, now - timedelta(days=PERFORMING_DAYS), now)
    if not found:
        return ()
    lead = next((m for m in ("likes", "video_views", "impressions", "reposts")
                 if any(getattr(r, m) is not None for r in found)), "likes")
    best = ranked(found, lead, limit)
    names = await names_of(session, ContentItem, brand_id, [r.post_id for r in best])
    return tuple(names[r.post_id] for r in best if names.get(r.post_id))
