"""Repair derivatives: request latency as a ratio to get_media, and rendering time (the processing job: read
the source, transform, store, probe, thumbnails, settle) as a ratio to a bare Pillow open-crop-save of the same
picture, all in one run on the embedded SQLite default.

The request ratio shows what checking an option costs (recomputing the options for the current source,
integration and policy, creating the item, enqueueing the job); the render ratio shows the overhead of the
job around the unavoidable pixel work.

    python bench/repair_derivative.py [--repeat 30] [--width 3000 --height 1200]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scratch import scratch_runtime
from schemas.ids import new_id
from schemas.platforms import VALIDATION_VERSION
from schemas.preflight import MediaFacts
from schemas.scopes import ALL_SCOPES
from server.dispatch import Dispatcher
from server.worker import Worker
from storage.tables.media import Media
from tools import catalogue
from tools.media.items import blobs
from tools.operator import actions as operator
from tools.schedules.repair_options import compute_repair_options


def picture(width: int, height: int) -> bytes:
    img = Image.radial_gradient("L").resize((width, height)).convert("RGB")
    out = io.BytesIO()
    img.save(out, "JPEG", quality=90)
    return out.getvalue()


def floor_render(data: bytes, box: tuple[int, int, int, int]) -> None:
    with Image.open(io.BytesIO(data)) as img:
        img.convert("RGB").crop(box).save(io.BytesIO(), "JPEG", quality=92)


async def main(repeat: int, width: int, height: int) -> None:
    data = picture(width, height)
    with tempfile.TemporaryDirectory() as tmp:
        rt = await scratch_runtime(tmp)
        clock = rt.clock
        now = clock.now()
        async with rt.db.session(write=True) as s:
            ws = await operator.create_workspace(s, now, "Bench", plan_id="agency")
            brand = await operator.create_brand(s, now, ws, "Bench brand")
            ig = await operator.connect_integration(s, now, brand, "instagram", username="bench")
            _key, secret = await operator.create_key(s, now, ws, "bench", ALL_SCOPES, role="admin")
            source = Media(id=new_id("med"), workspace_id=ws.id, brand_id=brand.id, file_name="wide.jpg",
                           content_type="image/jpeg", status="completed", source="upload", kind="image",
                           width=width, height=height, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                           asset_id=new_id("ast"), created_at=now, updated_at=now)

            async def one() -> AsyncIterator[bytes]:
                yield data

            source.storage_key = (await blobs(rt.settings).put_stream(f"{brand.id}/{source.id}/original",
                                                                      one())).key
            s.add(source)
        facts = MediaFacts(id=source.id, status="completed", kind="image", content_type="image/jpeg", width=width,
                           height=height, size=len(data), sha256=source.sha256)
        crop = next(o for o in compute_repair_options(integration_id=ig.id, platform="instagram",
                                                      post_type="GRID_POST", media=facts) if o.mode == "centre_crop")
        assert crop.available, crop.explanation
        d = Dispatcher(rt)
        repair, read = catalogue.get("repair_media_derivative"), catalogue.get("get_media")
        body = {"brand_id": brand.id, "media_id": source.id, "integration_id": ig.id, "platform": "instagram",
                "post_type": "GRID_POST", "mode": "centre_crop", "repair_option_id": crop.id,
                "policy_version": VALIDATION_VERSION}

        request, reads, renders, floors = [], [], [], []
        media_id = ""
        for n in range(repeat):
            t = time.perf_counter()
            out = await d.invoke(repair, {**body, "idempotency_key": f"bench-{n}"}, token=secret)
            request.append(time.perf_counter() - t)
            assert out.status == 201 and out.body is not None, out.body
            media_id = out.body["data"]["media"]["id"]
            t = time.perf_counter()
            got = await d.invoke(read, {"brand_id": brand.id, "media_id": source.id}, token=secret)
            reads.append(time.perf_counter() - t)
            assert got.status == 200
            t = time.perf_counter()
            assert await Worker(rt).run_once() == 1
            renders.append(time.perf_counter() - t)
            assert crop.crop is not None
            box = (crop.crop.x, crop.crop.y, crop.crop.x + crop.crop.width, crop.crop.y + crop.crop.height)
            t = time.perf_counter()
            floor_render(data, box)
            floors.append(time.perf_counter() - t)
        async with rt.db.session(write=False) as s:
            done = await s.get(Media, media_id)
            assert done is not None and done.status == "completed", done and done.failure_code
        await rt.db.dispose()

    def ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    target = crop.target
    assert target is not None  # the bench picked an available option
    print(f"source {width}x{height} JPEG ({len(data)} bytes) -> centre_crop {target.width}x"
          f"{target.height}, {repeat} runs (medians)")
    print(f"request: repair_media_derivative {ms(request):.2f} ms vs get_media {ms(reads):.2f} ms, "
          f"ratio {ms(request) / ms(reads):.2f}x")
    print(f"render: processing job {ms(renders):.1f} ms vs bare Pillow open+crop+save {ms(floors):.1f} ms, "
          f"ratio {ms(renders) / ms(floors):.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--width", type=int, default=3000)
    parser.add_argument("--height", type=int, default=1200)
    args = parser.parse_args()
    anyio.run(main, args.repeat, args.width, args.height)
