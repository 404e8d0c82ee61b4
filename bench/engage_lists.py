"""Read cost of the engagement lists does not grow with table size.

Times `list_notifications` (first page and a page deep behind a cursor, `filter=unread`) and
`get_bio_stats` (28 days) against a small database, then again after the tables have grown ~100x (other
users, other brands, older days). Prints each median and the ratio grown/small: the floor is the small
database measured in the same run, so a ratio near 1 means keyset/rollup reads, and a ratio growing with
the data would mean a scan. Run: `python bench/engage_lists.py` (SQLite in a temp dir). For PostgreSQL set
SOCIALPUB_BENCH_DATABASE_URL=postgresql+asyncpg://.../name: it uses the databases `name_small` and
`name_grown`, which must exist and be empty.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.ids import new_id
from schemas.settings import Settings
from schemas.time import FrozenClock
from server.dispatch import Dispatcher
from storage.db import Database
from storage.migrate import upgrade
from storage.tables.bio import BioDailyStats
from storage.tables.notifications import Notification
from tools import catalogue
from tools.operator import actions as operator
from tools.runtime import Runtime

ROUNDS = 200


async def add_notifications(rt, ws_id, brand_ids, user_ids, count):
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        for i in range(count):
            s.add(Notification(id=new_id("ntf"), workspace_id=ws_id, brand_id=brand_ids[i % len(brand_ids)],
                               user_id=user_ids[i % len(user_ids)], type="post_published", category="post_published",
                               title=f"n{i}", message="m", is_read=i % 3 == 0, created_at=now))


async def add_days(rt, brand_ids, first, last, views=5):
    today = rt.clock.now().date()
    async with rt.db.session(write=True) as s:
        for brand_id in brand_ids:
            for d in range(first, last):
                s.add(BioDailyStats(brand_id=brand_id, day=today - timedelta(days=d), views=views, visitors=3,
                                    link_clicks=1))


async def build(url: str, home: Path, grown: bool) -> tuple:
    """One database: my user and brand with 200 notifications and 28 days of stats; `grown` adds ~100x rows
    of other users, other brands and older days, plus newer notifications of mine."""
    rt = Runtime(settings=Settings(home=home, database_url=url, rate_limit_requests=0, worker_enabled=False),
                 db=Database(url), clock=FrozenClock())
    await upgrade(rt.db)
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        ws = await operator.create_workspace(s, now, "Bench", plan_id="agency")
        brands = [await operator.create_brand(s, now, ws, f"Brand {i}") for i in range(20)]
        key, secret = await operator.create_key(s, now, ws, "bench", ("notifications:read", "posts:read"))
        others = [(await operator.create_key(s, now, ws, f"u{i}", ("posts:read",)))[0].user_id for i in range(9)]
    me, brand = key.user_id, brands[0].id
    await add_notifications(rt, ws.id, [brand], [me], 200)
    await add_days(rt, [brand], 0, 28)
    dispatcher = Dispatcher(rt)
    out = await dispatcher.invoke(catalogue.get("list_notifications"), {"brand_id": brand, "limit": 50}, token=secret)
    assert out.body is not None, out.status
    cursor = out.body["data"]["next_cursor"]
    if grown:
        await add_notifications(rt, ws.id, [b.id for b in brands], [me, *others], 20_000)
        await add_days(rt, [b.id for b in brands[1:]], 0, 365)
        await add_days(rt, [brand], 28, 400, views=1)  # older days of my brand, outside every window
    calls = {
        "notifications first page": ("list_notifications", {"brand_id": brand}),
        "notifications unread, deep cursor": ("list_notifications",
                                              {"brand_id": brand, "cursor": cursor, "filter": "unread"}),
        "bio stats 28d": ("get_bio_stats", {"brand_id": brand, "days": 28}),
    }
    return rt, dispatcher, secret, calls


async def one(dispatcher, secret, name, args) -> float:
    t0 = time.perf_counter()
    out = await dispatcher.invoke(catalogue.get(name), args, token=secret)
    elapsed = time.perf_counter() - t0
    assert out.status == 200, out.body
    return elapsed


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = os.environ.get("SOCIALPUB_BENCH_DATABASE_URL")
        urls = ([f"{base}_small", f"{base}_grown"] if base
                else [f"sqlite+aiosqlite:///{tmp}/small.db", f"sqlite+aiosqlite:///{tmp}/grown.db"])
        small = await build(urls[0], Path(tmp), grown=False)
        grown = await build(urls[1], Path(tmp), grown=True)
        samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in small[3]}
        # Interleave the two databases call by call, so machine load affects both sides alike.
        for _ in range(ROUNDS):
            for name in samples:
                samples[name][0].append(await one(small[1], small[2], *small[3][name]))
                samples[name][1].append(await one(grown[1], grown[2], *grown[3][name]))
        await small[0].close()
        await grown[0].close()

    print(f"backend: {urls[0].split(':')[0]}; {ROUNDS} interleaved calls each; median ms small -> grown (~100x rows)")
    worst = 0.0
    for name, (a, b) in samples.items():
        ratio = statistics.median(b) / statistics.median(a)
        worst = max(worst, ratio)
        print(f"  {name:36s} {statistics.median(a) * 1000:7.3f} -> {statistics.median(b) * 1000:7.3f}   x{ratio:.2f}")
    print(f"worst ratio x{worst:.2f} (floor = the small database in this run; ~1 means cost independent of size)")


if __name__ == "__main__":
    anyio.run(main)
