"""THE list of API areas: every endpoint, worker job and tick, content-usage probe and demo seeder is read from
here, nowhere else (no package scans, no registration on import). An area module declares `ENDPOINTS` (and, when
it has them, `JOBS` / `TICKS`); adding a module means adding it below. tests/test_areas.py fails when a module
under tools/ declares endpoints, jobs or ticks that this list does not name.

Mounts (non-catalogue HTTP routes) and CLI commands belong to the server layer: server/mounts/__init__.py and
server/commands/__init__.py list them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from tools import bio, brands, community, history, ideas, labels, retention, snippets, targets
from tools.admin import pipeline as admin_pipeline
from tools.admin import routes as admin
from tools.admin import scan as admin_scan
from tools.analytics import collect as analytics_collect
from tools.analytics import demo as analytics_demo
from tools.analytics import routes as analytics
from tools.autopilot import routes as autopilot
from tools.content import drafts
from tools.content import labels as content_labels
from tools.content import routes as content
from tools.content.usage import UsageProbe
from tools.context import agent, plans, platforms
from tools.endpoint import Endpoint
from tools.events import digest as event_digest
from tools.events import mail_delivery, webhook_delivery
from tools.media import incoming as media_incoming
from tools.media import items as media_items
from tools.media import processing as media_processing
from tools.media import repair as media_repair
from tools.media import routes as media
from tools.networks import tokens as network_tokens
from tools.notifications import routes as notifications
from tools.publishing import older, queues, runs
from tools.publishing import worker as publishing
from tools.runtime import Runtime
from tools.schedules import preflight, receipts
from tools.schedules import routes as schedules

JobHandler = Callable[[Runtime, str, dict[str, Any]], Awaitable[None]]
Tick = Callable[[Runtime, str], Awaitable[int]]
# `async (session, now, workspace, brands) -> dict`: extra demo data for `socialpub demo` (tools/operator).
DemoSeeder = Callable[..., Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Area:
    """What one API area contributes. `name` is the package (or module) under tools/ that holds it."""

    name: str
    endpoints: tuple[Endpoint, ...] = ()
    jobs: Mapping[str, JobHandler] = field(default_factory=dict)
    ticks: tuple[Tick, ...] = ()
    usage_probes: tuple[UsageProbe, ...] = ()  # "is this content item in use?" (tools/content/usage.py)
    demo_seeders: tuple[DemoSeeder, ...] = ()


AREAS: tuple[Area, ...] = (
    # Within a toolset, endpoints keep this order.
    Area("brands", endpoints=tuple(brands.ENDPOINTS)),
    Area("context", endpoints=(*agent.ENDPOINTS, *plans.ENDPOINTS, *platforms.ENDPOINTS)),
    Area("targets", endpoints=tuple(targets.ENDPOINTS)),
    Area("media", endpoints=(*media.ENDPOINTS, *media_repair.ENDPOINTS), jobs=media_processing.JOBS,
         ticks=tuple(media_incoming.TICKS), demo_seeders=(media_items.seed_demo_folders,)),
    Area("content", endpoints=(*content.ENDPOINTS, *drafts.ENDPOINTS, *content_labels.ENDPOINTS)),
    Area("schedules", endpoints=(*preflight.ENDPOINTS, *receipts.ENDPOINTS, *schedules.ENDPOINTS),
         jobs=receipts.JOBS, usage_probes=(schedules.schedule_usage,)),
    Area("history", endpoints=tuple(history.ENDPOINTS)),
    Area("analytics", endpoints=tuple(analytics.ENDPOINTS), ticks=tuple(analytics_collect.TICKS),
         demo_seeders=(analytics_demo.seed_demo,)),
    Area("publishing", endpoints=(*older.ENDPOINTS, *runs.ENDPOINTS, *queues.ENDPOINTS), ticks=(*publishing.TICKS, *queues.TICKS),
         usage_probes=(queues.queued_usage,)),
    Area("labels", endpoints=tuple(labels.ENDPOINTS), demo_seeders=(labels.seed_demo_labels,)),
    Area("snippets", endpoints=tuple(snippets.ENDPOINTS)),
    Area("ideas", endpoints=tuple(ideas.ENDPOINTS)),
    Area("notifications", endpoints=tuple(notifications.ENDPOINTS)),
    Area("bio", endpoints=tuple(bio.ENDPOINTS), demo_seeders=(bio.seed_demo,)),
    Area("autopilot", endpoints=tuple(autopilot.ENDPOINTS)),
    Area("community", endpoints=tuple(community.ENDPOINTS), demo_seeders=(community.seed_demo,)),
    Area("admin", endpoints=tuple(admin.ENDPOINTS), jobs={**admin_scan.JOBS, **admin_pipeline.JOBS}),
    # Operator-side connects have no endpoint (never an agent tool); the area runs the token-refresh tick.
    Area("networks", ticks=tuple(network_tokens.TICKS)),
    # Events that reach people and programs: the email outbox over SMTP, the review digest, webhooks
    # (docs/events.md).
    Area("events", ticks=(*mail_delivery.TICKS, *event_digest.TICKS, *webhook_delivery.TICKS)),
    # Bounded clean-up of what grows with use (idempotency records, finished jobs, rate-limit counters).
    Area("retention", ticks=tuple(retention.TICKS)),
)


@cache
def jobs() -> dict[str, JobHandler]:
    out: dict[str, JobHandler] = {}
    for area in AREAS:
        out.update(area.jobs)
    return out


def ticks() -> tuple[Tick, ...]:
    return tuple(t for area in AREAS for t in area.ticks)


def usage_probes() -> tuple[UsageProbe, ...]:
    return tuple(p for area in AREAS for p in area.usage_probes)


def demo_seeders() -> tuple[DemoSeeder, ...]:
    return tuple(s for area in AREAS for s in area.demo_seeders)
