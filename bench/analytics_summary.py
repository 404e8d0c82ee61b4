"""Analytics summary (`GET .../analytics/summary`): cost with many unrelated brands' posts vs few, one run.

A summary reads one brand's posts of the period through `ix_post_metrics_brand (brand_id, published_at)`, so
other brands' posts must not make it slower. This seeds the measured brand with --posts readings and one other
brand with as many, times summaries (by platform and by weekday_hour) and top posts, then adds --others posts
spread over 200 other brands and times the same calls again. Prints both medians and the ratio (target: within
1.2x; the figure is on the last line).

    python bench/analytics_summary.py [--posts 500] [--others 200000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio
from sqlalchemy import insert

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import median_call, scratch_runtime
from schemas.ids import new_id
from schemas.time import Clock
from server.dispatch import Dispatcher
from storage.db import Database
from storage.tables.analytics import PostMetricsState
from tools.operator import actions as operator

START = "2026-06-01T09:00:00.000Z"
BATCH = 5_000
PLATFORMS = ("x", "youtube", "pinterest", "mastodon")


async def seed(db: Database, clock: Clock, workspace_id: str, brand_ids: list[str], count: int) -> None:
    now = clock.now()
    for lo in range(0, count, BATCH):
        rows = []
        for n in range(lo, min(count, lo + BATCH)):
            at = now - timedelta(minutes=7 * (n // len(brand_ids)) + 1)  # spread back over the weeks
            rows.append({"publication_id": new_id("pub"), "workspace_id": workspace_id,
                         "brand_id": brand_ids[n % len(brand_ids)], "integration_id": "int_bench",
                         "platform": PLATFORMS[n % len(PLATFORMS)], "post_id": new_id("ci"), "publish_id": "p",
                         "published_at": at, "status": "collecting", "step": 1, "next_due_at": at + timedelta(days=3),
                         "read_at": at + timedelta(hours=1), "likes": n % 97, "impressions": n % 1013,
                         "reposts": n % 7, "replies": None, "saves": None, "link_clicks": None, "video_views": None,
                         "watch_time_seconds": None, "failures": 0, "created_at": at, "updated_at": at})
        async with db.write_engine.begin() as conn:
            await conn.execute(insert(PostMetricsState), rows)


async def time_calls(dispatcher: Dispatcher, secret: str, brand_id: str, repeat: int) -> float:
    return await median_call(dispatcher, secret, [
        ("get_analytics_summary", {"brand_id": brand_id}),
        ("get_analytics_summary", {"brand_id": brand_id, "group_by": "weekday_hour"}),
        ("list_top_posts", {"brand_id": brand_id, "metric": "likes"})], repeat)


async def main(posts: int, others: int, repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        rt = await scratch_runtime(tmp, start=START)
        db, clock = rt.db, rt.clock
        dispatcher = Dispatcher(rt)
        async with db.session(write=True) as s:
            ws = await operator.create_workspace(s, clock.now(), "bench")
            brand = await operator.create_brand(s, clock.now(), ws, "bench brand")
            other = await operator.create_brand(s, clock.now(), ws, "other brand")
            _, secret = await operator.create_key(s, clock.now(), ws, "bench", ("analytics:read",), role="admin")
        await seed(db, clock, ws.id, [brand.id], posts)
        await seed(db, clock, ws.id, [other.id], posts)
        t_small = await time_calls(dispatcher, secret, brand.id, repeat)
        t0 = time.perf_counter()
        await seed(db, clock, ws.id, [f"brd_bench{n:04d}" for n in range(200)], others)
        seeded = time.perf_counter() - t0
        t_large = await time_calls(dispatcher, secret, brand.id, repeat)
        await rt.close()
    ratio = t_large / t_small
    print(f"analytics summary and top posts, brand with {posts:,} posts (median of {repeat * 3} calls)")
    print(f"  {posts:>9,} other posts: {t_small * 1000:7.2f} ms per call")
    print(f"  {posts + others:>9,} other posts: {t_large * 1000:7.2f} ms per call   (bulk insert took {seeded:.1f} s)")
    print(f"  ratio: {ratio:.2f}x  (target <= 1.2x) {'OK' if ratio <= 1.2 else 'SLOWER THAN TARGET'}")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--posts", type=int, default=500)
    parser.add_argument("--others", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    anyio.run(main, args.posts, args.others, args.repeat)
