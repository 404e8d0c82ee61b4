"""Released content list (`GET .../content-items`): page time at 100,000 items vs 1,000 items, one run.

The list is keyset-paginated on (updated_at, id) with the index ix_content_items_brand_updated, so a page
costs the same however many items the brand has. This seeds 1,000 items, times pages (the first page and a
page resumed from a cursor in the middle, both directions), grows the brand to 100,000 items with bulk
inserts and times the same pages again. Prints both medians and the ratio (target: within 1.5x).

    python bench/content_list.py [--small 1000] [--large 100000] [--repeat 40]
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
from storage.tables.content import ContentItem
from tools import catalogue
from tools.operator import actions as operator

START = "2026-01-05T09:00:00.000Z"
BATCH = 5_000


async def seed(db: Database, clock: Clock, workspace, brand, user_id: str, start: int, stop: int) -> list[str]:
    base = clock.now()
    ids = []
    for lo in range(start, stop, BATCH):
        rows = []
        for n in range(lo, min(stop, lo + BATCH)):
            at = base + timedelta(milliseconds=n)
            item_id = new_id("ci", int(at.timestamp() * 1000))
            ids.append(item_id)
            rows.append({"id": item_id, "workspace_id": workspace.id, "brand_id": brand.id, "created_by": user_id,
                         "name": f"Draft {n}", "copy_mode": "single",
                         "single_copy": {"caption": f"Caption number {n} " * 4, "hashtags": ["bench"], "title": None},
                         "platform_copy": None,
                         "settings": {"instagram_settings": {"media_ids": [], "post_type": "REEL", "trial_reel": None,
                                                             "graduation_strategy": None, "collaborators": []}},
                         "intended_integration_ids": [], "thumbnail_media_id": None, "thumbnail_timestamp": 0.0,
                         "created_at": at, "updated_at": at})
        async with db.write_engine.begin() as conn:
            await conn.execute(insert(ContentItem), rows)
    return ids


async def time_pages(dispatcher: Dispatcher, secret: str, brand_id: str, ids: list[str], repeat: int) -> float:
    middle = ids[len(ids) // 2]
    first = await dispatcher.invoke(catalogue.get("list_content_items"), {"brand_id": brand_id}, token=secret)
    assert first.body is not None and len(first.body["data"]["items"]) == 20, first.body  # full pages, or the bench times short ones
    queries = [{}, {"cursor": middle}, {"order_direction": "asc"}, {"order_direction": "asc", "cursor": middle}]
    return await median_call(dispatcher, secret,
                             [("list_content_items", {"brand_id": brand_id, **q}) for q in queries], repeat)


async def main(small: int, large: int, repeat: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        rt = await scratch_runtime(tmp, start=START)
        db, clock = rt.db, rt.clock
        dispatcher = Dispatcher(rt)
        async with db.session(write=True) as s:
            ws = await operator.create_workspace(s, clock.now(), "bench")
            brand = await operator.create_brand(s, clock.now(), ws, "bench brand")
            other = await operator.create_brand(s, clock.now(), ws, "other brand")
            key, secret = await operator.create_key(s, clock.now(), ws, "bench", ("posts:read",))
        ids = await seed(db, clock, ws, brand, key.user_id, 0, small)
        await seed(db, clock, ws, other, key.user_id, 0, small)  # another brand's rows share the table
        t_small = await time_pages(dispatcher, secret, brand.id, ids, repeat)
        t0 = time.perf_counter()
        ids += await seed(db, clock, ws, brand, key.user_id, small, large)
        await seed(db, clock, ws, other, key.user_id, small, large // 10)
        seeded = time.perf_counter() - t0
        t_large = await time_pages(dispatcher, secret, brand.id, ids, repeat)
        await rt.close()
    ratio = t_large / t_small
    print(f"released content list, limit 20 (median of {repeat * 4} pages: first, from a middle cursor, both "
          "directions)")
    print(f"  {small:>7,} items: {t_small * 1000:7.2f} ms per page")
    print(f"  {large:>7,} items: {t_large * 1000:7.2f} ms per page   (bulk insert of {large - small:,} rows took "
          f"{seeded:.1f} s)")
    print(f"  ratio: {ratio:.2f}x  (target <= 1.5x) {'OK' if ratio <= 1.5 else 'SLOWER THAN TARGET'}")
    return ratio


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    anyio.run(main, args.small, args.large, args.repeat)
