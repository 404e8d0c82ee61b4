"""Publishing worker throughput, as a ratio to a floor measured in the same run.

N due approved Schedules with one target each (spread over three sandbox accounts) are published by worker
passes (`publish_due`: claim, run + target + publication rows with the first attempt, sandbox publish with its
file ledger, settlement with notifications; the steps of a batch share commits). The floor is N Publication
rows inserted one per committed transaction on the same database (the least a durable per-target record
costs); the ratio says how many bare durable writes one published target costs.

`--postgres` creates a scratch PostgreSQL database on the server of `--postgres-url` (default: the test
server, 127.0.0.1:5432) and drops it afterwards; `--workers N` publishes with N worker processes at once
(each its own process, runtime and connections; one sandbox ledger on a shared home), and checks every target
was published exactly once. Each process drains as a started `socialpub worker` does: after its start-up heap
is frozen (server/worker.py `freeze_startup_heap`). On PostgreSQL it also prints the CPU per target with the
server's (its processes for the scratch database, from /proc) and the throughput those CPU seconds allow on
this machine's cores when idle: on a shared machine, where the wall-clock rate measures the other load, that
ceiling is the figure to compare with the ≥ 300 targets/s goal of two workers. The Bluesky comparison is
`bench/bluesky_publish.py`.

    python bench/publishing.py [--schedules 300] [--postgres] [--workers 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bench.scratch import scratch_runtime, server_cpu
from providers.sandbox import SandboxProvider
from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from schemas.time import FrozenClock
from server.worker import freeze_startup_heap
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication
from tools.operator import actions as operator
from tools.publishing import worker as publishing
from tools.schedules.rows import new_schedule

DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
PLATFORMS = ("instagram", "facebook", "linkedin")
TEXT = "Bench post: https://example.com/bench #bench"


async def _seed(rt, schedules: int, accounts: list, settings: dict) -> tuple[str, list[str]]:
    """`schedules` due approved Schedules spread over `accounts`; the item and Schedule IDs."""
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        brand = await s.get(Brand, accounts[0].brand_id)
        item = ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id, created_by="usr_bench",
                           name="Bench post", single_copy={"caption": TEXT, "hashtags": [], "title": None},
                           settings=settings, created_at=now, updated_at=now)
        s.add(item)
        await s.flush()
        scheduled = [new_schedule(s, brand=brand, content_item_id=item.id,
                                  integration_ids=[accounts[n % len(accounts)].id], scheduled_at=now,
                                  approval_status="approved", source="api", user_id="usr_bench",
                                  key_id="key_bench", now=now).id for n in range(schedules)]
    return item.id, scheduled


async def _drain(rt, owner: str) -> int:
    done = 0
    while n := await publishing.publish_due(rt, owner):
        done += n
    return done


async def _drain_process(home: str, url: str | None, at: str, owner: str) -> None:
    """A worker process of `--workers N`: waits for "go" on stdin, drains, prints what it published, the CPU
    seconds the drain took, and when it began and ended (epoch seconds: the processes share the clock); then
    keeps its connections open (their server processes hold the CPU they spent) until a second line."""
    rt = await scratch_runtime(home, url, start=at, migrate=False)
    async with rt.db.session(write=True) as s:  # connected, as a started worker is after its first tick (the
        await s.execute(text("SELECT 1"))      # dialect's first-connect queries are not a target's cost)
    freeze_startup_heap()  # as `socialpub worker` does once started
    print("ready", flush=True)
    await anyio.to_thread.run_sync(sys.stdin.readline)
    began, cpu = time.time(), time.process_time()
    done = await _drain(rt, owner)
    print(done, time.process_time() - cpu, began, time.time(), flush=True)
    await anyio.to_thread.run_sync(sys.stdin.readline)
    await rt.close()


def _run_processes(rt, home: str, url: str | None, at: str, workers: int) -> tuple[float, list[int], float, float]:
    """Drain with `workers` processes at once: the span, what each published, their CPU and the server's."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    procs = [subprocess.Popen([sys.executable, __file__, "--drain", home, url or "", at, f"bench-{n}"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for n in range(workers)]
    for proc in procs:
        assert proc.stdout is not None and proc.stdin is not None  # both PIPE
        if proc.stdout.readline().strip() != "ready":
            raise SystemExit("a worker process did not start")
    server_before = anyio.from_thread.run(server_cpu, rt.db)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = []
    for proc in procs:
        assert proc.stdout is not None
        outs.append(proc.stdout.readline().split())
    server = anyio.from_thread.run(server_cpu, rt.db) - server_before  # the workers' connections still open
    for proc in procs:
        proc.communicate("exit\n", timeout=600)
    if not all(len(out) == 4 for out in outs):
        raise SystemExit("a worker process failed")
    # From the first drain's start to the last one's end: the processes' start-up and exit are not the worker's
    span = max(float(out[3]) for out in outs) - min(float(out[2]) for out in outs)
    return span, [int(out[0]) for out in outs], sum(float(out[1]) for out in outs), server


async def _create_database(server_url: str, name: str, drop: bool = False) -> None:
    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        if drop:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        else:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
    await engine.dispose()


async def main(schedules: int, postgres: str | None, workers: int) -> None:
    scratch_db = f"bench_publishing_{os.getpid()}"
    url = None
    if postgres:
        await _create_database(postgres, scratch_db)
        url = make_url(postgres).set(database=scratch_db).render_as_string(hide_password=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rt = await scratch_runtime(tmp, url)
            now = rt.clock.now()
            async with rt.db.session(write=True) as s:
                ws = await operator.create_workspace(s, now, f"Bench {new_id('x')}", plan_id="agency")
                brand = await operator.create_brand(s, now, ws, "Bench brand")
                accounts = [await operator.connect_integration(s, now, brand, p) for p in PLATFORMS]
                await operator.create_key(s, now, ws, "bench", ALL_SCOPES, role="admin")
            item_id, scheduled = await _seed(rt, schedules, accounts, {
                "instagram_settings": {"media_ids": [], "post_type": "GRID_POST"},
                "facebook_settings": {"media_ids": [], "post_type": "FB_TEXT"},
                "linkedin_settings": {"media_ids": [], "post_type": "LI_TEXT"}})
            assert isinstance(rt.clock, FrozenClock)  # scratch_runtime's
            rt.clock.advance(seconds=1)
            worker_cpu = insert_cpu = None
            if workers == 1:
                server = await server_cpu(rt.db)
                # This process is now a started worker: its heap frozen as `socialpub worker` freezes its own
                # (server/worker.py), so the drain and the floor after it are not charged for full collections
                # of the start-up heap (one or two per 300 targets, ~70-100 ms each, before).
                freeze_startup_heap()
                start, cpu = time.perf_counter(), time.process_time()
                counts = [await _drain(rt, "bench")]
                worker_s, worker_cpu = time.perf_counter() - start, time.process_time() - cpu
                worker_server = await server_cpu(rt.db) - server
            else:
                at = rt.clock.now().isoformat().replace("+00:00", "Z")
                worker_s, counts, worker_cpu, worker_server = await anyio.to_thread.run_sync(
                    _run_processes, rt, tmp, url, at, workers)
            assert sum(counts) == schedules, (counts, schedules)
            sandbox = rt.providers["sandbox"]
            assert isinstance(sandbox, SandboxProvider)
            publishes = sandbox.ledger.publishes()
            assert len(publishes) == schedules and set(publishes.values()) == {1}, "not exactly once"

            start, cpu, server = time.perf_counter(), time.process_time(), await server_cpu(rt.db)
            for n in range(schedules):
                async with rt.db.session(write=True) as s:
                    s.add(Publication(id=new_id("pub"), workspace_id=ws.id, brand_id=brand.id,
                                      schedule_id=scheduled[n], execution_id="run_bench", target_id=new_id("ptg"),
                                      platform="instagram", integration_id=accounts[0].id, post_id=item_id,
                                      status="published", created_at=now + timedelta(seconds=n), updated_at=now))
            insert_s, insert_cpu = time.perf_counter() - start, time.process_time() - cpu
            insert_server = await server_cpu(rt.db) - server
            await rt.close()
    finally:
        if postgres:
            await _create_database(postgres, scratch_db, drop=True)

    backend = "postgresql" if postgres else "sqlite"
    print(f"backend: {backend}; targets: {schedules} (one per Schedule); worker processes: {workers} "
          f"(Schedules each: {counts}); every target published exactly once")
    print(f"worker, sandbox:      {worker_s:8.3f} s  {schedules / worker_s:9.1f} targets published/s")
    print(f"bare inserts:         {insert_s:8.3f} s  {schedules / insert_s:9.1f} committed inserts/s (floor)")
    if worker_cpu is not None and insert_cpu:
        # This process's CPU (all its threads; with --workers, the worker processes' CPU while draining, added
        # up), which other load on a shared machine distorts less than wall time; on PostgreSQL the server's
        # own CPU is not in it.
        who = "this process" if workers == 1 else f"the {workers} worker processes"
        print(f"CPU of {who} per target: worker {1000 * worker_cpu / schedules:.2f} ms, bare insert "
              f"{1000 * insert_cpu / schedules:.2f} ms, ratio {worker_cpu / insert_cpu:.2f}x")
    if postgres and worker_cpu is not None and insert_cpu:
        # With the server's CPU (its processes for this database, /proc): what a target costs the machine. On
        # idle cores the workers cannot publish faster than the cores pay for the workers and the server
        # together, nor each worker faster than its one thread: a ceiling (lock waits and fsync come on top).
        total, floor = worker_cpu + worker_server, insert_cpu + insert_server
        cores = os.cpu_count() or 1
        ceiling = min(cores * schedules / total, workers * schedules / worker_cpu)
        print(f"CPU with the PostgreSQL server per target: worker {1000 * total / schedules:.2f} ms (server "
              f"{1000 * worker_server / schedules:.2f} ms), bare insert {1000 * floor / schedules:.2f} ms, ratio "
              f"{total / floor:.2f}x; CPU-bound ceiling on {cores} idle cores: {ceiling:.0f} targets/s")
    print(f"ratio (worker time per target / bare insert): {worker_s / insert_s:.2f}x; "
          f"{schedules / worker_s:.1f} targets/s")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "--drain":
        _, _, home, url, at, owner = sys.argv
        asyncio.run(_drain_process(home, url or None, at, owner))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--postgres", action="store_true",
                        help="run on a scratch PostgreSQL database (created and dropped by the benchmark)")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES,
                        help="the PostgreSQL server (its database is only used to create the scratch one)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes publishing at once")
    args = parser.parse_args()
    anyio.run(main, args.schedules, args.postgres_url if args.postgres else None, args.workers)
