"""Publishing worker throughput against the sandbox provider, as a ratio to bare inserts, one run.

N due approved Schedules with one target each are published by one worker pass (claim, run + target +
publication rows, attempt commit, sandbox publish with its file ledger, settle commit with notifications,
finish commit). The floor is N Publication rows inserted one per committed transaction on the same database
(the least a durable per-target record can cost). The ratio says how many bare durable writes one published
target costs.

    python bench/publishing.py [--schedules 300] [--database postgresql+asyncpg://...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import scratch_runtime
from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication
from tools.operator import actions as operator
from tools.publishing import worker as publishing
from tools.schedules.rows import new_schedule

PLATFORMS = ("instagram", "facebook", "linkedin")


async def main(schedules: int, database: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rt = await scratch_runtime(tmp, database)
        clock = rt.clock
        now = clock.now()
        async with rt.db.session(write=True) as s:
            ws = await operator.create_workspace(s, now, f"Bench {new_id('x')}", plan_id="agency")
            brand = await operator.create_brand(s, now, ws, "Bench brand")
            accounts = [await operator.connect_integration(s, now, brand, p) for p in PLATFORMS]
            await operator.create_key(s, now, ws, "bench", ALL_SCOPES)
            item = ContentItem(id=new_id("ci"), workspace_id=ws.id, brand_id=brand.id, created_by="usr_bench",
                               name="Bench post", single_copy={"caption": "Bench", "hashtags": ["b"], "title": None},
                               settings={"instagram_settings": {"media_ids": [], "post_type": "GRID_POST"},
                                         "facebook_settings": {"media_ids": [], "post_type": "FB_TEXT"},
                                         "linkedin_settings": {"media_ids": [], "post_type": "LI_TEXT"}},
                               created_at=now, updated_at=now)
            s.add(item)
            await s.flush()
            scheduled = []
            for n in range(schedules):
                scheduled.append(new_schedule(
                    s, brand=brand, content_item_id=item.id, integration_ids=[accounts[n % 3].id],
                    scheduled_at=now, approval_status="approved", source="api", user_id="usr_bench",
                    key_id="key_bench", now=now))
        clock.advance(seconds=1)

        start = time.perf_counter()
        done = 0
        while True:
            n = await publishing.publish_due(rt, "bench")
            if not n:
                break
            done += n
        worker_s = time.perf_counter() - start
        published = sum(v for v in rt.providers["sandbox"].ledger.publishes().values())
        assert done == schedules and published == schedules, (done, published)

        start = time.perf_counter()
        for n in range(schedules):
            async with rt.db.session(write=True) as s:
                s.add(Publication(id=new_id("pub"), workspace_id=ws.id, brand_id=brand.id,
                                  schedule_id=scheduled[n].id, execution_id="run_bench", target_id=new_id("ptg"),
                                  platform="instagram", integration_id=accounts[0].id, post_id=item.id,
                                  status="published", created_at=now + timedelta(seconds=n), updated_at=now))
        insert_s = time.perf_counter() - start
        await rt.close()

    backend = "postgresql" if database else "sqlite"
    print(f"backend: {backend}; targets: {schedules} (one per Schedule)")
    print(f"worker:       {worker_s:8.3f} s  {schedules / worker_s:9.1f} targets published/s")
    print(f"bare inserts: {insert_s:8.3f} s  {schedules / insert_s:9.1f} committed inserts/s")
    print(f"ratio (worker time per target / bare insert): {worker_s / insert_s:.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--database", default=None, help="a scratch database URL (default: SQLite in a temp dir)")
    args = parser.parse_args()
    anyio.run(main, args.schedules, args.database)
