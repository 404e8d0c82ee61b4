"""In-app notifications, the email outbox, and per-user email preferences (account defaults, brand overrides)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, Stamped, json_field, utc_field


class Notification(SQLModel, table=True):
    """One notification for one user about one brand. Listed newest first by ID (time-sortable)."""

    model_config = TABLE_CONFIG
    __tablename__ = "notifications"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        # The list's keyset: WHERE user_id, brand_id [, is_read] AND id < cursor ORDER BY id DESC.
        Index("ix_notifications_user_brand_id", "user_id", "brand_id", "id"),
        Index("ix_notifications_user_brand_read_id", "user_id", "brand_id", "is_read", "id"),
        Index("ix_notifications_user_dedupe", "user_id", "dedupe_key", "created_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    type: str = Field(max_length=60)
    category: str = Field(max_length=40)
    title: str = Field(max_length=200)
    message: str = Field(max_length=2000)
    is_read: bool = False
    read_at: datetime | None = utc_field(nullable=True)
    dedupe_key: str | None = Field(default=None, max_length=200)
    created_at: datetime = utc_field()


class EmailOutbox(SQLModel, table=True):
    """An email a notification asked for, recorded (in the notification's transaction) when the recipient's
    effective preference was on. The mail delivery tick (tools/events/mail_delivery.py) claims `pending` rows
    under a lease (storage/leases.py), sends each once over SMTP and records the outcome on the row."""

    model_config = TABLE_CONFIG
    __tablename__ = "email_outbox"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (
        Index("ix_email_outbox_status_created", "status", "created_at"),
        Index("ix_email_outbox_due", "status", "next_attempt_at"),
    )

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    notification_id: str = Field(foreign_key="notifications.id", index=True, max_length=40)
    category: str = Field(max_length=40)
    to_email: str | None = Field(default=None, max_length=320)  # the user's address when recorded, if any
    subject: str = Field(max_length=200)
    body: str = Field(max_length=4000)
    # pending -> sending (claimed) -> sent | failed (permanent SMTP refusal, or retries exhausted) | skipped
    # (no address). A claim whose worker died is `sending` with an expired lease: claimable again.
    status: str = Field(default="pending", max_length=20)
    created_at: datetime = utc_field()
    # A console path (under /console) the email links to; the public URL is prefixed at send time.
    link: str | None = Field(default=None, max_length=500)
    attempts: int = 0
    next_attempt_at: datetime | None = utc_field(nullable=True)
    lease_owner: str | None = Field(default=None, max_length=80)
    lease_expires_at: datetime | None = utc_field(nullable=True)
    updated_at: datetime | None = utc_field(nullable=True)
    sent_at: datetime | None = utc_field(nullable=True)
    last_error: str | None = Field(default=None, max_length=500)


class NotificationAccountSettings(Stamped, table=True):
    """A user's account-wide email defaults; absent means the built-in default (every category on)."""

    __tablename__ = "notification_account_settings"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("user_id", name="uq_notification_account_settings_user"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    email_notifications: dict[str, bool] = json_field(dict, nullable=False)


class NotificationBrandOverride(Stamped, table=True):
    """A user's override for one brand. DELETE keeps the record with is_active false."""

    __tablename__ = "notification_brand_overrides"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("user_id", "brand_id", name="uq_notification_override_user_brand"),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    is_active: bool = True
    email_notifications: dict[str, bool] = json_field(dict, nullable=False)
