"""Rendering repair derivatives: the processing job's step for items with source `repair_derivative`.

The route (tools.media.repair) records the accepted repair option as the item's `derivation` and enqueues
the ordinary media processing job; `render_derivative` then applies exactly that geometry to the source's
bytes (tools.media.transform: Pillow for images, PyAV for video), stores the result as the derivative's own
blob and hands the probe of the output back to the job, which stores the facts and thumbnails and settles
the item like any other media. The source row and its bytes are only read.

A source that has changed since the option was accepted (other hash or size), or is no longer usable, fails
the derivative (`REPAIR_SOURCE_CHANGED` / `REPAIR_SOURCE_UNAVAILABLE`) instead of rendering something else.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from sqlmodel import select

from schemas.errors import ApiError
from schemas.media import BY_CONTENT_TYPE, MAX_BYTES
from schemas.media_repair import Derivation
from storage.blobs import BlobRejected
from storage.tables.brands import Brand
from storage.tables.media import READY_STATUSES, Media
from tools.media.items import blob_key, blobs, check_media_bytes
from tools.media.probe import ProbeResult
from tools.media.transform import IMAGE_OUTPUT, Geometry, TransformError, explicit, transform_file
from tools.runtime import Runtime

SOURCE = "repair_derivative"
READ_CHUNK = 1024 * 1024


def output_content_type(content_type: str) -> str:
    """The content type a transform of `content_type` produces (images keep their format, a still GIF becomes
    PNG; video becomes MP4)."""
    media_type = BY_CONTENT_TYPE[content_type]
    if media_type.kind == "video":
        return "video/mp4"
    return IMAGE_OUTPUT.get(media_type.family.upper(), ("PNG", "image/png"))[1]


def derivative_file_name(source_name: str, mode: str, width: int, height: int, content_type: str,
                         limit: int) -> str:
    """`photo.jpg` -> `photo-centre_crop-764x400.jpg` (bounded to `limit` characters)."""
    stem = source_name.rsplit(".", 1)[0] if "." in source_name[1:] else source_name
    suffix = f"-{mode}-{width}x{height}{BY_CONTENT_TYPE[content_type].extensions[0]}"
    return stem[: max(1, limit - len(suffix))] + suffix


def parse_colour(value: str | None) -> tuple[int, int, int]:
    """`#rrggbb` or `#rgb` -> (r, g, b); black when absent."""
    text = (value or "#000000").lstrip("#")
    if len(text) == 3:
        text = "".join(ch * 2 for ch in text)
    if len(text) != 6:
        raise ValueError(f"not a colour: {value!r}")
    return int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16)


def geometry_of(d: Derivation) -> Geometry:
    """The exact transform a repair option describes (checked for consistency by `explicit`)."""
    W, H = d.source.width, d.source.height
    if d.mode == "centre_crop":
        assert d.crop is not None
        return explicit(W, H, d.mode, crop=(d.crop.x, d.crop.y, d.crop.width, d.crop.height),
                        scaled=(d.target.width, d.target.height), offset=(0, 0),
                        size=(d.target.width, d.target.height))
    assert d.resize is not None and d.pad is not None
    return explicit(W, H, d.mode, crop=(0, 0, W, H), scaled=(d.resize.width, d.resize.height),
                    offset=(d.pad.left, d.pad.top), size=(d.target.width, d.target.height))


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    fh = await anyio.to_thread.run_sync(lambda: open(path, "rb"))  # noqa: SIM115  (closed below)
    try:
        while data := await anyio.to_thread.run_sync(fh.read, READ_CHUNK):
            yield data
    finally:
        fh.close()


async def render_derivative(rt: Runtime, media: Media) -> tuple[Media, ProbeResult]:
    """Render `media` (a derivative without bytes yet) from its source; returns the updated row and the probe
    of the output. Raises TransformError (the item fails with its code) or ProbeError."""
    derivation = Derivation.model_validate(media.derivation or {})
    async with rt.db.session(write=False) as session:
        source = (await session.exec(select(Media).where(
            Media.id == media.derived_from_id, Media.brand_id == media.brand_id,
            Media.workspace_id == media.workspace_id))).first()
    if source is None or source.status not in READY_STATUSES or not source.storage_key:
        raise TransformError("REPAIR_SOURCE_UNAVAILABLE", "The source media item is no longer usable; run preflight "
                                                          "again and repair the media it reports.")
    if source.sha256 != derivation.source_sha256 or (source.width, source.height) != (
            derivation.source.width, derivation.source.height):
        raise TransformError("REPAIR_SOURCE_CHANGED", "The source media changed after the repair option was "
                                                      "accepted; run preflight again and use a current option.")
    geometry = geometry_of(derivation)
    colour = parse_colour(derivation.background)
    store = blobs(rt.settings)
    key = blob_key(media, "original")
    scratch = Path(rt.settings.home) / "media" / "tmp"
    await anyio.to_thread.run_sync(functools.partial(scratch.mkdir, parents=True, exist_ok=True))
    async with store.local_path(source.storage_key) as src:
        with tempfile.TemporaryDirectory(dir=scratch) as tmp:
            dst = Path(tmp) / "derivative"
            _, out_type, result = await anyio.to_thread.run_sync(functools.partial(
                transform_file, src, dst, source.content_type, derivation.mode, geometry=geometry, pad_colour=colour))
            cap = MAX_BYTES[BY_CONTENT_TYPE[out_type].kind]
            try:
                stored = await store.put_stream(key, _file_chunks(dst), max_bytes=cap)
            except BlobRejected:
                raise TransformError("TOO_LARGE", f"The derivative is larger than the {cap}-byte limit for its "
                                                  "type.") from None
    now = rt.clock.now()
    async with rt.db.session(write=True) as session:
        row = await session.get(Media, media.id)
        brand = await session.get(Brand, media.brand_id)
        if row is None or brand is None:
            await store.delete(key)
            raise TransformError("REPAIR_SOURCE_UNAVAILABLE", "The derivative's record is gone.")
        try:  # the derivative's size is known only now: the per-brand byte cap is checked here (as for imports)
            await check_media_bytes(session, brand, stored.size, rt.settings.upgrade_url)
        except ApiError as exc:
            await store.delete(key)
            raise TransformError("PLAN_LIMIT_REACHED", exc.message or "The plan's media storage cap is "
                                                                      "reached.") from None
        row.storage_key, row.size, row.sha256 = key, stored.size, stored.sha256
        row.content_type, row.uploaded_at, row.updated_at = out_type, now, now
    return row, result


def derivation_record(option: Any, background: str | None) -> dict[str, Any]:
    """The `derivation` stored with the new item: the accepted option's identity and geometry."""
    return Derivation(
        repair_option_id=option.id, mode=option.mode, integration_id=option.integration_id,
        platform=option.platform, post_type=option.post_type, policy_version=option.policy_version,
        source_sha256=option.source_sha256, source=option.source, target=option.target, crop=option.crop,
        resize=option.resize, pad=option.pad, safe_area=option.safe_area,
        background=background if option.mode == "pad" else None, crop_loss=option.crop_loss,
        pad_share=option.pad_share, scale=option.scale,
    ).model_dump(mode="json")
