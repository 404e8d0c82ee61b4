"""Shared pieces of the media area: capability IDs and URLs, readiness, the Media item shape, storage keys,
the fetch policy of imports, and the one place a per-brand media quota is checked."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy import or_
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.media import BY_CONTENT_TYPE, FILENAME_MAX, MAX_ANY_BYTES, THUMBNAIL_CONTENT_TYPE, MediaItem
from schemas.settings import Settings
from schemas.time import iso
from storage.blobs import BlobStore, store_for
from storage.tables.brands import Brand
from storage.tables.media import READY_STATUSES, Media, MediaFolder
from tools.context import plans
from tools.links import link
from tools.operator.actions import OperatorError
from tools.services.fetch import OCTET_STREAM, FetchPolicy

# Non-catalogue routes (served by server/mounts/media.py). Assets: `{media_url}/assets/<id>` maps to
# ASSET_ROUTE on this app (SOCIALPUB_MEDIA_URL defaults to `{public_url}/media`).
ASSET_ROUTE = "/media/assets/{asset_id}"
UPLOAD_ROUTE = "/media/uploads/{media_id}"
ASSET_ID_BYTES = 24  # 192 bits -> 32 URL-safe characters


def new_asset_id() -> str:
    return secrets.token_urlsafe(ASSET_ID_BYTES)


def asset_url(settings: Settings, asset_id: str | None) -> str | None:
    return f"{settings.resolved_media_url}/assets/{asset_id}" if asset_id else None


def blobs(settings: Settings) -> BlobStore:
    return store_for(settings.home, settings.media_store, endpoint_url=settings.s3_endpoint_url,
                     region=settings.s3_region, access_key_id=settings.s3_access_key_id,
                     secret_access_key=settings.s3_secret_access_key)


def blob_key(media: Media, name: str) -> str:
    """Where a media item's bytes live in the blob store; a fresh suffix per write so racing writers never
    share a key. Keys are never shown to callers."""
    return f"{media.brand_id}/{media.id}/{name}-{secrets.token_hex(6)}"


def thumbnail_key(media: Media, asset_id: str) -> str:
    return f"{media.brand_id}/{media.id}/thumb-{asset_id}.jpg"


# Imports: the whole download must finish within the worker's job lease (5 minutes), so another worker never
# starts the same fetch while this one is still running.
IMPORT_TOTAL_SECONDS = 240.0
IMPORT_CONNECT_SECONDS = 5.0
IMPORT_READ_SECONDS = 15.0
IMPORT_MAX_REDIRECTS = 3


def import_policy(settings: Settings) -> FetchPolicy:
    return FetchPolicy.from_settings(
        settings, max_bytes=MAX_ANY_BYTES, allowed_content_types=frozenset(BY_CONTENT_TYPE) | frozenset(OCTET_STREAM),
        total_timeout=IMPORT_TOTAL_SECONDS, connect_timeout=IMPORT_CONNECT_SECONDS, read_timeout=IMPORT_READ_SECONDS,
        max_redirects=IMPORT_MAX_REDIRECTS)


def clean_filename(value: str) -> str:
    return value.strip()[:FILENAME_MAX]


def filename_from_url(path: str) -> str:
    """The last segment of a URL's (already decoded) path, cleaned up to be a file name."""
    name = PurePosixPath(path).name.strip()
    name = "".join(ch for ch in name if ch.isprintable() and ch not in "/\\")
    return clean_filename(name) or "import"


def content_type_from_name(name: str) -> str | None:
    suffix = PurePosixPath(name.lower()).suffix
    return next((t.content_type for t in BY_CONTENT_TYPE.values() if suffix in t.extensions), None)


# -- the per-brand media cap (plans area) ----------------------------------------------------------------------

async def check_media_quota(session: AsyncSession, brand: Brand, size: int | None, upgrade_url: str) -> None:
    """Every new Media item passes here first (uploads, legacy uploads, imports, derivatives): the workspace
    plan's per-brand media caps (422 PLAN_LIMIT_REACHED with limit, used, max, upgrade_url). Bytes are
    checked here when the size is declared, and by `check_media_bytes` once an import's size is known."""
    await plans.check_limit(session, brand, "media_items_per_brand", upgrade_url=upgrade_url)
    if size:
        await check_media_bytes(session, brand, size, upgrade_url)


async def check_media_bytes(session: AsyncSession, brand: Brand, size: int, upgrade_url: str) -> None:
    await plans.check_limit(session, brand, "media_storage_bytes_per_brand", adding=size, upgrade_url=upgrade_url)


# -- folders (operator-managed: the API files media into existing folders) -------------------------------------------

FOLDER_NAME_MAX = 200


async def create_media_folder(session: AsyncSession, now: datetime, brand: Brand, name: str) -> MediaFolder:
    name = name.strip()
    if not 1 <= len(name) <= FOLDER_NAME_MAX or not name.isprintable():
        raise OperatorError(f"folder name must be 1 to {FOLDER_NAME_MAX} printable characters")
    folder = MediaFolder(id=new_id("mfd"), workspace_id=brand.workspace_id, brand_id=brand.id, name=name,
                         created_at=now, updated_at=now)
    session.add(folder)
    await session.flush()
    return folder


async def list_media_folders(session: AsyncSession, brand: Brand) -> list[MediaFolder]:
    return list((await session.exec(select(MediaFolder).where(
        MediaFolder.brand_id == brand.id, MediaFolder.workspace_id == brand.workspace_id)
        .order_by(MediaFolder.name, MediaFolder.id).limit(1000))).all())


async def seed_demo_folders(session: AsyncSession, now: datetime, workspace: Any, brands: list[Brand]) -> dict:
    folders = [await create_media_folder(session, now, brand, "Brand assets") for brand in brands]
    return {"media_folders": folders}



async def folder_exists(session: AsyncSession, workspace_id: str, brand_id: str, folder_id: str) -> bool:
    row = (await session.exec(select(MediaFolder.id).where(
        MediaFolder.id == folder_id, MediaFolder.brand_id == brand_id,
        MediaFolder.workspace_id == workspace_id))).first()
    return row is not None


# -- reading -------------------------------------------------------------------------------------------------------

def upload_expired(media: Media, now: datetime) -> bool:
    return (media.status == "pending_upload" and media.uploaded_at is None and media.upload_expires_at is not None
            and now >= media.upload_expires_at)


def readiness(media: Media, now: datetime) -> dict[str, Any]:
    """`ready_for_content` and at most one bounded next action; computed from the record, never by polling."""
    status = media.status
    actions: list[dict[str, Any]] = []
    if status in ("processing", "ready_for_processing"):
        actions.append({"action": "read_media_again",
                        "guidance": "The file is being processed. Read this media item again (get_media) in a few "
                                    "seconds; attach it to content only once ready_for_content is true."})
    elif status == "failed":
        reason = media.failure_reason or "Processing failed."
        actions.append({"action": "repair_media", "reason_code": media.failure_code or "PROCESSING_FAILED",
                        "guidance": f"{reason} This item cannot be used; upload or import a corrected file as a new "
                                    "media item."})
    elif status == "pending_upload":
        if media.uploaded_at is not None:
            actions.append({"action": "mark_ready_for_processing",
                            "guidance": "The bytes have arrived. Set status to ready_for_processing with update_media "
                                        "to start processing."})
        elif upload_expired(media, now):
            actions.append({"action": "repair_media", "reason_code": "UPLOAD_EXPIRED",
                            "guidance": "The upload link expired before any bytes arrived. Start a new upload "
                                        "(create_media_upload_session)."})
        else:
            actions.append({"action": "upload_media_bytes",
                            "guidance": f"PUT the file's bytes to the upload URL you were given before "
                                        f"{iso(media.upload_expires_at)}."})
    return {"ready_for_content": status in READY_STATUSES, "next_actions": actions}


def media_out(media: Media, settings: Settings, now: datetime) -> MediaItem:
    """`media_item` as the spec's model (what a handler returns)."""
    return MediaItem.model_validate(media_item(media, settings, now))


def media_item(media: Media, settings: Settings, now: datetime) -> dict[str, Any]:
    return {
        "id": media.id, "file_name": media.file_name, "content_type": media.content_type, "size": media.size,
        "duration": media.duration, "status": media.status, "label_ids": list(media.label_ids or []),
        "folder_id": media.folder_id, "download_url": asset_url(settings, media.asset_id),
        "thumbnail_large_url": asset_url(settings, media.thumbnail_large_id),
        "thumbnail_small_url": asset_url(settings, media.thumbnail_small_id),
        "source": media.source, "description": media.description, "last_used_at": iso(media.last_used_at),
        "created_at": iso(media.created_at), "updated_at": iso(media.updated_at),
        "readiness": readiness(media, now),
        "links": {"self": link("get_media", brand_id=media.brand_id, media_id=media.id)},
    }


# -- serving ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Asset:
    storage_key: str
    content_type: str
    etag: str


async def find_asset(session: AsyncSession, asset_id: str) -> Asset | None:
    """The servable file behind a capability ID: only items whose bytes were verified (completed)."""
    media = (await session.exec(select(Media).where(or_(
        col(Media.asset_id) == asset_id, col(Media.thumbnail_large_id) == asset_id,
        col(Media.thumbnail_small_id) == asset_id)).limit(1))).first()
    if media is None or media.status not in READY_STATUSES:
        return None
    if media.asset_id == asset_id:
        key, ctype = media.storage_key, media.content_type
    else:
        key, ctype = thumbnail_key(media, asset_id), THUMBNAIL_CONTENT_TYPE
    if not key:
        return None
    return Asset(storage_key=key, content_type=ctype, etag=f'"{asset_id[:16]}"')
