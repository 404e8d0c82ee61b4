"""Post metrics (issue 34): per published post, where its readings stand and its latest figures; and every
reading as a snapshot, so growth can be charted.

`post_metrics` has one row per publication that can be read (its network offers metrics): the collection tick
finds due rows through `ix_post_metrics_due (status, next_due_at)`, soonest first and bounded, so its cost does
not grow with the number of posts; summaries read a brand's rows through `ix_post_metrics_brand (brand_id,
published_at)`, so a brand's summary costs what its own posts cost, whatever other brands have.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables._base import Stamped, json_field, utc_field


class CommonMetrics(SQLModel):
    """The columns of schemas/metrics.COMMON, one per common metric, shared by the latest figures and every
    snapshot (tests/analytics/test_tables.py holds the two names lists equal)."""

    impressions: int | None = None
    likes: int | None = None
    reposts: int | None = None
    replies: int | None = None
    saves: int | None = None
    link_clicks: int | None = None
    video_views: int | None = None
    watch_time_seconds: int | None = None


class PostMetricsState(CommonMetrics, Stamped, table=True):
    __tablename__ = "post_metrics"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_post_metrics_due", "status", "next_due_at"),
        Index("ix_post_metrics_brand", "brand_id", "published_at"),
    )

    publication_id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(max_length=40)
    brand_id: str = Field(max_length=40)
    integration_id: str = Field(max_length=40, index=True)
    platform: str = Field(max_length=40)
    post_id: str = Field(max_length=40)  # the content item
    publish_id: str = Field(max_length=200)
    published_at: datetime = utc_field()
    # collecting | done (the last reading of the cadence was taken) | gone (deleted on the network)
    # | permission_missing (the account did not grant the insights permission) | unsupported
    status: str = Field(default="collecting", max_length=24)
    step: int = 0  # readings taken so far (index into tools/analytics/cadence.STEPS)
    next_due_at: datetime | None = utc_field(nullable=True)
    read_at: datetime | None = utc_field(nullable=True)  # the latest reading
    failures: int = 0  # failed reads in a row (rate limits, outages); reset by a reading


class MetricSnapshot(CommonMetrics, Stamped, table=True):
    """One reading. Unique per (publication, step): a reading taken twice (two workers, a retry after a crash)
    is stored once."""

    __tablename__ = "post_metric_snapshots"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("publication_id", "step", name="uq_post_metric_snapshots_step"),)

    id: str = Field(primary_key=True, max_length=40)
    publication_id: str = Field(max_length=40)
    brand_id: str = Field(max_length=40)
    step: int
    taken_at: datetime = utc_field()
    raw: dict | None = json_field()  # the network's own names and values, verbatim (bounded: providers/metrics)
