"""The worker: runs due jobs and periodic ticks (publishing, queues) of the areas listed in tools/areas.py.

Area modules declare `JOBS = {"kind": async handler(rt, job_id, payload)}` and
`TICKS = [async tick(rt, worker_id) -> int]` (work done); tools/areas.py lists them. `socialpub worker` runs
this loop on its own;
`socialpub serve` and the stdio MCP server run it in-process so the embedded setup needs nothing else.
"""

from __future__ import annotations

import contextlib
import gc
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
# After a stop request (SIGTERM/SIGINT), the pass in progress may finish what it started for this long; then it
# is cancelled (its claims' short leases let another worker take them over).
GRACE_SECONDS = 20.0


def freeze_startup_heap() -> int:
    """Once a worker process has started (modules imported, runtime built), move every object alive then out of
    the garbage collector's generations (`gc.freeze`); returns how many. Those objects (modules, classes,
    SQLAlchemy mappers, pydantic schemas: ~140,000 in a started `socialpub worker`) live as long as the process,
    yet every full collection scanned them all again: 30-100 ms on the 2-core machine, once or twice per 300
    targets published (bench/HISTORY.md, "Third round: the worker's own objects and the collector"). What a
    pass allocates is still collected; a full collection then scans only that. For whole worker processes
    (`socialpub worker`), not for code that shares its process with others (tests, `serve`'s in-process worker)."""
    gc.collect()  # garbage made by start-up is freed, not frozen
    gc.freeze()
    return gc.get_freeze_count()


def registry() -> tuple[dict[str, JobHandler], tuple[Tick, ...]]:
    return areas.jobs(), areas.ticks()


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{id(object()):x}"


class Worker:
    def __init__(self, rt: Runtime, owner: str | None = None, grace: float = GRACE_SECONDS) -> None:
        self.rt = rt
        self.owner = owner or worker_id()
        self.grace = grace
        self._stop = anyio.Event()
        self.stopped = anyio.Event()  # set when run_forever has returned
        self._pass_scope: anyio.CancelScope | None = None

    def stop(self) -> None:
        """Graceful stop: claim nothing more, hand back claims not started (the ticks see `rt.stopping`), let
        the pass in progress finish within the grace period; `run_forever` then returns."""
        if self._stop.is_set():
            return
        log.info("worker %s stopping (grace %.0f s)", self.owner, self.grace)
        self.rt.stopping.add(self.owner)
        self._stop.set()
        if self._pass_scope is not None:
            self._pass_scope.deadline = min(self._pass_scope.deadline, anyio.current_time() + self.grace)

    async def run_once(self) -> int:
        """One pass: every tick, then every due job. Returns the amount of work done."""
        jobs, ticks = registry()
        done = 0
        for tick in ticks:
            try:
                done += await tick(self.rt, self.owner)
            except Exception:
                log.exception("tick %s failed", getattr(tick, "__name__", tick))
        while self.owner not in self.rt.stopping:
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
            while not self._stop.is_set():
                if anyio.current_time() - last_beat >= health.HEARTBEAT_SECONDS:
                    try:
                        await health.beat(self.rt, self.owner, started, passes)
                        last_beat = anyio.current_time()
                    except Exception:
                        log.exception("worker heartbeat failed")
                passes += 1
                await self._pass(poll, metrics)
        finally:
            self.rt.stopping.discard(self.owner)
            with anyio.CancelScope(shield=True), anyio.move_on_after(2), contextlib.suppress(Exception):
                await health.forget(self.rt, self.owner)
            log.info("worker %s stopped", self.owner)
            self.stopped.set()

    async def _pass(self, poll: float, metrics) -> None:
        busy = 0  # stays 0 when the grace period ran out and the pass was cancelled
        with metrics.WORKER_PASS_SECONDS.time(), anyio.CancelScope() as self._pass_scope:
            try:
                busy = await self.run_once()
            except Exception:
                log.exception("worker pass failed")
        scope, self._pass_scope = self._pass_scope, None
        if scope.cancelled_caught:
            log.info("worker %s: grace period over; unfinished claims go to another worker when their lease ends",
                     self.owner)
        if busy or self._stop.is_set():
            return
        self.rt.work_ready = anyio.Event()
        with anyio.move_on_after(poll):
            async with anyio.create_task_group() as tg:
                async def stop_waiting() -> None:
                    await self._stop.wait()
                    tg.cancel_scope.cancel()
                tg.start_soon(stop_waiting)
                await self.rt.work_ready.wait()
                tg.cancel_scope.cancel()

    async def run_until_signalled(self) -> None:
        """`run_forever` that stops gracefully on SIGTERM or SIGINT (a deploy, `systemctl stop`, Ctrl-C)."""
        import signal

        async with anyio.create_task_group() as tg:
            async def watch() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        self.stop()
                        return
            tg.start_soon(watch)
            await self.run_forever()
            tg.cancel_scope.cancel()
