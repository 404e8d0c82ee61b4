"""Media items: uploaded, imported or derived files, with what probing found in their bytes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index
from sqlmodel import Field

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field

# Statuses in which a media item may be attached to content (`readiness.ready_for_content`).
READY_STATUSES = ("completed",)


class Media(Stamped, table=True):
    __tablename__ = "media"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_media_brand_created", "brand_id", "created_at", "id"),
        # The asset route looks a capability ID up in one of these three columns.
        Index("ix_media_thumbnail_large", "thumbnail_large_id", unique=True),
        Index("ix_media_thumbnail_small", "thumbnail_small_id", unique=True),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    folder_id: str | None = Field(default=None, max_length=40)
    file_name: str = Field(max_length=500)
    content_type: str = Field(max_length=100)
    # bytes; declared for uploads, measured for imports. 64-bit: videos over 2 GiB exist (PostgreSQL INTEGER is 32).
    size: int | None = Field(default=None, sa_type=BigInteger)
    sha256: str | None = Field(default=None, max_length=64)
    status: str = Field(default="processing", max_length=30)
    source: str = Field(max_length=30)  # upload | legacy_upload | remote_import | repair_derivative
    source_url: str | None = Field(default=None, max_length=2000)
    kind: str | None = Field(default=None, max_length=10)  # image | video, from the bytes
    width: int | None = None
    height: int | None = None
    duration: float | None = None  # seconds (video)
    codec: str | None = Field(default=None, max_length=40)
    format: str | None = Field(default=None, max_length=40)
    storage_key: str | None = Field(default=None, max_length=500)
    # Opaque capability IDs: assets are served at {media_url}/assets/<id>, never by storage path.
    asset_id: str = Field(max_length=64, unique=True)
    thumbnail_large_id: str | None = Field(default=None, max_length=64)
    thumbnail_small_id: str | None = Field(default=None, max_length=64)
    derived_from_id: str | None = Field(default=None, max_length=40)
    derivation: dict[str, Any] | None = json_field()
    label_ids: list[str] = json_field(list, nullable=False)
    description: str | None = Field(default=None, max_length=10000)
    last_used_at: datetime | None = utc_field(nullable=True)
    failure_code: str | None = Field(default=None, max_length=60)
    failure_reason: str | None = Field(default=None, max_length=500)
    # Upload capability: valid until upload_expires_at, consumed once bytes are stored (uploaded_at).
    upload_expires_at: datetime | None = utc_field(nullable=True)
    uploaded_at: datetime | None = utc_field(nullable=True)
    # More probing facts (video): frames per second, whether an audio stream exists, overall bit rate.
    frame_rate: float | None = None
    has_audio: bool | None = None
    bit_rate: int | None = None
    processed_at: datetime | None = utc_field(nullable=True)


class MediaFolder(Stamped, table=True):
    """A brand's media folder (managed by the operator; the API only files media into existing folders)."""

    __tablename__ = "media_folders"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_media_folders_brand_name", "brand_id", "name"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    name: str = Field(max_length=200)
