"""API keys: `socialpub_live_<secret>`, stored as SHA-256 only, resolved to a `Caller` per request."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.errors import ApiError
from storage.tables.accounts import ApiKey, User, Workspace

KEY_PREFIX = "socialpub_live_"
_MAX_TOKEN = 200


@dataclass(frozen=True)
class Caller:
    key_id: str
    key_name: str
    workspace_id: str
    workspace_name: str
    user_id: str
    role: str
    scopes: frozenset[str]
    brand_ids: frozenset[str] | None  # None: every brand of the workspace
    last_used_at: datetime | None = None

    def sees_brand(self, brand_id: str) -> bool:
        return self.brand_ids is None or brand_id in self.brand_ids


def new_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(token: str) -> str:
    # Keys carry 256 random bits, so one fast hash is enough: no dictionary to defend against.
    return hashlib.sha256(token.encode()).hexdigest()


def key_hint(token: str) -> str:
    return f"{KEY_PREFIX}…{token[-4:]}"


def bearer_token(header: str | None) -> str:
    """The key from an Authorization header value; 401 with a precise message otherwise."""
    if not header:
        raise ApiError("UNAUTHORIZED", "Missing Authorization header. Send `Authorization: Bearer <API key>`.")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise ApiError("UNAUTHORIZED", "The Authorization header must be `Bearer <API key>`.")
    return token


async def authenticate(session: AsyncSession, token: str | None) -> Caller:
    if not token:
        raise ApiError("UNAUTHORIZED", "An API key is required. Send `Authorization: Bearer <API key>`.")
    if not token.startswith(KEY_PREFIX) or len(token) > _MAX_TOKEN:
        raise ApiError("UNAUTHORIZED", f"That is not a socialpub API key (keys start with `{KEY_PREFIX}`).")
    row = (await session.exec(
        select(ApiKey, User, Workspace)
        .join(User, User.id == ApiKey.user_id)
        .join(Workspace, Workspace.id == ApiKey.workspace_id)
        .where(ApiKey.key_hash == hash_key(token))
    )).first()
    if row is None or row[0].revoked_at is not None:
        raise ApiError("UNAUTHORIZED", "The API key is invalid or revoked.")
    key, user, workspace = row
    return Caller(
        key_id=key.id, key_name=key.name, workspace_id=workspace.id, workspace_name=workspace.name,
        user_id=user.id, role=user.role, scopes=frozenset(key.scopes),
        brand_ids=frozenset(key.brand_ids) if key.brand_ids is not None else None, last_used_at=key.last_used_at,
    )
