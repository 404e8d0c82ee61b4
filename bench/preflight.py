"""Preflight latency for 20 targets with media, as a ratio to a plain read of the same content item, one run.

Both calls go through the same dispatcher (auth, brand check, validation, one transaction) on the embedded
SQLite default, so the ratio isolates what preflight adds: loading integrations, media and the plan, running
every platform rule for 20 targets, and building the result with its fingerprint.

    python bench/preflight.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import scratch_runtime
from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from server.dispatch import Dispatcher
from storage.tables.media import Media
from tools import catalogue
from tools.operator import actions as operator

# 20 targets: two accounts on each of these ten platforms
PLATFORMS = ("instagram", "tiktok", "facebook", "youtube", "linkedin", "x", "bluesky", "threads", "pinterest",
             "telegram")


async def main(repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rt = await scratch_runtime(tmp)
        clock = rt.clock
        now = clock.now()
        async with rt.db.session(write=True) as s:
            ws = await operator.create_workspace(s, now, "Bench", plan_id="agency")
            brand = await operator.create_brand(s, now, ws, "Bench brand")
            accounts = [await operator.connect_integration(s, now, brand, p, username=f"{p}{n}")
                        for p in PLATFORMS for n in range(2)]
            _key, secret = await operator.create_key(s, now, ws, "bench", ALL_SCOPES, role="admin")
            images = []
            for n in range(4):
                m = Media(id=new_id("med"), workspace_id=ws.id, brand_id=brand.id, file_name=f"{n}.jpg",
                          content_type="image/jpeg", status="completed", source="upload", kind="image", width=1080,
                          height=1350, size=300_000, sha256="b" * 64, asset_id=new_id("ast"), created_at=now,
                          updated_at=now)
                s.add(m)
                images.append(m.id)
            video = Media(id=new_id("med"), workspace_id=ws.id, brand_id=brand.id, file_name="v.mp4",
                          content_type="video/mp4", status="completed", source="upload", kind="video", width=1080,
                          height=1920, duration=20.0, size=5_000_000, sha256="c" * 64, asset_id=new_id("ast"),
                          created_at=now, updated_at=now)
            s.add(video)
        d = Dispatcher(rt)
        body = {
            "brand_id": brand.id, "name": "Bench draft", "copy_mode": "single",
            "single_copy": {"caption": "A caption with one link https://example.com " + "and words " * 15,
                            "hashtags": ["coffee", "bench"], "title": "Bench title"},
            "instagram_settings": {"media_ids": images[:2], "post_type": "GRID_POST"},
            "tiktok_settings": {"media_ids": [video.id], "post_type": "VIDEO", "privacy_level": "SELF_ONLY",
                                "agreed_to_terms": True},
            "facebook_settings": {"media_ids": images[:1], "post_type": "FB_POST"},
            "youtube_settings": {"title": "Bench", "media_ids": [video.id], "post_type": "YT_VIDEO"},
            "linkedin_settings": {"media_ids": images[:1], "post_type": "LI_IMAGE"},
            "x_settings": {"media_ids": images[:2], "thread_parts": [{"text": "part two"}]},
            "bluesky_settings": {"media_ids": images[:1], "post_type": "BS_IMAGE"},
            "threads_settings": {"media_ids": images[:2], "post_type": "TH_CAROUSEL"},
            "pinterest_settings": {"media_ids": images[:1], "post_type": "PIN_IMAGE", "board_id": "board_recipes"},
            "telegram_settings": {"media_ids": images[:1], "post_type": "TG_PHOTO"},
        }
        created = await d.invoke(catalogue.get("create_content_item"), body, token=secret)
        assert created.status == 201 and created.body is not None, created.body
        item_id = created.body["data"]["content_item"]["id"]
        read_args = {"brand_id": brand.id, "content_item_id": item_id}
        pf_args = {**read_args, "integration_ids": sorted(a.id for a in accounts),
                   "scheduled_at": "2026-01-06T09:00:00Z", "approval_status": "pending_review"}
        read_ep, pf_ep = catalogue.get("get_content_item"), catalogue.get("preflight_content")
        first = await d.invoke(pf_ep, pf_args, token=secret)
        assert first.status == 200 and first.body is not None, first.body
        print("blockers:", sorted({(i["code"], i["platform"]) for i in first.body["data"]["blockers"]}))
        print(f"targets: {first.body['data']['target_count']}, can_schedule: {first.body['data']['can_schedule']}, "
              f"blockers: {len(first.body['data']['blockers'])}, warnings: {len(first.body['data']['warnings'])}")

        async def timed(ep, args) -> float:
            start = time.perf_counter()
            out = await d.invoke(ep, args, token=secret)
            assert out.status == 200
            return (time.perf_counter() - start) * 1000

        reads, checks = [], []
        for _ in range(repeat):  # interleaved, so machine load hits both alike
            reads.append(await timed(read_ep, read_args))
            checks.append(await timed(pf_ep, pf_args))
        read_ms, pf_ms = statistics.median(reads), statistics.median(checks)
        print(f"get_content_item (floor): {read_ms:8.2f} ms median of {repeat}")
        print(f"preflight_content, 20 targets with media: {pf_ms:8.2f} ms median of {repeat}")
        print(f"ratio preflight / read: {pf_ms / read_ms:.2f}x")
        await rt.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    anyio.run(main, parser.parse_args().repeat)
