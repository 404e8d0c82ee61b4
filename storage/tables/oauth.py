"""MCP authorization (OAuth 2.1): registered clients, authorization codes, grants, spent codes and tokens.

A grant is what the user consented to: it owns an API key row (`key_id`) with the granted scopes and brands,
so a token's authority is exactly an API key's, and revoking that key (console or CLI) ends the grant.
Only SHA-256 hashes of codes and tokens are stored; client secrets are derived (HMAC of the client ID), never
stored. Expiry times are Unix seconds of the wall clock (the OAuth handlers compare with `time.time()`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from storage.tables import accounts  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, Stamped, json_field, utc_field


class OAuthClient(Stamped, table=True):
    __tablename__ = "oauth_clients"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    client_id: str = Field(primary_key=True, max_length=64)
    metadata_json: dict[str, Any] = json_field(dict, nullable=False)  # RFC 7591 metadata without the secret


class OAuthCode(Stamped, table=True):
    __tablename__ = "oauth_codes"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    code_hash: str = Field(primary_key=True, max_length=64)
    client_id: str = Field(foreign_key="oauth_clients.client_id", max_length=64)
    user_id: str = Field(foreign_key="users.id", max_length=40)
    scopes: list[str] = json_field(list, nullable=False)
    brand_ids: list[str] | None = json_field()
    code_challenge: str = Field(max_length=128)
    redirect_uri: str = Field(max_length=2000)
    redirect_uri_provided_explicitly: bool = True
    resource: str | None = Field(default=None, max_length=2000)
    expires_at: int


class OAuthGrant(Stamped, table=True):
    __tablename__ = "oauth_grants"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    id: str = Field(primary_key=True, max_length=40)
    client_id: str = Field(foreign_key="oauth_clients.client_id", index=True, max_length=64)
    user_id: str = Field(foreign_key="users.id", index=True, max_length=40)
    key_id: str = Field(foreign_key="api_keys.id", index=True, max_length=40)
    access_hash: str = Field(max_length=64, unique=True)
    access_expires_at: int
    refresh_hash: str = Field(max_length=64, unique=True)
    refresh_expires_at: int
    resource: str | None = Field(default=None, max_length=2000)
    revoked_at: datetime | None = utc_field(nullable=True)


class OAuthSpentToken(SQLModel, table=True):
    """An authorization code already exchanged or a refresh token already rotated, remembered (by hash) with the
    grant it belongs to until it would have expired: presenting it again is a replay, and the grant is revoked
    (RFC 6749 §4.1.2 and §10.5, RFC 9700 §4.14.2). Expired rows are deleted by the retention tick."""

    model_config = TABLE_CONFIG
    __tablename__ = "oauth_spent_tokens"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    token_hash: str = Field(primary_key=True, max_length=64)
    grant_id: str = Field(foreign_key="oauth_grants.id", index=True, max_length=40)
    expires_at: int = Field(index=True)
