"""The worker: runs due jobs and periodic ticks (publishing, queues) of the areas listed in tools/areas.py.

Area modules declare `JOBS = {"kind": async handler(rt, job_id, payload)}` and
`TICKS = [async tick(rt, worker_id) -> int]` (work done); tools/areas.py lists them. `socialpub worker` runs
this loop on its own;
`socialpub serve` and the stdio MCP server run it in-process so the embedded setup needs nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from datetime import timedelta

import anyio

from storage import queue
from storage.queue import RetryLater
from tools import areas
from tools.areas import JobHandler, Tick
from tools.runtime import Runtime

log = logging.getLogger("socialpub.worker")

LEASE = timedelta(minutes=5)
POLL_SECONDS = 1.0


def registry() -> tuple[dict[str, JobHandler], tuple[Tick, ...]]:
    return areas.jobs(), areas.ticks()


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{id(object()):x}"


class Worker:
    def __init__(self, rt: Runtime, owner: str | None = None) -> None:
        self.rt = rt
        self.owner = owner or worker_id()

    async def run_once(self) -> int:
        """One pass: every tick, then every due job. Returns the amount of work done."""
        jobs, ticks = registry()
        done = 0
        for tick in ticks:
            try:
                done += await tick(self.rt, self.owner)
            except Exception:
                log.exception("tick %s failed", getattr(tick, "__name__", tick))
        while True:
            claimed = await queue.claim(self.rt.db, self.rt.clock.now(), self.owner, lease=LEASE,
                                        kinds=tuple(jobs) or None)
            if not claimed:
                break
            for job_id in claimed:
                await self._run_job(jobs, job_id)
                done += 1
        return done

    async def _run_job(self, jobs: dict[str, JobHandler], job_id: str) -> None:
        from storage.tables.jobs import Job

        async with self.rt.db.session(write=False) as session:
            job = await session.get(Job, job_id)
            kind, payload = (job.kind, dict(job.payload)) if job else (None, {})
        handler = jobs.get(kind or "")
        error, retry = None, False
        if handler is None:
            error = f"no handler for job kind {kind}"
        else:
            try:
                await handler(self.rt, job_id, payload)
            except RetryLater as exc:
                error, retry = str(exc) or "retry later", True
            except Exception as exc:
                # Often an infrastructure blip: retried with backoff up to max_attempts, logged for operators.
                log.exception("job %s (%s) failed", job_id, kind)
                error, retry = f"{type(exc).__name__}: {exc}", True
        async with self.rt.db.session(write=True) as session:
            now = self.rt.clock.now()
            if error is None:
                await queue.finish(session, job_id, self.owner, now)
            else:
                await queue.fail(session, job_id, self.owner, now, error, retry=retry)

    async def run_forever(self, poll: float = POLL_SECONDS) -> None:
        from server import health, metrics

        log.info("worker %s started", self.owner)
        started, passes, last_beat = self.rt.clock.now(), 0, float("-inf")
        try:
            while True:
                if anyio.current_time() - last_beat >= health.HEARTBEAT_SECONDS:
                    try:
                        await health.beat(self.rt, self.owner, started, passes)
                        last_beat = anyio.current_time()
                    except Exception:
                        log.exception("worker heartbeat failed")
                passes += 1
                await self._pass(poll, metrics)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2), contextlib.suppress(Exception):
                await health.forget(self.rt, self.owner)

    async def _pass(self, poll: float, metrics) -> None:
        with metrics.WORKER_PASS_SECONDS.time():
            try:
                busy = await self.run_once()
            except Exception:
                log.exception("worker pass failed")
                busy = 0
        if busy:
            return
        self.rt.work_ready = anyio.Event()
        with anyio.move_on_after(poll):
            await self.rt.work_ready.wait()
