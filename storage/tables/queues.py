"""Posting queues: an ordered list of content items turned into Schedules one slot at a time.

A queue never publishes by itself: each due slot becomes a Schedule (tools.schedules.rows.new_schedule, source
"queue"), approved only when the key that last set what and where the queue posts held publish:execute
(`approved_by_key`), else held as pending_review. See docs/queues.md.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field

QUEUE_MODES = ("times_of_day", "interval")


class Queue(Stamped, table=True):
    __tablename__ = "queues"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_queues_brand_created", "brand_id", "created_at", "id"),  # the brand's (bounded) list
        Index("ix_queues_due", "active", "next_run_at"),  # the worker tick's due scan
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    name: str = Field(max_length=200)
    active: bool = True
    mode: str = Field(max_length=20)  # QUEUE_MODES
    times_of_day: list[str] = json_field(list, nullable=False)  # "HH:MM", ascending, unique
    timezone: str = Field(default="UTC", max_length=64)  # IANA
    interval_minutes: int | None = None  # interval mode: minutes between slots
    start_at: datetime | None = utc_field(nullable=True)  # interval mode: the first slot (slots repeat from it)
    next_run_at: datetime | None = utc_field(nullable=True)  # None: nothing will be posted (see docs)
    loop: bool = False
    content_item_ids: list[str] = json_field(list, nullable=False)  # ordered
    integration_ids: list[str] = json_field(list, nullable=False)
    skip_count: int = 0  # positions consumed (posted or skipped); with loop, position = skip_count % len
    created_by: str = Field(max_length=40)  # user ID of the creating key's owner
    # The key that last set content_item_ids, integration_ids or loop, and whether it held publish:execute
    # then: only then are the queue's Schedules approved.
    set_by_key: str | None = Field(default=None, max_length=40)
    approved_by_key: str | None = Field(default=None, max_length=40)
