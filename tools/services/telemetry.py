"""Publishing and event-delivery metrics, fed by the worker (tools/publishing, tools/events) and exported by
server/metrics.py."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

PUBLISH_OUTCOMES = Counter("socialpub_publish_outcomes", "Provider publish attempts by platform, outcome "
                           "(published | retry | failed | action_required | skipped states) and provider error "
                           "kind (none on success).", ["platform", "outcome", "error_kind"])
PROVIDER_SECONDS = Histogram("socialpub_provider_call_duration_seconds", "Provider publish call latency by "
                             "platform and error kind (none on success).", ["platform", "error_kind"],
                             buckets=(.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60))


def count_outcome(platform: str, outcome: str, error_kind: str | None) -> None:
    PUBLISH_OUTCOMES.labels(platform, outcome, error_kind or "none").inc()


def observe_provider_call(platform: str, error_kind: str | None, seconds: float) -> None:
    PROVIDER_SECONDS.labels(platform, error_kind or "none").observe(seconds)


EVENT_DELIVERIES = Counter("socialpub_event_deliveries", "Event deliveries by channel (email | webhook | mcp) and "
                           "outcome (sent | retry | failed).", ["channel", "outcome"])


def count_delivery(channel: str, outcome: str) -> None:
    EVENT_DELIVERIES.labels(channel, outcome).inc()
