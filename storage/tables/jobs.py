"""Background jobs (media processing, scans, cleanup, outbox): claimed with a lease by the worker."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables._base import Stamped, json_field, utc_field


class Job(Stamped, table=True):
    __tablename__ = "jobs"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_jobs_due", "status", "run_at"),)

    id: str = Field(primary_key=True, max_length=40)
    kind: str = Field(max_length=60)
    payload: dict[str, Any] = json_field(dict, nullable=False)
    status: str = Field(default="queued", max_length=20)  # queued | running | done | failed
    run_at: datetime = utc_field()
    attempts: int = 0
    max_attempts: int = 5
    lease_owner: str | None = Field(default=None, max_length=80)
    lease_expires_at: datetime | None = utc_field(nullable=True)
    last_error: str | None = Field(default=None, max_length=2000)
    # At most one queued-or-running job per dedupe key (e.g. one processing job per media item).
    dedupe_key: str | None = Field(default=None, max_length=200, unique=True)
