"""Recording an event: one `events` row added to the caller's session, so it commits (or not) with the state
change it describes. The webhook fan-out and MCP subscriptions read the log afterwards; a crash loses nothing.

    from tools.services import event_log as record
    record.schedule(session, now, schedule, "schedule.published")

A caller that records many events in one transaction (the publishing worker's group commit) takes the rows as
plain values (`schedule_values`) and inserts them together with Core.

Payloads carry IDs, states and links (console and API paths, made absolute at delivery), never secrets,
provider tokens or raw provider errors.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from storage.tables.events import Event

# The event types an endpoint may subscribe to (docs/events.md lists what each carries).
EVENT_TYPES: tuple[str, ...] = (
    "schedule.published", "schedule.failed", "schedule.partially_published", "schedule.held", "schedule.approved",
    "schedule.rejected", "integration.needs_reauth", "integration.expiring", "media.ready", "media.failed",
)
TEST_TYPE = "webhook.test"  # sent by `webhooks test` / the console's Test button to one endpoint only
CONSOLE = "/console"


EVENTS = Event.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it


def values(now: datetime, type: str, *, workspace_id: str, brand_id: str | None, subject_id: str,
           data: dict[str, Any]) -> dict[str, Any]:
    """The `events` row of one event, as plain values (a caller writing many at once inserts them with Core)."""
    if type not in EVENT_TYPES and type != TEST_TYPE:
        raise ValueError(f"unknown event type {type}")
    return {"id": new_id("evt"), "workspace_id": workspace_id, "brand_id": brand_id, "type": type,
            "subject_id": subject_id, "data": data, "created_at": now}


def add(session: AsyncSession, now: datetime, type: str, *, workspace_id: str, brand_id: str | None,
        subject_id: str, data: dict[str, Any]) -> Event:
    event = Event(**values(now, type, workspace_id=workspace_id, brand_id=brand_id, subject_id=subject_id,
                           data=data))
    session.add(event)  # no flush: it is written with the caller's next flush or commit
    return event


def schedule_values(now: datetime, row: Any, type: str) -> dict[str, Any]:
    """The event row of a Schedule's change of state (`row` is the Schedule, already carrying its new state)."""
    return values(now, type, workspace_id=row.workspace_id, brand_id=row.brand_id, subject_id=row.id, data={
        "schedule_id": row.id, "brand_id": row.brand_id, "status": row.status,
        "approval_status": row.approval_status, "content_item_id": row.content_item_id,
        "scheduled_at": row.scheduled_at.isoformat().replace("+00:00", "Z") if row.scheduled_at else None,
        "failure_reason": row.failure_reason,
        "links": {"console": f"{CONSOLE}/brands/{row.brand_id}/schedules/{row.id}",
                  "api": f"/v1/brands/{row.brand_id}/schedules/{row.id}"}})


def schedule(session: AsyncSession, now: datetime, row: Any, type: str) -> Event:
    """A Schedule changed state (`row` is the Schedule, already carrying its new state)."""
    event = Event(**schedule_values(now, row, type))
    session.add(event)
    return event


def integration(session: AsyncSession, now: datetime, row: Any, type: str, *,
                expires_at: datetime | None = None) -> Event:
    data: dict[str, Any] = {
        "integration_id": row.id, "brand_id": row.brand_id, "platform": row.platform, "status": row.status,
        "links": {"console": f"{CONSOLE}/brands/{row.brand_id}/accounts",
                  "api": f"/v1/brands/{row.brand_id}/integrations/{row.id}"}}
    if expires_at is not None:
        data["expires_at"] = expires_at.isoformat().replace("+00:00", "Z")
    return add(session, now, type, workspace_id=row.workspace_id, brand_id=row.brand_id, subject_id=row.id,
               data=data)


def media(session: AsyncSession, now: datetime, row: Any, type: str) -> Event:
    data: dict[str, Any] = {"media_id": row.id, "brand_id": row.brand_id, "status": row.status,
                            "links": {"api": f"/v1/brands/{row.brand_id}/media/{row.id}"}}
    if row.failure_code:
        data["failure_code"] = row.failure_code
    return add(session, now, type, workspace_id=row.workspace_id, brand_id=row.brand_id, subject_id=row.id,
               data=data)
