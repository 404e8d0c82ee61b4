"""Admin marketing: prospect brands, their website scans, content pipeline runs, samples and claim links.

A prospect is an ordinary brand row plus one `admin_prospects` row (its onboarding state). Facts a brand
already has a column for (website, category, timezone, description, logo, colours) stay on the brand; these
tables hold only what is particular to prospecting.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field


class AdminProspect(Stamped, table=True):
    __tablename__ = "admin_prospects"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_admin_prospects_workspace", "workspace_id", "created_at"),)

    brand_id: str = Field(foreign_key="brands.id", primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    created_by: str = Field(max_length=40)  # user ID of the admin whose key created it
    onboarding_step: str = Field(default="created", max_length=40)
    mode: str = Field(default="manual", max_length=20)
    image_posting: dict[str, Any] = json_field(dict, nullable=False)  # {cross_post, cross_posts_per_week}
    video_posting: dict[str, Any] = json_field(dict, nullable=False)
    # Brand fields whose current value was written by a website scan (a later scan may replace them; a value
    # an admin set is never overwritten by a scan).
    scanned_fields: list[str] = json_field(list, nullable=False)
    claimed_at: datetime | None = utc_field(nullable=True)


class AdminWebsiteScan(Stamped, table=True):
    __tablename__ = "admin_website_scans"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_admin_website_scans_brand_created", "brand_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    status: str = Field(default="queued", max_length=20)  # queued | running | completed | failed
    website_url: str = Field(max_length=2000)
    # [{name, status, summary, error: {code, message} | null, started_at, finished_at}] in SCAN_STEPS order.
    steps: list[dict[str, Any]] = json_field(list, nullable=False)
    # What was extracted: {title, description, category, colors}.
    found: dict[str, Any] = json_field(dict, nullable=False)
    logo_media_id: str | None = Field(default=None, max_length=40)
    image_media_ids: list[str] = json_field(list, nullable=False)
    started_at: datetime | None = utc_field(nullable=True)
    finished_at: datetime | None = utc_field(nullable=True)


class AdminPipelineRun(Stamped, table=True):
    __tablename__ = "admin_pipeline_runs"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_admin_pipeline_runs_brand_created", "brand_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    status: str = Field(default="queued", max_length=20)  # queued | running | completed | failed
    # Who queued it: the samples are created on this user's behalf (content items' created_by).
    created_by: str = Field(max_length=40)
    key_id: str = Field(max_length=40)
    samples_created: int = 0
    error_code: str | None = Field(default=None, max_length=60)
    error_message: str | None = Field(default=None, max_length=500)
    started_at: datetime | None = utc_field(nullable=True)
    finished_at: datetime | None = utc_field(nullable=True)


class AdminSample(Stamped, table=True):
    """A content item the pipeline created for a prospect. No foreign key to the content item: deleting a
    draft through the content routes stays possible; a sample whose item is gone is simply not listed."""

    __tablename__ = "admin_samples"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_admin_samples_brand_created", "brand_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    run_id: str = Field(max_length=40)
    content_item_id: str = Field(max_length=40, unique=True)
    template: str = Field(max_length=40)


class AdminClaimLink(Stamped, table=True):
    """A single-use claim link. Only the SHA-256 of its token is stored."""

    __tablename__ = "admin_claim_links"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_admin_claim_links_brand_created", "brand_id", "created_at", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    token_hash: str = Field(max_length=64, unique=True)
    token_hint: str = Field(max_length=20)
    created_by: str = Field(max_length=40)
    expires_at: datetime | None = utc_field(nullable=True)  # null: never expires
    used_at: datetime | None = utc_field(nullable=True)
    revoked_at: datetime | None = utc_field(nullable=True)  # replaced by a newer link
