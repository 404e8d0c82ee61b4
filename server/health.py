"""Health endpoints and the worker heartbeat.

- `GET /healthz`: the process answers (no dependency is touched), for liveness probes.
- `GET /readyz`: the database answers, its schema is the one this code needs, and, when a worker is expected
  (this process runs one, or `SOCIALPUB_EXPECT_WORKER=1`), some worker's heartbeat is fresh. 200 or 503 with
  a JSON body naming each check, for readiness probes and load balancers.

Every worker loop upserts its row in `worker_heartbeats` every HEARTBEAT_SECONDS, so a replica can tell that
a worker on another machine is alive without talking to it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import anyio
from sqlalchemy import delete, func
from sqlmodel import col, select
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from storage.migrate import current_heads, script_heads
from storage.tables.operations import WorkerHeartbeat
from tools.runtime import Runtime

log = logging.getLogger("socialpub.health")

HEARTBEAT_SECONDS = 5.0
# A worker is "fresh" when it beat within this window: several missed beats, or one pass stuck this long.
FRESH_AFTER = timedelta(seconds=60)
# Rows of workers gone this long are deleted by the next beat of any worker.
FORGET_AFTER = timedelta(days=1)
CHECK_TIMEOUT = 5.0


async def beat(rt: Runtime, worker_id: str, started_at: datetime, passes: int) -> None:
    now = rt.clock.now()
    async with rt.db.session(write=True) as session:
        row = await session.get(WorkerHeartbeat, worker_id)
        if row is None:
            session.add(WorkerHeartbeat(worker_id=worker_id, started_at=started_at, beat_at=now, passes=passes))
            await session.exec(delete(WorkerHeartbeat).where(col(WorkerHeartbeat.beat_at) < now - FORGET_AFTER))
        else:
            row.beat_at, row.passes = now, passes


async def forget(rt: Runtime, worker_id: str) -> None:
    """A worker that stops cleanly removes its row, so readiness does not count it for a minute more."""
    async with rt.db.session(write=True) as session:
        await session.exec(delete(WorkerHeartbeat).where(col(WorkerHeartbeat.worker_id) == worker_id))


async def fresh_workers(rt: Runtime) -> int:
    since = rt.clock.now() - FRESH_AFTER
    async with rt.db.session(write=False) as session:
        result = await session.exec(select(func.count()).select_from(WorkerHeartbeat)
                                    .where(WorkerHeartbeat.beat_at >= since))
        return int(result.one())


async def readiness(rt: Runtime, *, in_process_worker: bool) -> tuple[bool, dict[str, Any]]:
    checks: dict[str, Any] = {}
    ok = True
    try:
        with anyio.fail_after(CHECK_TIMEOUT):
            have = await current_heads(rt.db)
        checks["database"] = "ok"
        want = script_heads()
        checks["schema"] = "ok" if have == want else f"at {sorted(have)}, needs {sorted(want)}"
        ok = ok and have == want
    except Exception as exc:  # any failure to reach the database means not ready
        log.warning("readiness: database unreachable: %s", type(exc).__name__)
        checks["database"] = f"unreachable ({type(exc).__name__})"
        checks["schema"] = "unknown"
        return False, checks
    expected = in_process_worker if rt.settings.expect_worker is None else rt.settings.expect_worker
    if expected:
        try:
            with anyio.fail_after(CHECK_TIMEOUT):
                count = await fresh_workers(rt)
            checks["worker"] = "ok" if count else "no worker heartbeat in the last minute"
            ok = ok and count > 0
        except Exception as exc:
            checks["worker"] = f"unknown ({type(exc).__name__})"
            ok = False
    else:
        checks["worker"] = "not expected"
    return ok, checks


def routes(rt: Runtime, *, in_process_worker: bool) -> list[Route]:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})

    async def readyz(request: Request) -> Response:
        ok, checks = await readiness(rt, in_process_worker=in_process_worker)
        return JSONResponse({"status": "ready" if ok else "not_ready", "checks": checks},
                            status_code=200 if ok else 503, headers={"Cache-Control": "no-store"})

    return [Route("/healthz", healthz, methods=["GET", "HEAD"]), Route("/readyz", readyz, methods=["GET", "HEAD"])]
