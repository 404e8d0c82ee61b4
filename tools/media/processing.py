"""The media processing job: fetch an import's bytes (or render a repair derivative), look at them, make
thumbnails, settle the item.

`processing` -> `completed` (probe facts and thumbnails stored) or `failed` (a machine code and a safe reason
that `readiness.next_actions[].reason_code/guidance` report). Transient fetch failures are retried with
backoff; when the attempts run out the item fails instead of staying `processing` forever. The bytes of an
item that failed are deleted: they will never be served.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio

from schemas.errors import ApiError
from schemas.media import BY_CONTENT_TYPE, MAX_BYTES
from storage.blobs import BlobRejected
from storage.queue import RetryLater
from storage.tables.brands import Brand
from storage.tables.jobs import Job
from storage.tables.media import Media
from tools.media.derivatives import SOURCE as DERIVATIVE_SOURCE
from tools.media.derivatives import render_derivative
from tools.media.items import blob_key, blobs, check_media_bytes, import_policy, new_asset_id, thumbnail_key
from tools.media.probe import ProbeError, ProbeResult, content_type_for, probe_file, read_head, sniff
from tools.media.transform import TransformError
from tools.media.uploads import PROCESS_JOB
from tools.runtime import Runtime
from tools.services import event_log as record
from tools.services import fetch

log = logging.getLogger("socialpub.media")


class Failed(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(code)
        self.code = code
        self.reason = reason


async def _chunks_once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def process_media(rt: Runtime, job_id: str, payload: dict[str, Any]) -> None:
    media_id = str(payload.get("media_id", ""))
    async with rt.db.session(write=True) as session:
        media = await session.get(Media, media_id)
        job = await session.get(Job, job_id)
        if media is None or media.status not in ("processing", "ready_for_processing"):
            return  # already settled (a rerun after a lost lease) or never uploaded
        media.status, media.updated_at = "processing", rt.clock.now()
        last_attempt = job is None or job.attempts >= job.max_attempts
        snapshot = media  # detached after commit; its loaded attributes stay readable
    try:
        result: ProbeResult | None = None
        if snapshot.storage_key is None:
            if snapshot.source == DERIVATIVE_SOURCE:  # rendered from its source (the transform probes its output)
                snapshot, result = await render_derivative(rt, snapshot)
            elif snapshot.source != "remote_import" or not snapshot.source_url:
                raise Failed("NO_BYTES", "No bytes were received for this media item.")
            else:
                snapshot = await _fetch(rt, snapshot)
        if result is None:
            result = await _probe(rt, snapshot)
        await _complete(rt, snapshot, result)
    except fetch.FetchError as exc:
        if exc.retryable and not last_attempt:
            raise RetryLater(exc.code) from None
        await _fail(rt, snapshot, exc.code, f"The file could not be fetched: {exc.message}")
    except Failed as exc:
        await _fail(rt, snapshot, exc.code, exc.reason)
    except (ProbeError, TransformError) as exc:
        await _fail(rt, snapshot, exc.code, exc.message)
    except Exception:
        log.exception("processing media %s failed", media_id)
        await _fail(rt, snapshot, "PROCESSING_ERROR", "The file could not be processed.")


async def _fetch(rt: Runtime, media: Media) -> Media:
    """Download an import into the blob store (SSRF policy and pinning in tools.services.fetch)."""
    assert media.source_url is not None
    store = blobs(rt.settings)
    key = blob_key(media, "original")
    async with fetch.open_url(media.source_url, import_policy(rt.settings)) as response:
        served = response.content_type
        cap = MAX_BYTES[BY_CONTENT_TYPE[served].kind] if served in BY_CONTENT_TYPE else max(MAX_BYTES.values())
        if response.content_length is not None and response.content_length > cap:
            raise Failed("TOO_LARGE", f"The file is larger than the {cap}-byte limit for its type.")
        try:
            stored = await store.put_stream(key, response.chunks(), expected_size=response.content_length,
                                            max_bytes=cap)
        except BlobRejected:
            raise Failed("LENGTH_MISMATCH", "The remote server sent another number of bytes than it announced.") from None
    async with store.local_path(key) as path:
        head = await anyio.to_thread.run_sync(read_head, path)
    family = sniff(head)
    content_type = served if served in BY_CONTENT_TYPE else (content_type_for(family, head) if family else None)
    if content_type is None:
        await store.delete(key)
        raise Failed("CONTENT_TYPE_MISMATCH", "The URL did not serve a supported image or video.")
    if stored.size > MAX_BYTES[BY_CONTENT_TYPE[content_type].kind]:
        await store.delete(key)
        raise Failed("TOO_LARGE", "The file is larger than the limit for its type.")
    now = rt.clock.now()
    async with rt.db.session(write=True) as session:
        row = await session.get(Media, media.id)
        assert row is not None
        brand = await session.get(Brand, row.brand_id)
        assert brand is not None  # media rows go with their brand (deleted with it)
        try:  # an import's size is known only now: the per-brand byte cap is checked here
            await check_media_bytes(session, brand, stored.size, rt.settings.upgrade_url)
        except ApiError as exc:
            await store.delete(key)
            raise Failed("PLAN_LIMIT_REACHED", exc.message or "The plan's media storage cap is reached.") from None
        row.storage_key, row.size, row.sha256 = key, stored.size, stored.sha256
        row.content_type, row.uploaded_at, row.updated_at = content_type, now, now
        return row


async def _probe(rt: Runtime, media: Media) -> ProbeResult:
    assert media.storage_key is not None
    async with blobs(rt.settings).local_path(media.storage_key) as path:
        return await anyio.to_thread.run_sync(probe_file, path, media.content_type)


async def _complete(rt: Runtime, media: Media, result: ProbeResult) -> None:
    store = blobs(rt.settings)
    thumbs: dict[str, str] = {}
    for name, data in (("large", result.thumbnail_large), ("small", result.thumbnail_small)):
        if data:
            asset_id = new_asset_id()
            await store.put_stream(thumbnail_key(media, asset_id), _chunks_once(data))
            thumbs[name] = asset_id
    probe = result.probe
    now = rt.clock.now()
    async with rt.db.session(write=True) as session:
        row = await session.get(Media, media.id)
        if row is None or row.status != "processing":
            return
        row.kind, row.format, row.width, row.height = probe.kind, probe.format, probe.width, probe.height
        row.duration, row.codec, row.frame_rate = probe.duration, probe.codec, probe.frame_rate
        row.has_audio, row.bit_rate = probe.has_audio, probe.bit_rate
        row.thumbnail_large_id, row.thumbnail_small_id = thumbs.get("large"), thumbs.get("small")
        row.status, row.failure_code, row.failure_reason = "completed", None, None
        row.processed_at = row.updated_at = now
        record.media(session, now, row, "media.ready")


async def _fail(rt: Runtime, media: Media, code: str, reason: str) -> None:
    now = rt.clock.now()
    async with rt.db.session(write=True) as session:
        row = await session.get(Media, media.id)
        if row is None or row.status in ("completed", "failed"):
            return
        key = row.storage_key
        row.status, row.failure_code, row.failure_reason = "failed", code[:60], reason[:500]
        row.storage_key, row.processed_at, row.updated_at = None, now, now
        record.media(session, now, row, "media.failed")
    if key:
        await blobs(rt.settings).delete(key)


JOBS = {PROCESS_JOB: process_media}
