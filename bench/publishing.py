"""Publishing worker throughput, as a ratio to a floor measured in the same run.

`--provider sandbox` (default): N due approved Schedules with one target each are published by worker passes
(claim, run + target + publication rows, attempt commit, sandbox publish with its file ledger, settle commit with
notifications, finish commit). The floor is N Publication rows inserted one per committed transaction on the same
database (the least a durable per-target record can cost); the ratio says how many bare durable writes one
published target costs.

`--provider bluesky`: the same worker passes against the local Bluesky PDS that `bash .ci/pds/install.sh`
installs (a connected account with its sealed session, facets, a TID key, `putRecord`), printed beside the
sandbox figure of the same run. The floor is N bare `putRecord` calls of the same records over one keep-alive
client with a ready session; the ratio says what socialpub (worker, database, vault, adapter) adds per post.

    python bench/publishing.py [--schedules 300] [--provider sandbox|bluesky] [--database postgresql+asyncpg://...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import select

from bench.scratch import scratch_runtime
from providers import bluesky
from providers.bluesky_text import record_key
from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication
from tests.networks.pds import PdsUnavailable, start_pds, stop_pds
from tools.operator import actions as operator
from tools.publishing import worker as publishing
from tools.schedules.rows import new_schedule

PLATFORMS = ("instagram", "facebook", "linkedin")
TEXT = "Bench post: https://example.com/bench #bench"


async def _publish_all(rt, schedules: int, accounts: list, settings: dict) -> tuple[float, str, list[str]]:
    """Seconds for worker passes to publish `schedules` due Schedules spread over `accounts`; the item and
    Schedule IDs."""
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        brand = await s.get(Brand, accounts[0].brand_id)
        item = ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id, created_by="usr_bench",
                           name="Bench post", single_copy={"caption": TEXT, "hashtags": [], "title": None},
                           settings=settings, created_at=now, updated_at=now)
        s.add(item)
        await s.flush()
        scheduled = []
        for n in range(schedules):
            scheduled.append(new_schedule(s, brand=brand, content_item_id=item.id, integration_ids=[accounts[n % len(accounts)].id],
                         scheduled_at=now, approval_status="approved", source="api", user_id="usr_bench",
                         key_id="key_bench", now=now).id)
    rt.clock.advance(seconds=1)
    start = time.perf_counter()
    done = 0
    while True:
        n = await publishing.publish_due(rt, "bench")
        if not n:
            break
        done += n
    assert done == schedules, (done, schedules)
    return time.perf_counter() - start, item.id, scheduled


async def _published(rt) -> int:
    async with rt.db.session(write=False) as s:
        return len((await s.exec(select(Publication.id).where(Publication.status == "published"))).all())


async def main(schedules: int, database: str | None, provider: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rt = await scratch_runtime(tmp, database)
        now = rt.clock.now()
        async with rt.db.session(write=True) as s:
            ws = await operator.create_workspace(s, now, f"Bench {new_id('x')}", plan_id="agency")
            brand = await operator.create_brand(s, now, ws, "Bench brand")
            accounts = [await operator.connect_integration(s, now, brand, p) for p in PLATFORMS]
            await operator.create_key(s, now, ws, "bench", ALL_SCOPES)
        sandbox_s, item_id, scheduled = await _publish_all(rt, schedules, accounts, {
            "instagram_settings": {"media_ids": [], "post_type": "GRID_POST"},
            "facebook_settings": {"media_ids": [], "post_type": "FB_TEXT"},
            "linkedin_settings": {"media_ids": [], "post_type": "LI_TEXT"}})
        published = sum(v for v in rt.providers["sandbox"].ledger.publishes().values())
        assert published == schedules, published

        bluesky_s = putrecord_s = None
        if provider == "bluesky":
            try:
                pds = start_pds(Path(tmp) / "pds")
            except PdsUnavailable as exc:
                sys.exit(f"publishing --provider bluesky: {exc}")
            try:
                who = pds.create_account("bench")
                connection = await bluesky.connect(who.service, who.handle, who.app_password)
                async with rt.db.session(write=True) as s:
                    account = await operator.connect_integration(
                        s, rt.clock.now(), await s.get(Brand, brand.id), "bluesky", provider="bluesky",
                        connection=connection, settings=rt.settings)
                before = await _published(rt)
                bluesky_s, _, _ = await _publish_all(rt, schedules, [account],
                                               {"bluesky_settings": {"media_ids": [], "post_type": "BS_TEXT"}})
                assert await _published(rt) - before == schedules
                records = _count_records(pds.url, who.did)
                assert records == schedules, records  # every target is one post on the PDS
                putrecord_s = await _bare_putrecords(pds.url, who.did, connection.credentials["access_jwt"],
                                                     schedules)
            finally:
                stop_pds(pds)

        start = time.perf_counter()
        for n in range(schedules):
            async with rt.db.session(write=True) as s:
                s.add(Publication(id=new_id("pub"), workspace_id=ws.id, brand_id=brand.id,
                                  schedule_id=scheduled[n], execution_id="run_bench", target_id=new_id("ptg"),
                                  platform="instagram", integration_id=accounts[0].id, post_id=item_id,
                                  status="published", created_at=now + timedelta(seconds=n), updated_at=now))
        insert_s = time.perf_counter() - start
        await rt.close()

    backend = "postgresql" if database else "sqlite"
    print(f"backend: {backend}; targets: {schedules} per provider (one per Schedule)")
    print(f"worker, sandbox:      {sandbox_s:8.3f} s  {schedules / sandbox_s:9.1f} targets published/s")
    if bluesky_s is not None and putrecord_s is not None:
        print(f"worker, bluesky PDS:  {bluesky_s:8.3f} s  {schedules / bluesky_s:9.1f} targets published/s")
        print(f"bare putRecord:       {putrecord_s:8.3f} s  {schedules / putrecord_s:9.1f} posts/s (floor)")
        print(f"bare inserts:         {insert_s:8.3f} s  {schedules / insert_s:9.1f} committed inserts/s")
        print(f"ratio (worker time per Bluesky target / bare putRecord): {bluesky_s / putrecord_s:.1f}x")
        return
    print(f"bare inserts:         {insert_s:8.3f} s  {schedules / insert_s:9.1f} committed inserts/s")
    print(f"ratio (worker time per target / bare insert): {sandbox_s / insert_s:.1f}x")


def _count_records(url: str, did: str) -> int:
    count, cursor = 0, None
    while True:
        answer = httpx.get(f"{url}/xrpc/com.atproto.repo.listRecords", params={
            "repo": did, "collection": "app.bsky.feed.post", "limit": 100, **({"cursor": cursor} if cursor else {})})
        answer.raise_for_status()
        page = answer.json()
        count += len(page["records"])
        cursor = page.get("cursor")
        if not cursor or not page["records"]:
            return count


async def _bare_putrecords(url: str, did: str, access_jwt: str, posts: int) -> float:
    """The floor: the same records written with bare putRecord calls over one keep-alive client."""
    headers = {"Authorization": f"Bearer {access_jwt}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
        start = time.perf_counter()
        for n in range(posts):
            answer = await client.post("/xrpc/com.atproto.repo.putRecord", json={
                "repo": did, "collection": "app.bsky.feed.post", "rkey": record_key(f"sp_floor_{n}"),
                "record": {"$type": "app.bsky.feed.post", "text": TEXT, "createdAt": "2026-01-05T09:00:00.000Z"}})
            answer.raise_for_status()
        return time.perf_counter() - start


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=300)
    parser.add_argument("--database", default=None, help="a scratch database URL (default: SQLite in a temp dir)")
    parser.add_argument("--provider", choices=("sandbox", "bluesky"), default="sandbox",
                        help="bluesky: also publish to the local PDS (.ci/pds/install.sh), beside the sandbox figure")
    args = parser.parse_args()
    anyio.run(main, args.schedules, args.database, args.provider)
