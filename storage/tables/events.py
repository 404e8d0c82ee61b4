"""Events for programs: the event log (written in the transaction of the state change it records), outbound
webhook endpoints, one message per event and endpoint (the unit of delivery, its ID the `webhook-id`), and the
delivery attempts (each endpoint's log). tools/events/ reads and writes them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from storage.tables import accounts  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, Stamped, json_field, utc_field


class Event(SQLModel, table=True):
    """Something happened to a subject (a Schedule, an account, a media item). `fanned_out` turns true in the
    transaction that writes its webhook messages; MCP subscriptions read the log by ID (time-sortable)."""

    model_config = TABLE_CONFIG
    __tablename__ = "events"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_events_pending", "fanned_out", "id"),
        Index("ix_events_workspace_id", "workspace_id", "id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    brand_id: str | None = Field(default=None, max_length=40)
    type: str = Field(max_length=60)
    subject_id: str = Field(max_length=40)
    data: dict[str, Any] = json_field(dict, nullable=False)
    fanned_out: bool = False
    created_at: datetime = utc_field()


class WebhookEndpoint(Stamped, table=True):
    """An admin's endpoint: where events go, which types and (optionally) which brands. The signing secret is
    sealed by the vault; during a rotation the previous one signs too, until `previous_until`."""

    __tablename__ = "webhook_endpoints"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    url: str = Field(max_length=2000)
    description: str = Field(default="", max_length=200)
    event_types: list[str] = json_field(list, nullable=False)
    brand_ids: list[str] | None = json_field()  # None: every brand of the workspace
    secret: str = Field(max_length=500)  # vault-sealed `whsec_...`
    previous_secret: str | None = Field(default=None, max_length=500)
    previous_until: datetime | None = utc_field(nullable=True)
    enabled: bool = True
    disabled_reason: str | None = Field(default=None, max_length=300)


class WebhookMessage(Stamped, table=True):
    """One event for one endpoint: claimed under a lease, attempted until a 2xx, retried with backoff, `failed`
    when the retries ran out. The same ID (the `webhook-id` header) on every attempt and resend."""

    __tablename__ = "webhook_messages"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_webhook_messages_due", "status", "next_attempt_at"),
        Index("ix_webhook_messages_endpoint", "endpoint_id", "id"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", max_length=40)
    endpoint_id: str = Field(foreign_key="webhook_endpoints.id", max_length=40)
    event_id: str = Field(foreign_key="events.id", max_length=40)
    event_type: str = Field(max_length=60)
    status: str = Field(default="pending", max_length=20)  # pending | sending | delivered | failed
    attempts: int = 0
    next_attempt_at: datetime | None = utc_field(nullable=True)
    lease_owner: str | None = Field(default=None, max_length=80)
    lease_expires_at: datetime | None = utc_field(nullable=True)
    delivered_at: datetime | None = utc_field(nullable=True)
    last_status_code: int | None = None
    last_error: str | None = Field(default=None, max_length=300)


class WebhookAttempt(SQLModel, table=True):
    """One delivery attempt: the endpoint's log (response code or error, never the response body)."""

    model_config = TABLE_CONFIG
    __tablename__ = "webhook_attempts"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_webhook_attempts_endpoint", "endpoint_id", "id"),)

    id: str = Field(primary_key=True, max_length=40)
    endpoint_id: str = Field(foreign_key="webhook_endpoints.id", max_length=40)
    message_id: str = Field(foreign_key="webhook_messages.id", index=True, max_length=40)
    status_code: int | None = None
    error: str | None = Field(default=None, max_length=300)
    duration_ms: int = 0
    created_at: datetime = utc_field()
