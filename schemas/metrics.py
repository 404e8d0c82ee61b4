"""The common post metrics every network's numbers are mapped onto (issue 34), in the order shown to people and
agents; watch_time_seconds is total watch time in seconds. Adapters (providers/metrics.py), tables and
responses all read this tuple."""

from __future__ import annotations

COMMON: tuple[str, ...] = ("impressions", "likes", "reposts", "replies", "saves", "link_clicks", "video_views",
                           "watch_time_seconds")
