"""Workspaces, users and API keys."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field

from storage.tables._base import Stamped, json_field, utc_field


class Workspace(Stamped, table=True):
    __tablename__ = "workspaces"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=40)
    name: str = Field(max_length=200)
    plan_id: str = Field(default="free", max_length=40)


class User(Stamped, table=True):
    __tablename__ = "users"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    name: str = Field(max_length=200)
    email: str | None = Field(default=None, max_length=320)
    role: str = Field(default="member", max_length=20)  # member | admin | super_admin
    deactivated_at: datetime | None = utc_field(nullable=True)  # its sessions ended and keys revoked then


class ApiKey(Stamped, table=True):
    """Only a SHA-256 of the secret is kept; the secret is shown once, by the command that creates it."""

    __tablename__ = "api_keys"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (Index("ix_api_keys_key_hash", "key_hash", unique=True),)

    id: str = Field(primary_key=True, max_length=40)
    workspace_id: str = Field(foreign_key="workspaces.id", index=True, max_length=40)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    name: str = Field(max_length=200)
    key_hash: str = Field(max_length=64)
    key_hint: str = Field(max_length=40)  # prefix + last four characters, for operators
    scopes: list[str] = json_field(list, nullable=False)
    brand_ids: list[str] | None = json_field()  # None: every brand of the workspace
    revoked_at: datetime | None = utc_field(nullable=True)
    last_used_at: datetime | None = utc_field(nullable=True)  # refreshed at most once a minute (server/dispatch.py)
