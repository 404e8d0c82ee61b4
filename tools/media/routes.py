"""Media routes: upload sessions, URL imports, the legacy upload flow, list and read.

Bytes never pass through these handlers: uploads go to a signed PUT capability (tools.media.uploads, served by
server/mounts/media.py) and imports are fetched by the processing job (tools.media.processing), which also
probes the bytes. Handlers create records, check input and read; they never poll or wait for processing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import select

from schemas import media as out
from schemas.errors import ApiError, Issues, not_found
from schemas.ids import is_id, new_id
from schemas.media import (
    BY_CONTENT_TYPE,
    LIST_MAX_LIMIT,
    MAX_BYTES,
    CreateUploadSessionRequest,
    ImportMediaRequest,
    ListMediaRequest,
    MediaPath,
    RequestUploadUrlRequest,
    UpdateMediaRequest,
)
from schemas.time import iso
from storage import keyset
from storage.tables.media import Media
from tools.endpoint import Call, Endpoint, Reply
from tools.links import link
from tools.media.items import (
    asset_url,
    check_media_quota,
    clean_filename,
    content_type_from_name,
    filename_from_url,
    folder_exists,
    import_policy,
    media_out,
    new_asset_id,
    upload_expired,
)
from tools.media.uploads import enqueue_processing, upload_expiry, upload_headers, upload_url
from tools.services import fetch, signing

CURSOR_PURPOSE = "media-list-cursor"
# Rows looked at per page at most. Items hidden from the list (expired, never-used upload sessions) still
# advance the cursor, so a page can be empty yet move on: the scan never stalls and its cost stays bounded.
SCAN_WINDOW = 4 * LIST_MAX_LIMIT


# -- helpers -------------------------------------------------------------------------------------------------

def workspace_of(call: Call) -> str:
    assert call.brand is not None  # every media route has {brand_id} and loads the Brand row
    return call.brand.workspace_id


async def _check_folder(call: Call, folder_id: str | None, issues: Issues) -> None:
    if folder_id is not None and not await folder_exists(call.session, workspace_of(call), call.brand_id,
                                                         folder_id):
        issues.add("$.folder_id", "NOT_FOUND", "No media folder of this brand has this ID.")


def _filename(value: str, issues: Issues) -> str:
    name = clean_filename(value)
    if not name:
        issues.add("$.filename", "TOO_SHORT", "The file name must contain a visible character.")
    return name


async def _new_media(call: Call, *, source: str, file_name: str, content_type: str, status: str,
                     size: int | None = None, **fields: Any) -> Media:
    """Every new Media item is created here, after the per-brand quota check."""
    brand = call.brand
    assert brand is not None
    await check_media_quota(call.session, brand, size, call.rt.settings.upgrade_url)
    media = Media(id=new_id("med"), workspace_id=brand.workspace_id, brand_id=brand.id, file_name=file_name,
                  content_type=content_type, size=size, status=status, source=source, asset_id=new_asset_id(),
                  label_ids=[], created_at=call.now, updated_at=call.now, **fields)
    call.session.add(media)
    await call.session.flush()
    return media


async def _get(call: Call, media_id: str) -> Media:
    if not is_id(media_id, "med"):
        raise not_found("Media")
    media = (await call.session.exec(select(Media).where(
        Media.id == media_id, Media.brand_id == call.brand_id,
        Media.workspace_id == workspace_of(call)))).first()
    if media is None:
        raise not_found("Media")
    return media


def _links(media: Media) -> out.MediaLinks:
    return out.MediaLinks.model_validate({"self": link("get_media", brand_id=media.brand_id, media_id=media.id)})


def _download_url(call: Call, media: Media) -> str:
    url = asset_url(call.rt.settings, media.asset_id)
    assert url is not None  # every item gets its asset ID when created (_new_media)
    return url


# -- handlers ------------------------------------------------------------------------------------------------

async def create_media_upload_session(call: Call, req: CreateUploadSessionRequest) -> Reply[out.UploadSession]:
    issues = Issues()
    name = _filename(req.filename, issues)
    kind = BY_CONTENT_TYPE[req.content_type].kind
    if req.size > MAX_BYTES[kind]:
        issues.add("$.size", "TOO_LARGE", f"{kind.capitalize()} files are limited to {MAX_BYTES[kind]} bytes.")
    await _check_folder(call, req.folder_id, issues)
    issues.raise_if_any()
    media = await _new_media(call, source="upload", file_name=name, content_type=req.content_type,
                             status="pending_upload", size=req.size, sha256=req.sha256, folder_id=req.folder_id,
                             description=req.description, upload_expires_at=upload_expiry(call.now))
    settings = call.rt.settings
    return Reply(status=201, data=out.UploadSession.model_validate({
        "id": media.id, "status": media.status,
        "upload": {"url": upload_url(settings, media), "method": "PUT", "headers": upload_headers(media, settings),
                   "expires_at": iso(media.upload_expires_at)},
        "download_url": _download_url(call, media),
        "links": _links(media),
    }))


async def import_media(call: Call, req: ImportMediaRequest) -> Reply[out.ImportResult]:
    issues = Issues()
    try:
        target = await fetch.check_url(req.url, import_policy(call.rt.settings))
    except fetch.FetchError as exc:
        if exc.retryable:
            raise ApiError("DEPENDENCY_UNAVAILABLE", exc.message, headers={"Retry-After": "5"}) from None
        target = None
        issues.add("$.url", exc.code, exc.message)
    name = ""
    if req.filename is not None:
        name = _filename(req.filename, issues)
    elif target is not None:
        name = filename_from_url(target.url.path)
    await _check_folder(call, req.folder_id, issues)
    issues.raise_if_any(message="The import was refused; nothing was created or fetched. See `issues`.")
    media = await _new_media(call, source="remote_import", file_name=name,
                             content_type=content_type_from_name(name) or "application/octet-stream",
                             status="processing", source_url=req.url, folder_id=req.folder_id)
    await enqueue_processing(call.session, call.now, media.id)
    call.wake_worker_after_commit()
    return Reply(status=201, data=out.ImportResult.model_validate({
        "id": media.id, "status": media.status, "replayed": False, "download_url": _download_url(call, media),
        "links": _links(media)}))


def _replayed(data: Any) -> Any:
    return {**data, "replayed": True} if isinstance(data, dict) else data


async def legacy_upload_url(call: Call, req: RequestUploadUrlRequest) -> Reply[out.UploadUrl]:
    """The legacy upload flow (a pending media item and its signed PUT URL): a service of this area for the
    publishing toolset's older route, `request_media_upload_url` (tools/publishing/older.py)."""
    issues = Issues()
    name = _filename(req.filename, issues)
    await _check_folder(call, req.folder_id, issues)
    issues.raise_if_any()
    media = await _new_media(call, source="legacy_upload", file_name=name, content_type=req.content_type,
                             status="pending_upload", folder_id=req.folder_id,
                             upload_expires_at=upload_expiry(call.now))
    return Reply(status=201, data=out.UploadUrl.model_validate({
        "id": media.id, "upload_url": upload_url(call.rt.settings, media),
        "expires_at": iso(media.upload_expires_at), "status": media.status, "links": _links(media),
    }))


# -- list cursor: signed, bound to the brand, positioned on the last row scanned -------------------------------------

def encode_cursor(call: Call, media: Media) -> str:
    return keyset.encode(signing.signer(call.rt.settings, CURSOR_PURPOSE), (call.brand_id,), media.created_at,
                         media.id)


def decode_cursor(call: Call, cursor: str) -> tuple[datetime, str]:
    position = keyset.decode(signing.signer(call.rt.settings, CURSOR_PURPOSE), (call.brand_id,), cursor, "med")
    if position is None:
        raise keyset.invalid_cursor("This cursor is not valid for this brand's media list; read the list again "
                                    "without a cursor.")
    return position


def _listed(media: Media, now: datetime) -> bool:
    # An upload session that expired without bytes will never become usable: not worth a list slot.
    return not upload_expired(media, now)


async def list_media(call: Call, req: ListMediaRequest) -> out.MediaList:
    if req.cursor is not None and req.pagination != "cursor":
        raise ApiError("INVALID_QUERY", "cursor needs pagination=cursor.",
                       issues=[{"code": "REQUIRES_PAGINATION_CURSOR", "field_path": "$.cursor",
                                "message": "Send pagination=cursor with cursor."}])
    query = select(Media).where(Media.brand_id == call.brand_id, Media.workspace_id == workspace_of(call))
    if req.cursor is not None:
        query = keyset.after(query, Media.created_at, Media.id, decode_cursor(call, req.cursor), desc=True)
    rows = (await call.session.exec(
        query.order_by(*keyset.order(Media.created_at, Media.id, desc=True)).limit(SCAN_WINDOW))).all()
    items: list[Media] = []
    position: Media | None = None  # the last row consumed, listed or skipped: the next page starts after it
    for row in rows:
        if len(items) == req.limit:
            has_more = True
            break
        position = row
        if _listed(row, call.now):
            items.append(row)
    else:
        has_more = len(rows) == SCAN_WINDOW  # the window ended: rows may remain beyond it
    listed = [media_out(m, call.rt.settings, call.now) for m in items]
    if req.pagination == "cursor":  # next_cursor is present (possibly null) only when asked for
        return out.MediaList(items=listed, has_more=has_more,
                             next_cursor=encode_cursor(call, position) if has_more and position is not None else None)
    return out.MediaList(items=listed, has_more=has_more)


async def get_media(call: Call, req: MediaPath) -> out.MediaItem:
    return media_out(await _get(call, req.media_id), call.rt.settings, call.now)


async def update_media(call: Call, req: UpdateMediaRequest) -> out.MediaItem:
    media = await _get(call, req.media_id)
    given = req.model_fields_set
    issues = Issues()
    if "folder_id" in given:
        await _check_folder(call, req.folder_id, issues)
    if "status" in given and req.status is None:
        issues.add("$.status", "NOT_ALLOWED", "status can only be set to ready_for_processing.")
    issues.raise_if_any()
    changed = False
    if req.status == "ready_for_processing" and media.status == "pending_upload":
        if media.source != "legacy_upload":
            raise ApiError("CONFLICT", "This media item is processed as soon as its upload URL receives the bytes; "
                                       "there is no need to set its status.", next_action="get_media")
        if media.uploaded_at is None:
            raise ApiError("CONFLICT", "No bytes have been received yet: PUT the file to upload_url first, then set "
                                       "status to ready_for_processing.", next_action="upload_media_bytes")
        media.status = "ready_for_processing"
        await enqueue_processing(call.session, call.now, media.id)
        call.wake_worker_after_commit()
        changed = True
    # Any later status (ready_for_processing, processing, completed, failed): already under way or settled;
    # repeating the legacy PATCH changes nothing and starts nothing.
    if "description" in given and req.description != media.description:
        media.description, changed = req.description, True
    if "folder_id" in given and req.folder_id != media.folder_id:
        media.folder_id, changed = req.folder_id, True
    if changed:
        media.updated_at = call.now
        call.session.add(media)
        await call.session.flush()
    return media_out(media, call.rt.settings, call.now)


ENDPOINTS = [
    Endpoint(
        name="create_media_upload_session", method="POST", path="/v1/brands/{brand_id}/media/upload-sessions",
        toolset="media", handler=create_media_upload_session, request=CreateUploadSessionRequest,
        response=out.UploadSession, scopes=("media:write",), idempotency="required", status=201,
        title="Create media upload session",
        summary="Start an upload: declare name, type, size and SHA-256; get a single-use signed "
                "PUT URL.",
        guidance="PUT the exact bytes to upload.url with upload.headers, then get_media until "
                 "readiness.ready_for_content. Never publishes.",
    ),
    Endpoint(
        name="import_media", method="POST", path="/v1/brands/{brand_id}/media/imports", toolset="media",
        handler=import_media, request=ImportMediaRequest, response=out.ImportResult, scopes=("media:write",),
        idempotency="optional", status=201, replay=_replayed, open_world=True, title="Import media from a URL",
        summary="Import an image or video from a public http(s) URL (exact Content-Length), "
                "fetched in the background.",
        guidance="Private addresses are refused. Next: get_media until "
                 "readiness.ready_for_content. Never publishes.",
    ),
    Endpoint(
        name="list_media", method="GET", path="/v1/brands/{brand_id}/media", toolset="media", handler=list_media,
        request=ListMediaRequest, response=out.MediaList, scopes=("media:read",), title="List media",
        summary="List a brand's media items, newest first, with readiness, download and thumbnail URLs.",
        guidance="Read-only. pagination=cursor pages with next_cursor. Attach only items whose "
                 "readiness.ready_for_content is true.",
    ),
    Endpoint(
        name="get_media", method="GET", path="/v1/brands/{brand_id}/media/{media_id}", toolset="media",
        handler=get_media, request=MediaPath, response=out.MediaItem, scopes=("media:read",), title="Get media",
        summary="Read one media item with its status, readiness for content, size, duration and asset URLs.",
        guidance="Read-only; never waits. Follow readiness.next_actions.",
    ),
    Endpoint(
        name="update_media", method="PATCH", path="/v1/brands/{brand_id}/media/{media_id}", toolset="media",
        handler=update_media, request=UpdateMediaRequest, response=out.MediaItem, scopes=("media:write",),
        idempotency="optional", title="Update media",
        summary="Update a media item's description or folder, or (legacy flow) mark it "
                "ready_for_processing.",
        guidance="Only the fields sent change. Never publishes.",
    ),
]
