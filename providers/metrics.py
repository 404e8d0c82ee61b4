"""Post metrics: what an adapter reads back about a published post, normalised to one small common set.

An adapter that can read its network's post metrics implements `post_metrics(account, publish_id) -> PostMetrics`
and declares `metrics_fields` (the common names it can fill). Every value stays under its network's own name in
`raw` too, so nothing the network said is lost in the mapping. A network without a metrics API has neither, and
the platform capabilities say so (`metrics.supported: false`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from schemas.metrics import COMMON

RAW_MAX = 40  # raw values kept per reading (a network that answers more is cut, in its own order)
NAME_MAX = 60


@dataclass(frozen=True)
class PostMetrics:
    values: dict[str, int] = field(default_factory=dict)  # common name -> value, only those the network reported
    raw: dict[str, int | float] = field(default_factory=dict)  # the network's names, verbatim
    gone: bool = False  # the network no longer has the post (deleted there): readings stop


def number(value: Any) -> int | float | None:
    """A metric value as the network sent it, if it is a finite, non-negative number (strings of digits too:
    Google's APIs send int64 as strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value) if "." in value else int(value)
        except ValueError:
            return None
    if isinstance(value, int | float) and value >= 0 and value == value and value != float("inf"):
        return value
    return None


def from_raw(raw: Mapping[str, Any], mapping: Mapping[str, str], *, scale: Mapping[str, float] | None = None
             ) -> PostMetrics:
    """Build a reading from a network's flat name -> value map; `mapping` names which network field fills which
    common name (`scale` converts units, e.g. minutes to seconds)."""
    kept: dict[str, int | float] = {}
    for name, value in raw.items():
        n = number(value)
        if n is not None and len(kept) < RAW_MAX:
            kept[str(name)[:NAME_MAX]] = n
    values: dict[str, int] = {}
    for network_name, common in mapping.items():
        if common not in COMMON:
            raise ValueError(f"{common} is not a common metric")
        n = kept.get(network_name)
        if n is not None:
            values[common] = values.get(common, 0) + round(n * (scale or {}).get(network_name, 1))
    return PostMetrics(values=values, raw=kept)


@dataclass(frozen=True)
class Support:
    """What one platform's network offers: the common names its adapter fills and the reference it follows."""

    fields: tuple[str, ...]
    source: str
    note: str = ""


# THE table of which platforms read post metrics (the adapters' `metrics_fields` and the platform capabilities
# read it; tests/networks/test_metrics_requests.py checks each entry against its adapter's `post_metrics`). A
# platform missing here has no metrics in socialpub: its network offers none for what we post (Discord webhooks,
# Telegram bots; Google Business Profile, NOT_OFFERED below).
SUPPORT: dict[str, Support] = {
    "x": Support(("impressions", "likes", "reposts", "replies", "saves"),
                 "https://docs.x.com/x-api/fundamentals/metrics",
                 "public_metrics of GET /2/tweets/{id}: impression_count, like_count, repost_count, reply_count, "
                 "bookmark_count (quote_count kept as X's own name)."),
    "mastodon": Support(("likes", "reposts", "replies"),
                        "https://docs.joinmastodon.org/entities/Status/",
                        "favourites_count, reblogs_count and replies_count of GET /api/v1/statuses/:id."),
    "youtube": Support(("likes", "replies", "video_views"),
                       "https://developers.google.com/youtube/v3/docs/videos#statistics",
                       "statistics of videos.list: viewCount, likeCount, commentCount."),
    "pinterest": Support(("impressions", "likes", "replies", "saves", "link_clicks"),
                         "https://developers.pinterest.com/docs/api/v5/pins-analytics",
                         "lifetime_metrics of GET /v5/pins/{pin_id}/analytics: IMPRESSION, TOTAL_REACTIONS, "
                         "TOTAL_COMMENTS, SAVE, OUTBOUND_CLICK (PIN_CLICK kept as Pinterest's own name); Pinterest "
                         "answers for at most the last 90 days."),
    "linkedin": Support(("impressions", "likes", "reposts", "replies", "link_clicks"),
                        "https://learn.microsoft.com/en-us/linkedin/marketing/community-management/members/"
                        "post-statistics",
                        "A member's post: GET /rest/memberCreatorPostAnalytics?q=entity, one queryType a call "
                        "(IMPRESSION, REACTION, RESHARE, COMMENT; MEMBERS_REACHED kept as LinkedIn's own name), "
                        "r_member_postAnalytics. An organization's post: totalShareStatistics of GET "
                        "/rest/organizationalEntityShareStatistics (https://learn.microsoft.com/en-us/linkedin/"
                        "marketing/community-management/organizations/share-statistics): impressionCount, "
                        "likeCount, shareCount, commentCount, clickCount, rw_organization_admin. Link clicks are "
                        "an organization's only."),
    "tiktok": Support(("likes", "reposts", "replies", "video_views"),
                      "https://developers.tiktok.com/doc/tiktok-api-v2-video-query",
                      "POST /v2/video/query/ by the post's video ID (video.list): view_count, like_count, "
                      "share_count, comment_count. A post TikTok has not made public (moderation, SELF_ONLY) has "
                      "no video ID yet: that reading finds nothing."),
    "instagram": Support(("impressions", "likes", "reposts", "replies", "saves", "watch_time_seconds"),
                         "https://developers.facebook.com/docs/instagram-platform/reference/instagram-media/insights",
                         "GET /{ig-media-id}/insights with the metrics of the media's product type: views, likes, "
                         "comments (Stories: replies), shares, saved, and for Reels ig_reels_video_view_total_time "
                         "(reach, total_interactions and ig_reels_avg_watch_time kept as Instagram's own names); "
                         "instagram_manage_insights. Story metrics last 24 hours."),
    "facebook": Support(("impressions", "likes", "reposts", "replies"),
                        "https://developers.facebook.com/docs/graph-api/reference/page-post/insights/",
                        "post_media_view of GET /{page-post-id}/insights (read_insights), and the reactions and "
                        "comments summaries and shares of the Page post "
                        "(https://developers.facebook.com/docs/graph-api/reference/post/)."),
    "threads": Support(("impressions", "likes", "reposts", "replies"),
                       "https://developers.facebook.com/docs/threads/insights",
                       "GET /v1.0/{threads-media-id}/insights: views, likes, replies, reposts (quotes and shares "
                       "kept as Threads' own names); threads_manage_insights."),
    "bluesky": Support(("likes", "reposts", "replies", "saves"),
                       "https://docs.bsky.app/docs/api/app-bsky-feed-get-posts",
                       "likeCount, repostCount, replyCount and bookmarkCount of the postView app.bsky.feed.getPosts "
                       "answers (quoteCount kept as Bluesky's own name), asked of the account's PDS, which proxies "
                       "it to the Bluesky AppView."),
    "tumblr": Support(("likes", "reposts"),
                      "https://github.com/tumblr/docs/blob/master/api.md#notes---get-notes-for-a-specific-post",
                      "total_likes and total_reblogs of GET /v2/blog/{blog}/notes?id=…&mode=conversation; "
                      "total_notes (every kind of note together) kept as Tumblr's own name."),
}

# Platforms whose network has an API but no per-post metrics for what socialpub posts, each with why and where
# that is said (the platform capabilities show the reason with `metrics.supported: false`).
NOT_OFFERED: dict[str, Support] = {
    "google_business": Support((), "https://developers.google.com/my-business/content/performance/change-log",
                               "Google removed per-post insights (v4 accounts.locations.localPosts.reportInsights) "
                               "with the Business Profile Performance API, which reports per location only "
                               "(locations.fetchMultiDailyMetricsTimeSeries); no current API reports a local "
                               "post's views or clicks."),
}


def support(platform: str) -> Support | None:
    return SUPPORT.get(platform)


def not_offered(platform: str) -> Support | None:
    """Why a platform reads no metrics, when its network has an API that could have offered them."""
    return NOT_OFFERED.get(platform)
