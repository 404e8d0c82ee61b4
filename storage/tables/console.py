"""Operator console: sign-in credentials of users and their browser sessions.

A user who may sign in has one `ConsoleLogin` (email, password hash) and acts through its own API key row
(`key_id`), so everything the console does is recorded and authorised exactly like an API key's request.
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field

from storage.tables._base import Stamped, utc_field


class ConsoleLogin(Stamped, table=True):
    __tablename__ = "console_logins"

    user_id: str = Field(primary_key=True, foreign_key="users.id", max_length=40)
    email: str = Field(max_length=320, unique=True)  # lower-cased
    password_hash: str = Field(max_length=200)  # argon2id, PHC string
    key_id: str = Field(foreign_key="api_keys.id", max_length=40)  # the key console requests act with


class ConsoleSession(Stamped, table=True):
    """Only a SHA-256 of the cookie value is stored; a new value is issued at every sign-in."""

    __tablename__ = "console_sessions"

    id: str = Field(primary_key=True, max_length=64)  # sha256 hex of the cookie value
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    expires_at: datetime = utc_field(index=True)
