"""API keys: `socialpub_live_<secret>`, stored as SHA-256 only, resolved to a `Caller` per request.

A resolved key is remembered for `CALLER_CACHE_SECONDS` (`CallerCache`), so a busy key costs one indexed
lookup every few seconds instead of one per request. A commit in this process that changes an API key, a user
or a workspace (revoking a key, a new role, a renamed workspace) forgets every remembered key at once; a
change committed by another process (the CLI, a second server) is seen within the TTL.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import event
from sqlalchemy.orm import Session
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import Select

from schemas.errors import ApiError
from schemas.scopes import usable_scopes
from storage.tables.accounts import ApiKey, User, Workspace

KEY_PREFIX = "socialpub_live_"
# An OAuth access token (MCP authorization, server/console/oauth.py): here so that telling the two kinds of
# bearer token apart does not import the OAuth server.
OAUTH_ACCESS_PREFIX = "socialpub_oat_"
_MAX_TOKEN = 200
CALLER_CACHE_SECONDS = 5.0  # how long another process's revocation may take to be seen here
CALLER_CACHE_SIZE = 1024  # bounded: when full it starts over
_AUTH_TABLES = frozenset({"api_keys", "users", "workspaces"})


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


def check_token(token: str | None) -> str:
    """The token's shape (before any database work); 401 when it cannot be a key."""
    if not token:
        raise ApiError("UNAUTHORIZED", "An API key is required. Send `Authorization: Bearer <API key>`.")
    if not token.startswith(KEY_PREFIX) or len(token) > _MAX_TOKEN:
        raise ApiError("UNAUTHORIZED", f"That is not a socialpub API key (keys start with `{KEY_PREFIX}`).")
    return token


async def authenticate(session: AsyncSession, token: str | None) -> Caller:
    check_token(token)
    assert token is not None
    # Columns, not ORM objects: one indexed lookup, no identity-map work.
    # `Select(...)` is what sqlmodel's `select` builds for several columns; its typed overloads stop at four.
    row = (await session.exec(
        Select(col(ApiKey.id), col(ApiKey.name), col(ApiKey.scopes), col(ApiKey.brand_ids),
               col(ApiKey.last_used_at), col(ApiKey.revoked_at), col(User.id), col(User.role), col(Workspace.id),
               col(Workspace.name))
        .join(User, col(User.id) == col(ApiKey.user_id))
        .join(Workspace, col(Workspace.id) == col(ApiKey.workspace_id))
        .where(col(ApiKey.key_hash) == hash_key(token))
    )).first()
    if row is None or row[5] is not None:
        raise ApiError("UNAUTHORIZED", "The API key is invalid or revoked.")
    key_id, key_name, scopes, brand_ids, last_used_at, _, user_id, role, workspace_id, workspace_name = row
    return Caller(
        key_id=key_id, key_name=key_name, workspace_id=workspace_id, workspace_name=workspace_name,
        user_id=user_id, role=role, scopes=usable_scopes(scopes, role),
        brand_ids=frozenset(brand_ids) if brand_ids is not None else None, last_used_at=last_used_at,
    )


# Bumped after every commit (in this process) that touched a key, a user or a workspace: remembered callers of
# an older generation are forgotten.
_generation = 0


class CallerCache:
    """Token -> Caller for `CALLER_CACHE_SECONDS`, per dispatcher (so per database). Only keys that resolved are
    remembered; a refused key is looked up every time."""

    def __init__(self, ttl: float = CALLER_CACHE_SECONDS) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[float, int, Caller]] = {}

    def get(self, token: str) -> Caller | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        expires, generation, caller = entry
        if generation != _generation or time.monotonic() >= expires:
            self._entries.pop(token, None)
            return None
        return caller

    def put(self, token: str, caller: Caller, generation: int) -> None:
        if generation != _generation or self.ttl <= 0:
            return  # a change committed while the key was being read: do not remember the older row
        if len(self._entries) >= CALLER_CACHE_SIZE:
            self._entries.clear()
        self._entries[token] = (time.monotonic() + self.ttl, generation, caller)

    async def authenticate(self, session: AsyncSession, token: str | None) -> Caller:
        caller = self.get(check_token(token))
        if caller is None:
            generation = _generation
            caller = await authenticate(session, token)
            self.put(token, caller, generation)  # pyright: ignore[reportArgumentType]  # generation is set on the line above
        return caller


def generation() -> int:
    return _generation


@event.listens_for(Session, "after_flush")
def _note_auth_change(session: Session, _flush_context) -> None:
    for obj in (*session.new, *session.dirty, *session.deleted):
        if getattr(obj, "__tablename__", None) in _AUTH_TABLES:
            session.info["auth_changed"] = True
            return


@event.listens_for(Session, "do_orm_execute")
def _note_auth_statement(state) -> None:
    if (state.is_update or state.is_delete) and not state.execution_options.get("auth_unchanged") \
            and getattr(state.statement, "table", None) is not None and state.statement.table.name in _AUTH_TABLES:
        state.session.info["auth_changed"] = True


@event.listens_for(Session, "after_commit")
def _forget_callers(session: Session) -> None:
    global _generation
    if session.info.pop("auth_changed", False):
        _generation += 1


@event.listens_for(Session, "after_rollback")
def _drop_note(session: Session) -> None:
    session.info.pop("auth_changed", None)
