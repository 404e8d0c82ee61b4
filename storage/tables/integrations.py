"""Integrations (connected social accounts). Provider credentials live here and nowhere else; no response
model has a field for them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables import accounts, brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field


class Integration(Stamped, table=True):
    __tablename__ = "integrations"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_integrations_brand_created", "brand_id", "created_at", "id"),
                      # The token tick's query: connected accounts whose refresh (or reconnect notice) is due.
                      Index("ix_integrations_refresh_due", "status", "refresh_due_at"))

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    platform: str = Field(max_length=40)
    status: str = Field(default="connected", max_length=20)  # connected | expired | needs_reauth
    display_name: str | None = Field(default=None, max_length=200)
    username: str | None = Field(default=None, max_length=200)
    avatar_url: str | None = Field(default=None, max_length=2000)
    permissions: dict[str, Any] | None = json_field()
    provider: str = Field(default="sandbox", max_length=40)
    # Secret: never returned by any route.
    provider_account_id: str | None = Field(default=None, max_length=200)
    credentials: dict[str, Any] | None = json_field()
    # Provider-private state (the sandbox keeps its injected faults and boards here).
    provider_state: dict[str, Any] | None = json_field()
    # When the token tick should next look at this account: its credentials' expiry less its network's window
    # (tools/networks/tokens.py keeps it with the credentials). None: nothing expires.
    refresh_due_at: datetime | None = utc_field(nullable=True)
