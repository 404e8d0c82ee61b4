"""Upload sessions on an object store: the worker tick that accepts what arrived at a presigned PUT URL
(tools/media/uploads.py `presigned` makes the URLs).

With `SOCIALPUB_MEDIA_STORE=s3://...`, an upload session's URL is a presigned S3 PUT for the key
`incoming/<media_id>`, binding the declared content type, length and SHA-256 (S3 refuses other bytes), so
the bytes go straight to the store without passing through an API replica. The store cannot tell us that a
PUT finished, so `accept_incoming` (a worker tick) looks for the objects of open sessions, re-checks size and
SHA-256 while reading them once, copies them to the item's private key (a later PUT to the same URL can then
never replace accepted bytes), consumes the session with the same conditional update as a PUT to this service,
and starts processing. Objects left under `incoming/` (refused, or a second PUT) are deleted here when seen;
an S3 lifecycle rule expiring `incoming/` after a day catches the rest (docs/operations.md).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlmodel import col, select

from storage.blobs import DirectUploadStore
from storage.tables.media import Media
from tools.media.items import blob_key, blobs
from tools.media.uploads import enqueue_processing, incoming_key
from tools.runtime import Runtime

log = logging.getLogger("socialpub.media")

BATCH = 50  # sessions looked at per worker pass
GRACE = timedelta(minutes=15)  # a PUT started just before the session expired may still land


async def _verified(store: Any, key: str, media: Media) -> bool:
    digest, size = hashlib.sha256(), 0
    async for chunk in store.open_range(key):
        digest.update(chunk)
        size += len(chunk)
    return size == media.size and digest.hexdigest() == media.sha256


async def accept_incoming(rt: Runtime, worker_id: str) -> int:
    store = blobs(rt.settings)
    if not isinstance(store, DirectUploadStore):  # the local store receives uploads itself
        return 0
    now = rt.clock.now()
    async with rt.db.session(write=False) as session:
        waiting = (await session.exec(select(Media).where(
            Media.source == "upload", Media.status == "pending_upload", col(Media.uploaded_at).is_(None),
            col(Media.upload_expires_at) >= now - GRACE).order_by(col(Media.upload_expires_at)).limit(BATCH))).all()
    done = 0
    for media in waiting:
        incoming = incoming_key(media.id)
        if await store.size(incoming) is None:
            continue
        if not await _verified(store, incoming, media):
            log.warning("media %s: the object PUT to its upload URL has another size or SHA-256; deleted", media.id)
            await store.delete(incoming)
            continue
        key = blob_key(media, "original")
        await store.copy(incoming, key)
        values = {"uploaded_at": now, "updated_at": now, "storage_key": key, "status": "processing"}
        async with rt.db.session(write=True) as session:
            result = await session.exec(update(Media).where(
                col(Media.id) == media.id, col(Media.status) == "pending_upload", col(Media.uploaded_at).is_(None)).values(**values))
            won = result.rowcount == 1
            if won:
                await enqueue_processing(session, now, media.id)
        if not won:  # another worker accepted it first
            await store.delete(key)
        await store.delete(incoming)
        done += int(won)
    if done:
        rt.wake_worker()
    return done


TICKS = [accept_incoming]
