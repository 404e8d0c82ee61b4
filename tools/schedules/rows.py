"""The one way a Schedule row comes into being, whatever asked for it.

The create_schedule route, the older publish-run routes, queue slots and Autopilot all call `new_schedule`,
so the rule "held unless approved by a key holding publish:execute" lives here and nowhere else. Callers
check authority (scopes, preflight) before; this only derives the state the approval implies.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.states import APPROVAL_STATUSES
from storage.tables.brands import Brand
from storage.tables.publishing import SOURCES, Schedule
from tools.services import event_log as record

BLOCKING_REASONS: dict[str, dict[str, str]] = {
    "pending_review": {
        "code": "APPROVAL_PENDING",
        "message": "This Schedule is held for review and will not publish until it is approved.",
        "repair_guidance": "A person or key holding schedule:write and publish:execute approves it with "
                           "approve_schedule before its scheduled time.",
    },
    "rejected": {
        "code": "APPROVAL_REJECTED",
        "message": "This Schedule was rejected and will never publish.",
        "repair_guidance": "Cancel or delete it; create a new Schedule when the content is ready.",
    },
}


def is_held(status: str, approval_status: str) -> bool:
    """Held for review: waits for an approval (approve_schedule), the review queue's one test."""
    return approval_status == "pending_review" and status == "action_required"


def held_clause() -> Any:
    """`is_held` as a query condition."""
    return and_(col(Schedule.approval_status) == "pending_review", col(Schedule.status) == "action_required")


def held_state(approval_status: str) -> tuple[str, dict[str, Any] | None]:
    """(status, blocking_reason) a not-yet-run Schedule has for its approval."""
    if approval_status not in APPROVAL_STATUSES:
        raise ValueError(f"unknown approval_status {approval_status}")
    if approval_status == "approved":
        return "scheduled", None
    return "action_required", dict(BLOCKING_REASONS[approval_status])


def new_schedule(session: AsyncSession, *, brand: Brand, content_item_id: str, integration_ids: list[str],
                 scheduled_at: datetime, approval_status: str, source: str, user_id: str, key_id: str | None,
                 now: datetime, queue_id: str | None = None, autopilot_item_id: str | None = None) -> Schedule:
    """Adds a Schedule to the session. `key_id` on an approved Schedule records who held publish authority."""
    if source not in SOURCES:
        raise ValueError(f"unknown source {source}")
    if source == "autopilot" and approval_status != "pending_review":
        # Spec: a Schedule generated from an Autopilot idea is held even when auto-approval is on.
        raise ValueError("Autopilot schedules are always held as pending_review")
    status, blocking = held_state(approval_status)
    schedule = Schedule(
        id=new_id("sch"), workspace_id=brand.workspace_id, brand_id=brand.id, content_item_id=content_item_id,
        integration_ids=list(integration_ids), scheduled_at=scheduled_at, approval_status=approval_status,
        status=status, source=source, blocking_reason=blocking, created_by=user_id, created_by_key=key_id,
        approved_by_key=key_id if approval_status == "approved" else None,
        approved_at=now if approval_status == "approved" else None,
        queue_id=queue_id, autopilot_item_id=autopilot_item_id, created_at=now, updated_at=now)
    session.add(schedule)
    if approval_status == "pending_review":
        record.schedule(session, now, schedule, "schedule.held")
    return schedule
