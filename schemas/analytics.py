"""Requests and responses of post metrics (issue 34): one publication's readings, a brand summary, top posts and
the short performance digest agents read before planning. Metric values are integers; a metric the network does
not report is null (never 0)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from schemas.envelope import Link
from schemas.requests import PathParam, QueryParam, RequestModel
from schemas.schedules import _timestamp

PERIOD_MAX_DAYS = 366
PERIOD_DEFAULT_DAYS = 30
GROUPS_MAX = 100
GROUPS_DEFAULT = 20
TOP_MAX = 50
TOP_DEFAULT = 10
HISTORY_MAX = 50

BrandId = Annotated[str, PathParam("Brand ID, from get_context.")]
PublicationId = Annotated[str, PathParam("Publication ID (pub_...), from list_history or list_publications.")]
# The common set as a type (schemas/metrics.COMMON; tests/analytics/test_summary.py holds the two equal).
Metric = Literal["impressions", "likes", "reposts", "replies", "saves", "link_clicks", "video_views",
                 "watch_time_seconds"]
CollectionStatus = Literal["collecting", "done", "gone", "permission_missing", "unsupported", "not_published"]
GroupBy = Literal["platform", "label", "weekday_hour", "day", "content_item"]

_SINCE = QueryParam(None, f"Period start, inclusive: posts published at or after it (ISO 8601 with offset or Z). "
                          f"Default: {PERIOD_DEFAULT_DAYS} days before `until`.", max_length=64)
_UNTIL = QueryParam(None, f"Period end, exclusive (default now); at most {PERIOD_MAX_DAYS} days after `since`.",
                    max_length=64)
OptionalTimestamp = Annotated[str | None, AfterValidator(lambda v: v if v is None else _timestamp(v))]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Metrics(_Out):
    """The common metrics (schemas/metrics.COMMON, in its order; a test holds the two equal); null where the network
    does not report one."""

    impressions: int | None = None
    likes: int | None = None
    reposts: int | None = None
    replies: int | None = None
    saves: int | None = None
    link_clicks: int | None = None
    video_views: int | None = None
    watch_time_seconds: int | None = None


# -- requests ---------------------------------------------------------------------------------------------------

class PublicationMetricsRequest(RequestModel):
    brand_id: BrandId
    publication_id: PublicationId


class SummaryRequest(RequestModel):
    brand_id: BrandId
    since: OptionalTimestamp = _SINCE
    until: OptionalTimestamp = _UNTIL
    group_by: GroupBy = QueryParam("platform", "platform (default), label, weekday_hour or day (both in the brand's "
                                               "time zone), or content_item.")
    limit: int = QueryParam(GROUPS_DEFAULT, f"Groups per page, 1 to {GROUPS_MAX}.", ge=1, le=GROUPS_MAX)
    cursor: str | None = QueryParam(None, "next_cursor of the previous page (same filters).", max_length=200)


class TopPostsRequest(RequestModel):
    brand_id: BrandId
    since: OptionalTimestamp = _SINCE
    until: OptionalTimestamp = _UNTIL
    metric: Metric = QueryParam("likes", "The metric to rank by (default likes).")
    platform: str | None = QueryParam(None, "Only posts on this platform key.", max_length=40)
    limit: int = QueryParam(TOP_DEFAULT, f"Posts, 1 to {TOP_MAX}.", ge=1, le=TOP_MAX)


class PerformanceRequest(RequestModel):
    brand_id: BrandId


# -- responses --------------------------------------------------------------------------------------------------

class Collection(_Out):
    status: CollectionStatus = Field(description="collecting (readings continue), done (the last reading of the "
                                                 "cadence was taken), gone (deleted on the network), "
                                                 "permission_missing (the account did not grant the permission to "
                                                 "read metrics: reconnect it), unsupported (the network offers no "
                                                 "post metrics), not_published.")
    readings: int
    read_at: str | None = Field(description="When the latest reading was taken.")
    next_reading_at: str | None


class Reading(_Out):
    taken_at: str
    metrics: Metrics
    network_metrics: dict[str, int | float] = Field(description="The network's own names and values, verbatim.")


class PublicationMetricsLinks(_Out):
    self: Link
    history: Link


class PublicationMetrics(_Out):
    publication_id: str
    platform: str
    integration_id: str
    post_id: str = Field(description="The content item.")
    published_at: str | None
    permalink_url: str | None
    collection: Collection
    latest: Metrics | None
    readings: list[Reading] = Field(max_length=HISTORY_MAX, description="Every reading, oldest first.")
    links: PublicationMetricsLinks


class Period(_Out):
    since: str
    until: str
    time_zone: str = Field(description="The brand's time zone (weekday_hour groups are in it).")


class Group(_Out):
    key: str = Field(description="The platform key, label ID, content item ID, weekday-hour as `mon-09`, or day as "
                                 "`2026-11-28`.")
    name: str | None = Field(description="The label's or content item's name; null for platforms and hours.")
    posts: int = Field(description="Published posts in the group that have at least one reading.")
    metrics: Metrics


class Summary(_Out):
    period: Period
    group_by: GroupBy
    posts: int = Field(description="Published posts in the period with at least one reading.")
    totals: Metrics
    groups: list[Group] = Field(max_length=GROUPS_MAX)
    next_cursor: str | None


class TopPost(_Out):
    publication_id: str
    platform: str
    integration_id: str
    post_id: str
    post_name: str | None
    published_at: str | None
    permalink_url: str | None
    metrics: Metrics
    links: PublicationMetricsLinks


class TopPosts(_Out):
    period: Period
    metric: str
    items: list[TopPost] = Field(max_length=TOP_MAX)


class Performance(_Out):
    brand_id: str
    period: Period
    posts: int
    text: str = Field(description="A few sentences on what worked recently, for planning.")
    by_platform: list[Group] = Field(max_length=GROUPS_MAX)
    top_posts: list[TopPost] = Field(max_length=5)
