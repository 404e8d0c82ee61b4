"""Prometheus metrics (`GET /metrics`, text format from prometheus_client).

Counters and histograms are process-wide and fed where things happen (the dispatcher, the MCP tool call, the
publishing worker, the rate limiter). Gauges that describe shared state (queue depth and lag) are read from the
database at scrape time, so every replica reports the same figures. With `SOCIALPUB_METRICS_TOKEN` set, a
scrape must send `Authorization: Bearer <token>`; otherwise /metrics is public.
"""

from __future__ import annotations

import hmac
import logging
from datetime import datetime
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest
from sqlalchemy import func
from sqlmodel import select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tools.runtime import Runtime
from tools.services.telemetry import PROVIDER_SECONDS, PUBLISH_OUTCOMES  # noqa: F401  (fed by the publishing worker)

log = logging.getLogger("socialpub.metrics")

REQUESTS = Counter("socialpub_requests", "API calls (REST and MCP) by endpoint name and HTTP status.",
                   ["endpoint", "status"])
REQUEST_SECONDS = Histogram("socialpub_request_duration_seconds", "Time to answer an API call, by endpoint name.",
                            ["endpoint"], buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10))
MCP_TOOL_CALLS = Counter("socialpub_mcp_tool_calls", "MCP tools/call requests by tool and outcome (ok | error).",
                         ["tool", "outcome"])
RATE_LIMITED = Counter("socialpub_rate_limited", "Requests refused with 429, by bucket kind (key | ip | page).",
                       ["scope"])
_CALL_SERIES: dict[tuple[str, int], tuple[Any, Any]] = {}


def count_call(endpoint: str, status: int, seconds: float) -> None:
    """One API call in REQUESTS and REQUEST_SECONDS. The labelled series are looked up once per endpoint and
    status (`labels()` takes a lock and builds its key on every call); endpoints and statuses are finite."""
    series = _CALL_SERIES.get((endpoint, status))
    if series is None:
        series = _CALL_SERIES[endpoint, status] = (REQUESTS.labels(endpoint, str(status)),
                                                   REQUEST_SECONDS.labels(endpoint))
    series[0].inc()
    series[1].observe(seconds)


WORKER_PASS_SECONDS = Histogram("socialpub_worker_pass_duration_seconds", "One worker pass (ticks and due jobs).")
QUEUE_DEPTH = Gauge("socialpub_jobs_due", "Jobs queued and due now, by kind (read at scrape time).", ["kind"])
QUEUE_LAG = Gauge("socialpub_jobs_lag_seconds", "Age of the oldest due job, by kind: how far the workers are "
                  "behind (read at scrape time).", ["kind"])


async def _queue_state(rt: Runtime) -> None:
    from storage.tables.jobs import Job  # here: every process with a dispatcher imports this module, few scrape it

    now = rt.clock.now()
    async with rt.db.session(write=False) as session:
        rows = (await session.exec(select(Job.kind, func.count(), func.min(Job.run_at))
                                   .where(Job.status == "queued", Job.run_at <= now).group_by(Job.kind))).all()
    QUEUE_DEPTH.clear()
    QUEUE_LAG.clear()
    for kind, count, oldest in rows:
        QUEUE_DEPTH.labels(kind).set(count)
        if isinstance(oldest, datetime):
            QUEUE_LAG.labels(kind).set(max(0.0, (now - oldest).total_seconds()))


def authorized(rt: Runtime, header: str | None) -> bool:
    token = rt.settings.metrics_token
    if not token:
        return True
    scheme, _, value = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


def routes(rt: Runtime) -> list[Route]:
    async def metrics(request: Request) -> Response:
        if not authorized(rt, request.headers.get("authorization")):
            return Response("Send the metrics token: Authorization: Bearer <SOCIALPUB_METRICS_TOKEN>.\n",
                            status_code=401, media_type="text/plain", headers={"WWW-Authenticate": "Bearer"})
        try:
            await _queue_state(rt)
        except Exception as exc:  # the scrape still reports the process metrics
            log.warning("metrics: queue state unavailable: %s", type(exc).__name__)
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST, headers={"Cache-Control": "no-store"})

    return [Route("/metrics", metrics, methods=["GET"])]
