"""Cost at scale: the main reads and a worker pass on a large tenant mix, as a ratio to the same calls on a small one.

On each backend (a SQLite file in a scratch directory; a scratch PostgreSQL database created on the server of
`--postgres-url` and dropped afterwards) it makes a workspace with three brands, bulk-loads `--small` past posts
for the measured brand (each a content item, a Schedule, its run, its target and its Publication) and as many for
the two other brands, and times the main reads through the dispatcher (as REST and MCP call them):

- `get_context`;
- the content list: first page and a page from a cursor in the middle;
- the Schedules list of a 93-day window: first page and a deep page (a cursor in the middle of the window);
- History and publications: page 1 and page 50 (a fixed page number: its cost is the skipped index entries);

and a worker pass (`publish_due` of 30 due Schedules on the sandbox). Then it grows the measured brand to
`--large` posts (the other brands to half as many) and times the same calls again. The ratio is the large
CPU over the small one per path (goal: <= 1.2x for every path). The figure is CPU time per call: this process's
(the dispatcher, and on SQLite the database itself on aiosqlite's thread) plus, on PostgreSQL, the server
processes of the scratch database's connections (/proc), the lowest of three rounds of `--repeat` calls after a
few warm-up calls; wall time on a shared machine measures the other load.

    python bench/scale.py [--small 1000] [--large 20000] [--repeat 30] [--backends sqlite,postgresql]
    python bench/scale.py --large 1000000   # the 1M-row run (about 5M rows per backend; tens of minutes)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import insert, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import col, select

from bench.scratch import scratch_runtime, server_cpu
from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from schemas.time import iso
from server.dispatch import Dispatcher
from storage import keyset
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication, PublishExecution, PublishTarget, Schedule
from tools import catalogue
from tools.operator import actions as operator
from tools.publishing import worker as publishing
from tools.schedules.routes import CURSOR_PURPOSE
from tools.schedules.rows import new_schedule
from tools.services import signing

DEFAULT_POSTGRES = "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
BATCH = 2_000
WORKER_PASS = 30  # due Schedules published by the timed worker pass
SETTINGS = {"instagram_settings": {"media_ids": [], "post_type": "GRID_POST"}}


def _rows(ws_id: str, brand_id: str, integration_id: str, user_id: str, now, lo: int, hi: int) -> dict[str, list]:
    """Posts lo..hi-1 of a brand, newest first (post n is n seconds before `now`), as plain rows per table."""
    rows: dict[str, list] = {"items": [], "schedules": [], "runs": [], "targets": [], "publications": []}
    for n in range(lo, hi):
        at = now - timedelta(seconds=n + 60)
        ms = int(at.timestamp() * 1000)
        item, sch, run, tgt, pub = (new_id(p, ms) for p in ("ci", "sch", "run", "ptg", "pub"))
        rows["items"].append({
            "id": item, "workspace_id": ws_id, "brand_id": brand_id, "created_by": user_id, "name": f"Post {n}",
            "copy_mode": "single", "single_copy": {"caption": f"Post number {n}", "hashtags": [], "title": None},
            "platform_copy": None, "settings": SETTINGS, "intended_integration_ids": [], "thumbnail_media_id": None,
            "thumbnail_timestamp": 0.0, "created_at": at, "updated_at": at})
        rows["schedules"].append({
            "id": sch, "workspace_id": ws_id, "brand_id": brand_id, "content_item_id": item,
            "integration_ids": [integration_id], "scheduled_at": at, "approval_status": "approved",
            "status": "published", "source": "api", "created_by": user_id, "latest_execution_id": run,
            "created_at": at, "updated_at": at})
        rows["runs"].append({"id": run, "brand_id": brand_id, "schedule_id": sch, "status": "published",
                             "started_at": at, "finished_at": at, "created_at": at, "updated_at": at})
        rows["targets"].append({
            "id": tgt, "execution_id": run, "schedule_id": sch, "brand_id": brand_id, "integration_id": integration_id,
            "platform": "instagram", "state": "published", "attempts": 1, "idempotency_token": tgt,
            "attempted_at": at, "settled_at": at, "publish_id": f"ig_{n}", "publication_id": pub,
            "permalink_url": f"https://www.instagram.com/p/{n}/", "created_at": at, "updated_at": at})
        rows["publications"].append({
            "id": pub, "workspace_id": ws_id, "brand_id": brand_id, "schedule_id": sch, "execution_id": run,
            "target_id": tgt, "platform": "instagram", "integration_id": integration_id, "post_id": item,
            "post_name": f"Post {n}", "post_type": "GRID_POST", "status": "published", "source": "calendar",
            "publish_id": f"ig_{n}", "permalink_url": f"https://www.instagram.com/p/{n}/", "published_at": at,
            "created_at": at, "updated_at": at})
    return rows


async def load(rt, tenant: tuple, lo: int, hi: int) -> None:
    ws_id, brand_id, integration_id, user_id = tenant
    now = rt.clock.now()
    for start in range(lo, hi, BATCH):
        rows = _rows(ws_id, brand_id, integration_id, user_id, now, start, min(hi, start + BATCH))
        async with rt.db.write_engine.begin() as conn:
            for table, key in ((ContentItem, "items"), (Schedule, "schedules"), (PublishExecution, "runs"),
                               (PublishTarget, "targets"), (Publication, "publications")):
                await conn.execute(insert(table), rows[key])
    if rt.db.is_sqlite:
        async with rt.db.write_engine.connect() as conn:
            await conn.exec_driver_sql("ANALYZE")
    else:
        async with rt.db.write_engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("VACUUM ANALYZE")  # index-only scans need the visibility map


class Meter:
    """CPU seconds spent so far by this process (all its threads: aiosqlite's too) and, on PostgreSQL, by the
    server processes of this database's connections (read from /proc: the server runs on this machine). CPU time,
    unlike wall time, is not inflated when other processes take the cores of a shared machine."""

    def __init__(self, rt) -> None:
        self.rt = rt

    async def now(self) -> float:
        return time.process_time() + await server_cpu(self.rt.db)


async def measured(meter: Meter, call, repeat: int, rounds: int = 3) -> float:
    """CPU seconds per call: the lowest of `rounds` rounds of `repeat` calls (as bench/rest_cpu.py)."""
    best: float | None = None
    for _ in range(rounds):
        before = await meter.now()
        for _ in range(repeat):
            await call()
        spent = (await meter.now() - before) / repeat
        best = spent if best is None else min(best, spent)
    assert best is not None  # rounds >= 1
    return best


async def time_reads(rt, dispatcher: Dispatcher, secret: str, brand_id: str, posts: int, repeat: int) -> dict:
    """Median seconds per call of each read path."""
    now = rt.clock.now()
    middle = now - timedelta(seconds=posts // 2 + 60)
    start, end = now - timedelta(days=92), now + timedelta(days=1)
    async with rt.db.session(write=False) as s:
        mid_item = (await s.exec(select(ContentItem.id).where(ContentItem.brand_id == brand_id,
                                                              ContentItem.updated_at <= middle)
                                 .order_by(col(ContentItem.updated_at).desc(), col(ContentItem.id).desc()).limit(1))).one()
        mid_sch = (await s.exec(select(Schedule.id, Schedule.scheduled_at).where(
            Schedule.brand_id == brand_id, Schedule.scheduled_at <= middle)
            .order_by(col(Schedule.scheduled_at).desc(), col(Schedule.id).desc()).limit(1))).one()
    window = {"from": iso(start), "to": iso(end)}
    signer = signing.signer(rt.settings, CURSOR_PURPOSE)

    def schedules_cursor(direction: str) -> str:
        parts = (brand_id, iso(start), iso(end), "", direction)
        return keyset.encode(signer, parts, mid_sch[1], mid_sch[0])

    calls = {
        "get_context": ("get_context", {}),
        "content list, first page": ("list_content_items", {"brand_id": brand_id}),
        "content list, middle cursor": ("list_content_items", {"brand_id": brand_id, "cursor": mid_item}),
        "schedules, first page": ("list_schedules", {"brand_id": brand_id, **window, "order_direction": "asc"}),
        "schedules, deep cursor asc": ("list_schedules", {"brand_id": brand_id, **window, "order_direction": "asc",
                                                          "cursor": schedules_cursor("asc")}),
        "schedules, deep cursor desc": ("list_schedules", {"brand_id": brand_id, **window,
                                                           "order_direction": "desc",
                                                           "cursor": schedules_cursor("desc")}),
        "history, page 1": ("list_history", {"brand_id": brand_id, "page": 1, "limit": 20}),
        "history, page 50": ("list_history", {"brand_id": brand_id, "page": 50, "limit": 20}),
        "publications, page 50": ("list_publications", {"brand_id": brand_id, "page": 50, "limit": 20}),
    }
    found = {}
    meter = Meter(rt)
    for label, (name, args) in calls.items():
        ep = catalogue.get(name)
        for _ in range(3):
            out = await dispatcher.invoke(ep, dict(args), token=secret)
            assert out.status == 200, (label, out.body)

        async def call(ep=ep, args=args) -> None:
            await dispatcher.invoke(ep, dict(args), token=secret)

        found[label] = await measured(meter, call, repeat)
    return found


async def time_worker(rt, brand, account, user_id: str, repeat: int) -> float:
    """CPU seconds per target of a worker pass publishing WORKER_PASS due Schedules (the lowest of a few)."""
    samples = []
    meter = Meter(rt)
    for _ in range(max(3, repeat // 10)):
        now = rt.clock.now()
        async with rt.db.session(write=True) as s:
            item = ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id,
                               created_by=user_id, name="Due post", settings=SETTINGS,
                               single_copy={"caption": "Due post", "hashtags": [], "title": None},
                               created_at=now, updated_at=now)
            s.add(item)
            await s.flush()
            for _ in range(WORKER_PASS):
                new_schedule(s, brand=brand, content_item_id=item.id, integration_ids=[account.id], scheduled_at=now,
                             approval_status="approved", source="api", user_id=user_id, key_id="key_bench", now=now)
        rt.clock.advance(seconds=1)
        before = await meter.now()
        done = 0
        while n := await publishing.publish_due(rt, "bench-scale"):
            done += n
        samples.append((await meter.now() - before) / WORKER_PASS)
        assert done == WORKER_PASS, done
    return min(samples)


async def _database(server_url: str, name: str, drop: bool = False) -> None:
    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    async with engine.connect() as conn:
        await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' if drop else
                                f'CREATE DATABASE "{name}"'))
    await engine.dispose()


async def run_backend(backend: str, args) -> dict[str, tuple[float, float]]:
    scratch = f"bench_scale_{os.getpid()}"
    url = None
    if backend == "postgresql":
        await _database(args.postgres_url, scratch)
        url = make_url(args.postgres_url).set(database=scratch).render_as_string(hide_password=False)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            rt = await scratch_runtime(tmp, url)
            now = rt.clock.now()
            async with rt.db.session(write=True) as s:
                ws = await operator.create_workspace(s, now, "Scale", plan_id="agency")
                brands = [await operator.create_brand(s, now, ws, f"Brand {n}") for n in range(3)]
                accounts = [await operator.connect_integration(s, now, b, "instagram") for b in brands]
                key, secret = await operator.create_key(s, now, ws, "bench", ALL_SCOPES, role="admin")
            tenants = [(ws.id, b.id, a.id, key.user_id) for b, a in zip(brands, accounts, strict=True)]
            dispatcher = Dispatcher(rt)
            phases = []
            loaded = [0, 0, 0]
            for size in (args.small, args.large):
                t0 = time.perf_counter()
                for n, goal in enumerate((size, size // 2, size // 2) if size == args.large else (size,) * 3):
                    await load(rt, tenants[n], loaded[n], goal)
                    loaded[n] = goal
                print(f"  {backend}: {size:,} posts for the measured brand, {sum(loaded):,} in all "
                      f"(5 rows each), loaded in {time.perf_counter() - t0:.1f} s", flush=True)
                found = await time_reads(rt, dispatcher, secret, brands[0].id, size, args.repeat)
                found["worker pass, per target"] = await time_worker(rt, brands[0], accounts[0], key.user_id,
                                                                     args.repeat)
                phases.append(found)
            await rt.close()
    finally:
        if backend == "postgresql":
            await _database(args.postgres_url, scratch, drop=True)
    return {label: (phases[0][label], phases[1][label]) for label in phases[0]}


async def main(args) -> None:
    worst = 0.0
    lines = []
    for backend in args.backends.split(","):
        figures = await run_backend(backend, args)
        print(f"{backend}: {args.small:,} posts vs {args.large:,} posts for the measured brand (ms of CPU per "
              f"call, the lowest of 3 rounds of {args.repeat})")
        for label, (small, large) in figures.items():
            ratio = large / small
            worst = max(worst, ratio)
            print(f"  {label:<30} {small * 1000:8.3f}  {large * 1000:8.3f}  {ratio:5.2f}x")
            lines.append(f"{backend} {label} {ratio:.2f}x")
    print(f"large/small cost, worst path: {worst:.2f}x (goal <= 1.2x) "
          f"{'OK' if worst <= 1.2 else 'ABOVE GOAL'}; {args.small:,} vs {args.large:,} posts")


if __name__ == "__main__":
    assert __doc__ is not None  # the module docstring above
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000, help="posts of the measured brand, small phase")
    parser.add_argument("--large", type=int, default=20_000, help="posts of the measured brand, large phase "
                                                                   "(1000000 for the 1M-row run)")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES)
    anyio.run(main, parser.parse_args())
