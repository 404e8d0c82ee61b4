"""OAuth state of the connect flows (tools/networks): client apps registered per network and instance, and the
single-use state between an authorize URL and its callback. Secrets here are sealed by storage/vault.py."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field

from storage.tables import brands  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field


class OAuthApp(Stamped, table=True):
    """A client registration: one per network and authorization server (a Mastodon instance registers its
    own app once; fixed networks have one each). `client_secret` is a vault token."""

    __tablename__ = "oauth_apps"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("platform", "server", name="uq_oauth_apps_server"),)

    id: str = Field(primary_key=True, max_length=40)
    platform: str = Field(max_length=40)
    server: str = Field(max_length=500)  # the authorization server's base URL ("" for a fixed network)
    client_id: str = Field(max_length=500)
    client_secret: str | None = Field(default=None, max_length=4000)  # sealed
    redirect_uri: str = Field(max_length=2000)
    scopes: str = Field(default="", max_length=1000)


class OAuthState(Stamped, table=True):
    """One authorize URL in flight. `id` is the SHA-256 of the `state` parameter (the state itself is never
    stored); used once (`used_at`), valid until `expires_at`. `code_verifier` is the sealed PKCE verifier."""

    __tablename__ = "oauth_states"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=64)
    platform: str = Field(max_length=40)
    brand_id: str = Field(foreign_key="brands.id", max_length=40)
    app_id: str = Field(foreign_key="oauth_apps.id", max_length=40)
    code_verifier: str = Field(max_length=4000)  # sealed
    # Connect options the callback needs (the instance, a reconnect's integration ID, a display name).
    options: dict[str, Any] | None = json_field()
    expires_at: datetime = utc_field(index=True)
    used_at: datetime | None = utc_field(nullable=True)
    integration_id: str | None = Field(default=None, max_length=40)  # the account the callback connected
