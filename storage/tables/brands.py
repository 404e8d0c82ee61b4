"""Brands: every field of the brand context and of the older brand shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables import accounts  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field


class Brand(Stamped, table=True):
    __tablename__ = "brands"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_brands_workspace_created", "workspace_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    name: str = Field(max_length=200)
    description: str | None = Field(default=None, max_length=5000)
    website: str | None = Field(default=None, max_length=2000)
    category: str | None = Field(default=None, max_length=200)
    timezone: str = Field(default="UTC", max_length=64)
    logo_url: str | None = Field(default=None, max_length=2000)
    logo_light_url: str | None = Field(default=None, max_length=2000)
    logo_dark_url: str | None = Field(default=None, max_length=2000)
    colors: list[str] = json_field(list, nullable=False)
    title_font: str | None = Field(default=None, max_length=200)
    body_font: str | None = Field(default=None, max_length=200)
    brand_kit: dict[str, Any] | None = json_field()
    content_preferences: dict[str, Any] | None = json_field()
    image_posting: str | None = Field(default=None, max_length=200)
    video_posting: str | None = Field(default=None, max_length=200)
    voice_instructions: str | None = Field(default=None, max_length=10000)
    voice_profile: str | None = Field(default=None, max_length=20000)
    voice_strategy: str | None = Field(default=None, max_length=20000)
    default_cta_text: str | None = Field(default=None, max_length=500)
    default_cta_url: str | None = Field(default=None, max_length=2000)
    link_in_bio_status: str = Field(default="not_created", max_length=20)
    link_in_bio_handle: str | None = Field(default=None, max_length=100)
    link_in_bio_published_at: datetime | None = utc_field(nullable=True)
