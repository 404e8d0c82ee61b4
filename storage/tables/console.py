"""Operator console: sign-in credentials of users and their browser sessions.

A user who may sign in has one `ConsoleLogin` (email, password hash) and acts through its own API key row
(`key_id`), so everything the console does is recorded and authorised exactly like an API key's request.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field

from storage.tables import accounts  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import Stamped, json_field, utc_field


class ConsoleLogin(Stamped, table=True):
    __tablename__ = "console_logins"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    user_id: str = Field(primary_key=True, foreign_key="users.id", max_length=40)
    email: str = Field(max_length=320, unique=True)  # lower-cased
    password_hash: str = Field(max_length=200)  # argon2id, PHC string
    key_id: str = Field(foreign_key="api_keys.id", max_length=40)  # the key console requests act with
    last_sign_in_at: datetime | None = utc_field(nullable=True)


class ConsoleSession(Stamped, table=True):
    """Only a SHA-256 of the cookie value is stored; a new value is issued at every sign-in."""

    __tablename__ = "console_sessions"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=64)  # sha256 hex of the cookie value
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    expires_at: datetime = utc_field(index=True)


class Invitation(Stamped, table=True):
    """An invitation to join a workspace (issue 31): only a SHA-256 of the link's token is kept; the token is
    single-use (`accepted_at`) and expires. Accepting it creates the user with `role` (and `brand_ids`)."""

    __tablename__ = "invitations"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    email: str = Field(max_length=320, index=True)  # lower-cased
    role: str = Field(max_length=20)
    brand_ids: list[str] | None = json_field()  # None: every brand of the workspace
    token_hash: str = Field(max_length=64, unique=True)
    invited_by: str | None = Field(default=None, max_length=40)  # a user ID, or None from the CLI
    expires_at: datetime = utc_field()
    accepted_at: datetime | None = utc_field(nullable=True)
    revoked_at: datetime | None = utc_field(nullable=True)
