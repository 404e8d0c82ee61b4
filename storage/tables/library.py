"""Labels, snippets and ideas: a brand's small libraries (labels are also attached to content items)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field


class Label(Stamped, table=True):
    __tablename__ = "labels"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_labels_brand_name", "brand_id", "name", "id"),  # discovery list: every label by name
        Index("ix_labels_brand_created", "brand_id", "created_at", "id"),  # older paged list
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    name: str = Field(max_length=100)
    color: str | None = Field(default=None, max_length=20)


class Snippet(Stamped, table=True):
    __tablename__ = "snippets"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_snippets_brand_created", "brand_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    name: str | None = Field(default=None, max_length=200)
    text: str | None = Field(default=None, max_length=10000)
    label_ids: list[str] = json_field(list, nullable=False)


class Idea(Stamped, table=True):
    __tablename__ = "ideas"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_ideas_brand_created", "brand_id", "created_at", "id"),
        Index("ix_ideas_brand_updated", "brand_id", "updated_at", "id"),
        Index("ix_ideas_brand_last_used", "brand_id", "last_used_at", "id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    name: str | None = Field(default=None, max_length=500)
    description: str | None = Field(default=None, max_length=10000)
    type: str | None = Field(default=None, max_length=50)
    status: str = Field(default="new", max_length=20)
    labels: list[str] = json_field(list, nullable=False)
    last_used_at: datetime | None = utc_field(nullable=True)
