"""Autopilot: a brand's weekly plans. A plan has numbered weeks (1, 2, 3 ... within the plan, each a calendar
week starting on a Monday in the brand's timezone) with a theme; a week has a few items, each a topic with a
review status and, once generated, the content item and Schedule made from it.

`AutopilotRegeneration` is the marker a regeneration writes under its idempotency key before it calls the
topic generator, so a regeneration whose result is uncertain (the generator failed or timed out) blocks a
second regeneration under the same key (the dispatcher's idempotency store only keeps successes).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, utc_field

PLAN_STATUSES = ("active", "archived")
# Derived from the week's items: any item still pending_review -> pending_review; all approved -> approved;
# every item has a Schedule -> scheduled.
WEEK_STATUSES = ("pending_review", "approved", "scheduled")
REVIEW_STATUSES = ("pending_review", "approved")
REGENERATION_STATUSES = ("none", "uncertain")
MARKER_STATUSES = ("in_flight", "succeeded", "uncertain")

TOPIC_MAX = 500
THEME_MAX = 200


class AutopilotPlan(Stamped, table=True):
    __tablename__ = "autopilot_plans"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    # The brand's active plan: newest active one first.
    __table_args__ = (Index("ix_autopilot_plans_brand_status", "brand_id", "status", "created_at"),)

    id: str = Field(primary_key=True, max_length=40)  # apl_
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    status: str = Field(default="active", max_length=20)  # PLAN_STATUSES
    # Recorded for completeness; it never approves an Autopilot Schedule (those are always held).
    auto_approval: bool = False
    items_per_week: int = 3


class AutopilotWeek(Stamped, table=True):
    __tablename__ = "autopilot_weeks"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    # Unique per plan; also the index the "up to 100 recent weeks" read walks backwards.
    __table_args__ = (UniqueConstraint("plan_id", "week_number", name="uq_autopilot_weeks_plan_number"),)

    id: str = Field(primary_key=True, max_length=40)  # apw_
    plan_id: str = Field(foreign_key="autopilot_plans.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", index=True, max_length=40)
    week_number: int
    starts_on: str = Field(max_length=10)  # YYYY-MM-DD, a Monday in the brand's timezone
    theme: str = Field(max_length=THEME_MAX)
    status: str = Field(default="pending_review", max_length=20)  # WEEK_STATUSES


class AutopilotItem(Stamped, table=True):
    __tablename__ = "autopilot_items"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_autopilot_items_week", "week_id", "position"),
        Index("ix_autopilot_items_plan_week", "plan_id", "week_number"),
        Index("ix_autopilot_items_schedule", "schedule_id"),
    )

    id: str = Field(primary_key=True, max_length=40)  # api_
    plan_id: str = Field(foreign_key="autopilot_plans.id", max_length=40)
    week_id: str = Field(foreign_key="autopilot_weeks.id", max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    week_number: int
    position: int  # 1.. within the week
    topic: str = Field(max_length=TOPIC_MAX)
    review_status: str = Field(default="pending_review", max_length=20)  # REVIEW_STATUSES
    approved_at: datetime | None = utc_field(nullable=True)
    approved_by_key: str | None = Field(default=None, max_length=40)
    content_item_id: str | None = Field(default=None, max_length=40)
    schedule_id: str | None = Field(default=None, max_length=40)
    regeneration_status: str = Field(default="none", max_length=20)  # REGENERATION_STATUSES
    # Bumped on every change of topic or review status: regenerations update conditionally on it, so two
    # concurrent regenerations of one item cannot both replace its topic.
    revision: int = 0


class AutopilotRegeneration(Stamped, table=True):
    __tablename__ = "autopilot_regenerations"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("api_key_id", "idempotency_key", name="uq_autopilot_regenerations_key"),)

    id: str = Field(primary_key=True, max_length=40)  # apr_
    api_key_id: str = Field(max_length=40)
    idempotency_key: str = Field(max_length=255)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    item_id: str = Field(foreign_key="autopilot_items.id", index=True, max_length=40)
    status: str = Field(default="in_flight", max_length=20)  # MARKER_STATUSES
