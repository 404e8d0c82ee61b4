"""Upload capabilities: signed, short-lived, single-use PUT URLs on this service, and receiving their bytes.

An upload URL is `{public_url}/media/uploads/<media_id>?expires=<unix>&signature=<hmac>`. The HMAC (see
tools.services.signing) binds the media ID, the flow, the declared content type, size and SHA-256 and the expiry, so
none of them can be changed without the server's key. Holding the URL is the whole authority: no API key,
and the bytes are not public (assets are served only once processing has verified them).

Receiving streams the body to the blob store (never whole in memory), refuses a body longer or shorter than
declared or with another hash (nothing is kept), and consumes the capability by a conditional update, so
a second PUT (or a race of two) can never replace bytes that were accepted.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from sqlalchemy import update
from sqlmodel import col

from schemas.errors import ApiError, issue
from schemas.ids import is_id
from schemas.media import BY_CONTENT_TYPE, MAX_BYTES, UPLOAD_TTL_SECONDS
from schemas.settings import Settings
from storage import queue
from storage.blobs import BlobRejected
from storage.tables.media import Media
from tools.media.items import UPLOAD_ROUTE, blob_key, blobs, media_item
from tools.runtime import Runtime
from tools.services import signing

log = logging.getLogger("socialpub.media")

PURPOSE = "media-upload"
PROCESS_JOB = "media.process"
INVALID_LINK = "This upload link is not valid. Use the exact upload URL you were given, or start a new upload."


def upload_expiry(now: datetime) -> datetime:
    # Whole seconds: the expiry travels in the URL as a Unix time.
    return (now + timedelta(seconds=UPLOAD_TTL_SECONDS)).replace(microsecond=0)


def incoming_key(media_id: str) -> str:
    return f"incoming/{media_id}"


def presigned(settings: Settings, media: Media) -> tuple[str, dict[str, str]] | None:
    """(url, headers) of a presigned PUT when the store is an object store and `media` is an upload session; the
    worker tick that accepts what arrives there is tools/media/incoming.py."""
    store = blobs(settings)
    presign = getattr(store, "presign_put", None)
    if presign is None or media.source != "upload" or media.size is None or not media.sha256:
        return None
    return presign(incoming_key(media.id), content_type=media.content_type, size=media.size, sha256=media.sha256,
                   expires_in=UPLOAD_TTL_SECONDS)


def _parts(media: Media, expires: int) -> tuple[str, ...]:
    # Upload sessions bind the declared size and hash; the legacy flow declares neither (they are measured).
    declared = media.source == "upload"
    return (media.id, media.source, media.content_type, str(media.size) if declared else "",
            (media.sha256 or "") if declared else "", str(expires))


def upload_url(settings: Settings, media: Media) -> str:
    assert media.upload_expires_at is not None
    direct = presigned(settings, media)
    if direct is not None:  # an object store: the client PUTs straight to it
        return direct[0]
    expires = int(media.upload_expires_at.timestamp())
    signature = signing.sign(settings, PURPOSE, *_parts(media, expires))
    path = UPLOAD_ROUTE.format(media_id=media.id)
    return f"{settings.public_url.rstrip('/')}{path}?{urlencode({'expires': expires, 'signature': signature})}"


def upload_headers(media: Media, settings: Settings | None = None) -> dict[str, str]:
    if settings is not None:
        direct = presigned(settings, media)
        if direct is not None:
            return direct[1]
    headers = {"Content-Type": media.content_type}
    if media.source == "upload" and media.size is not None:
        headers["Content-Length"] = str(media.size)
    return headers


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


async def enqueue_processing(session: Any, now: datetime, media_id: str) -> None:
    await queue.enqueue(session, now, PROCESS_JOB, {"media_id": media_id}, dedupe_key=f"media:{media_id}")


async def receive_upload(rt: Runtime, media_id: str, *, expires: str | None, signature: str | None,
                         content_type: str | None, content_length: str | None,
                         chunks: AsyncIterable[bytes]) -> dict[str, Any]:
    """Store the body of a PUT to an upload URL. Returns the Media item; raises ApiError."""
    if not (is_id(media_id, "med") and expires and expires.isdigit() and len(expires) <= 12 and signature
            and len(signature) <= 100):
        raise ApiError("NOT_FOUND", INVALID_LINK, next_action="create_media_upload_session")
    async with rt.db.session(write=False) as session:
        media = await session.get(Media, media_id)
    if (media is None or media.source not in ("upload", "legacy_upload") or media.upload_expires_at is None
            or not signing.verify(rt.settings, signature, PURPOSE, *_parts(media, int(expires)))
            or int(expires) != int(media.upload_expires_at.timestamp())):
        raise ApiError("NOT_FOUND", INVALID_LINK, next_action="create_media_upload_session")
    now = rt.clock.now()
    if media.uploaded_at is not None or media.status != "pending_upload":
        raise ApiError("CONFLICT", "This upload link was already used: the bytes were received. Read the media item "
                                   "(get_media) to follow its processing.", next_action="get_media")
    if now >= media.upload_expires_at.astimezone(UTC):
        raise ApiError("UPLOAD_LINK_EXPIRED", next_action="create_media_upload_session")

    kind = BY_CONTENT_TYPE[media.content_type].kind
    cap = MAX_BYTES[kind]
    if _media_type(content_type) != media.content_type:
        raise ApiError("INVALID_HEADER", f"Send the bytes with `Content-Type: {media.content_type}`, the type "
                                         "declared for this upload.",
                       issues=[issue("$.headers.content_type", "MISMATCH", "Must equal the declared content type.")])
    declared = media.size if media.source == "upload" else None
    if content_length is not None:
        if not content_length.strip().isdigit():
            raise ApiError("INVALID_HEADER", "Content-Length must be a number of bytes.")
        length = int(content_length)
        if length > (declared if declared is not None else cap):
            raise ApiError("REQUEST_TOO_LARGE", _size_message(declared, cap), details={"max_bytes": declared or cap})
        if declared is not None and length < declared:
            raise _too_small(declared)

    store = blobs(rt.settings)
    key = blob_key(media, "original")
    try:
        stored = await store.put_stream(key, chunks, expected_size=declared, max_bytes=cap,
                                        expected_sha256=media.sha256 if media.source == "upload" else None)
    except BlobRejected as exc:
        if exc.reason == "too_large":
            raise ApiError("REQUEST_TOO_LARGE", _size_message(declared, cap),
                           details={"max_bytes": declared or cap}) from None
        if exc.reason == "too_small":
            raise _too_small(declared or 0) from None
        raise ApiError("DOMAIN_VALIDATION_FAILED", "The bytes received do not have the SHA-256 declared for this "
                                                   "upload; nothing was kept. Check the file and PUT it again.",
                       issues=[issue("$.body", "HASH_MISMATCH", "SHA-256 of the body differs from the declared sha256.")]
                       ) from None
    if stored.size == 0:
        await store.delete(key)
        raise ApiError("MALFORMED_REQUEST", "The upload body is empty; send the file's bytes.",
                       issues=[issue("$.body", "EMPTY", "Send at least one byte.")])

    # Consume the capability: only one PUT can move the record out of "bytes expected".
    now = rt.clock.now()
    values: dict[str, Any] = {"uploaded_at": now, "updated_at": now, "storage_key": key}
    if media.source == "upload":
        values["status"] = "processing"
    else:
        values.update(size=stored.size, sha256=stored.sha256)
    async with rt.db.session(write=True) as session:
        result = await session.exec(update(Media).where(
            col(Media.id) == media.id, col(Media.status) == "pending_upload", col(Media.uploaded_at).is_(None)).values(**values))
        won = result.rowcount == 1
        if won and media.source == "upload":
            await enqueue_processing(session, now, media.id)
    if not won:
        await store.delete(key)
        raise ApiError("CONFLICT", "This upload link was already used: the bytes were received. Read the media item "
                                   "(get_media) to follow its processing.", next_action="get_media")
    rt.wake_worker()
    async with rt.db.session(write=False) as session:
        fresh = await session.get(Media, media.id)
    assert fresh is not None
    return media_item(fresh, rt.settings, rt.clock.now())


def _size_message(declared: int | None, cap: int) -> str:
    if declared is not None:
        return f"The body is longer than the {declared} bytes declared for this upload; nothing was kept."
    return f"Files of this type are limited to {cap} bytes; nothing was kept."


def _too_small(declared: int) -> ApiError:
    return ApiError("MALFORMED_REQUEST", f"The body is shorter than the {declared} bytes declared for this upload; "
                                         "nothing was kept. PUT the whole file again.",
                    issues=[issue("$.body", "TOO_SHORT", "Send exactly the declared number of bytes.")])
