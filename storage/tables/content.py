"""Content items (drafts) and their labels.

One row carries every field of the released and the older shape. Settings are one JSON object keyed by
settings key (`instagram_settings`...), holding only the platforms the item has; copy is JSON as sent.
Label membership lives in `content_item_labels` (the one source of truth for `label_ids`), so a label
filter and a label deletion are indexed queries rather than JSON scans.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from storage.tables import accounts, brands, library  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, Stamped, json_field


class ContentItem(Stamped, table=True):
    __tablename__ = "content_items"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        # Released list (keyset on update time), drafts list and older list sorts: each ORDER BY has its index.
        Index("ix_content_items_brand_updated", "brand_id", "updated_at", "id"),
        Index("ix_content_items_brand_created", "brand_id", "created_at", "id"),
        Index("ix_content_items_brand_name", "brand_id", "name", "id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    created_by: str = Field(max_length=40)  # user ID of the key's owner that created it
    name: str = Field(max_length=500)
    copy_mode: str = Field(default="single", max_length=20)  # single | per_platform
    single_copy: dict[str, Any] | None = json_field()
    platform_copy: dict[str, Any] | None = json_field()
    # {"<platform>_settings": {...}} for the platforms the item has; an absent key means null.
    settings: dict[str, Any] = json_field(dict, nullable=False)
    intended_integration_ids: list[str] = json_field(list, nullable=False)
    thumbnail_media_id: str | None = Field(default=None, max_length=40)
    thumbnail_timestamp: float = 0.0


class ContentItemLabel(SQLModel, table=True):
    model_config = TABLE_CONFIG
    __tablename__ = "content_item_labels"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_content_item_labels_label", "label_id", "content_item_id"),)

    content_item_id: str = Field(foreign_key="content_items.id", primary_key=True, max_length=40)
    label_id: str = Field(foreign_key="labels.id", primary_key=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
