"""Schedules, their publish runs (executions), per-target attempts and publications.

A Schedule is the durable instruction; the older "publish run" routes are a second shape over the same row
(one source of truth for what will be published, when, where and with what approval). An execution is one
attempt of the worker to carry a Schedule out; its ID is the opaque correlation `latest_execution.id`.
A PublishTarget is one target of one execution: the attempt is recorded (`attempting`, with a stable
idempotency token) before the provider is called and settled after, so a crash between the two is
recovered by asking the provider for the token instead of publishing again.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint, text
from sqlmodel import Field

from storage.tables import accounts, brands, content  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field

# Schedule.status (SCHEDULE_STATUSES), approval_status and PublishTarget.state: schemas/states.py.
# Statuses in which nothing has run yet: reschedule, cancel, approve, move-to-draft and delete are allowed.
UNSENT_STATUSES = ("action_required", "scheduled")
SOURCES = ("api", "publish_run", "queue", "autopilot")

TARGET_FINAL_STATES = ("published", "failed", "action_required")


class Schedule(Stamped, table=True):
    __tablename__ = "schedules"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        # Window list (keyset on scheduled time) and the worker's due scan each have their index.
        Index("ix_schedules_brand_time", "brand_id", "scheduled_at", "id"),
        Index("ix_schedules_brand_created", "brand_id", "created_at", "id"),
        Index("ix_schedules_due", "status", "scheduled_at"),
        Index("ix_schedules_content", "brand_id", "content_item_id"),
        # The worker's lease renewal and hand-back find a worker's claims by owner; only claimed rows are in it,
        # so it stays as small as the claims however large the table grows.
        Index("ix_schedules_lease_owner", "lease_owner", sqlite_where=text("lease_owner IS NOT NULL"),
              postgresql_where=text("lease_owner IS NOT NULL")),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    content_item_id: str = Field(foreign_key="content_items.id", max_length=40)
    integration_ids: list[str] = json_field(list, nullable=False)
    scheduled_at: datetime = utc_field()
    approval_status: str = Field(max_length=20)  # APPROVAL_STATUSES
    status: str = Field(max_length=30)  # SCHEDULE_STATUSES
    source: str = Field(default="api", max_length=20)  # SOURCES
    blocking_reason: dict | None = json_field()  # {code, message, repair_guidance}
    created_by: str = Field(max_length=40)  # user ID of the key's owner
    created_by_key: str | None = Field(default=None, max_length=40)
    approved_by_key: str | None = Field(default=None, max_length=40)  # the key that held publish:execute
    approved_at: datetime | None = utc_field(nullable=True)
    cancelled_at: datetime | None = utc_field(nullable=True)
    latest_execution_id: str | None = Field(default=None, max_length=40)
    failure_reason: str | None = Field(default=None, max_length=500)  # safe text (older publish-run shape)
    # The worker's claim on a due schedule (SQLite: conditional update; PostgreSQL: FOR UPDATE SKIP LOCKED).
    lease_owner: str | None = Field(default=None, max_length=80)
    lease_expires_at: datetime | None = utc_field(nullable=True)
    next_attempt_at: datetime | None = utc_field(nullable=True)  # retry backoff of retryable targets
    queue_id: str | None = Field(default=None, max_length=40)
    autopilot_item_id: str | None = Field(default=None, max_length=40)


class PublishExecution(Stamped, table=True):
    """One run of a Schedule (`latest_execution`); the receipt reads exactly the latest one."""

    __tablename__ = "publish_executions"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_publish_executions_schedule", "schedule_id", "created_at"),)

    id: str = Field(primary_key=True, max_length=40)  # opaque correlation handle (prefix `run`)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    schedule_id: str = Field(foreign_key="schedules.id", max_length=40)
    status: str = Field(default="processing", max_length=30)  # processing | published | partially_published | failed
    started_at: datetime = utc_field()
    finished_at: datetime | None = utc_field(nullable=True)
    # Hash of the cleanup authority issued by the receipt for this run (never stored in clear).
    cleanup_authority_hash: str | None = Field(default=None, max_length=64)


class PublishTarget(Stamped, table=True):
    __tablename__ = "publish_targets"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        UniqueConstraint("execution_id", "integration_id", name="uq_publish_targets_execution_integration"),
        Index("ix_publish_targets_schedule", "schedule_id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    execution_id: str = Field(foreign_key="publish_executions.id", max_length=40)
    schedule_id: str = Field(foreign_key="schedules.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    integration_id: str = Field(max_length=40)
    platform: str = Field(max_length=40)
    state: str = Field(default="pending", max_length=20)  # TARGET_STATES
    attempts: int = 0
    # Stable for every attempt of this target: the provider dedupes on it, recovery looks the post up by it.
    idempotency_token: str = Field(max_length=80)
    attempted_at: datetime | None = utc_field(nullable=True)
    settled_at: datetime | None = utc_field(nullable=True)
    next_attempt_at: datetime | None = utc_field(nullable=True)
    error_kind: str | None = Field(default=None, max_length=40)  # providers.base.ERROR_KINDS (internal)
    failure_reason: str | None = Field(default=None, max_length=500)  # safe text, never the provider's words
    # Provider facts: internal only. Receipts and routes never return them.
    publish_id: str | None = Field(default=None, max_length=200)
    permalink_url: str | None = Field(default=None, max_length=2000)
    publication_id: str | None = Field(default=None, max_length=40)
    cleanup_status: str | None = Field(default=None, max_length=20)  # queued | done | failed


class Publication(Stamped, table=True):
    """The record of one delivery (spec: Publication, History item)."""

    __tablename__ = "publications"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_publications_brand_created", "brand_id", "created_at", "id"),
        Index("ix_publications_brand_updated", "brand_id", "updated_at", "id"),
        Index("ix_publications_content", "brand_id", "post_id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    schedule_id: str = Field(foreign_key="schedules.id", max_length=40)
    execution_id: str = Field(max_length=40)
    target_id: str = Field(max_length=40, unique=True)  # one publication per target of a run
    platform: str = Field(max_length=40)
    integration_id: str = Field(max_length=40)
    post_id: str = Field(max_length=40)  # the content item
    post_name: str | None = Field(default=None, max_length=500)
    post_type: str | None = Field(default=None, max_length=40)
    media_type: str | None = Field(default=None, max_length=20)  # image | video | carousel | None (text)
    status: str = Field(default="processing", max_length=20)  # processing | published | failed
    source: str | None = Field(default=None, max_length=20)  # calendar | queue
    failure_reason: str | None = Field(default=None, max_length=500)
    publish_id: str | None = Field(default=None, max_length=200)
    permalink_url: str | None = Field(default=None, max_length=2000)
    published_at: datetime | None = utc_field(nullable=True)
