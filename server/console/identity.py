"""Console users: passwords, browser sessions, and the `Caller` a signed-in user acts as.

A console user is a `users` row with a `ConsoleLogin` (email + argon2id hash) and its own API key row, created
with it and never shown. Every console action that the API also offers is dispatched with a `Caller` built from
that key, so authority, brand visibility, idempotency and audit fields (`approved_by_key`) are the API's own.
The key's scopes follow the user's role (`schemas.scopes.ROLE_SCOPES`).
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import Select

from schemas.ids import new_id
from schemas.scopes import ADMIN_ROLES, ROLE_SCOPES, ROLES
from storage.tables.accounts import ApiKey, User, Workspace
from storage.tables.console import ConsoleLogin, ConsoleSession
from tools.operator import actions as operator
from tools.services.auth import Caller

if TYPE_CHECKING:
    from argon2 import PasswordHasher

SESSION_LIFETIME = timedelta(hours=12)
MIN_PASSWORD = 10
MAX_PASSWORD = 1024  # argon2 hashes anything; the bound stops a megabyte "password" from costing CPU

# Verified when the email is unknown, so timing does not tell (the result is refused whatever it is): a hash of a
# discarded random secret, written here rather than hashed at import, which cost every `socialpub` command
# importing this module 0.15-0.2 s of CPU (bench/HISTORY.md, "Start-up").
DUMMY_HASH = "$argon2id$v=19$m=65536,t=3,p=4$pcMeIjlAkF9LJnqbYANV3g$+tq+t3WdmD2meGrg3W92Muw6tk41Oz8ZEg9Hk5eZJxQ"


@functools.cache
def _argon2() -> tuple[PasswordHasher, str]:
    """The hasher (argon2id with the library's current recommended parameters) and the dummy hash, hashed afresh
    only if those parameters have changed so that verifying it still costs what a real verify does. argon2 is
    imported here, by the commands that hash or verify a password."""
    from argon2 import PasswordHasher

    hasher = PasswordHasher()
    return hasher, hasher.hash(secrets.token_hex(32)) if hasher.check_needs_rehash(DUMMY_HASH) else DUMMY_HASH


@dataclass(frozen=True)
class SignedIn:
    user: User
    login: ConsoleLogin
    caller: Caller
    session_id: str  # sha256 hex of the cookie value

    @property
    def is_admin(self) -> bool:
        return self.user.role in ADMIN_ROLES


def normalise_email(email: str) -> str:
    return email.strip().lower()


def check_password(password: str) -> None:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise operator.OperatorError(f"the password must be {MIN_PASSWORD} to {MAX_PASSWORD} characters")


async def create_user(session: AsyncSession, now: datetime, workspace: Workspace, email: str, password: str,
                      role: str = "member", name: str | None = None) -> tuple[User, ConsoleLogin]:
    """A user who can sign in to the console, with the API key its console requests act with."""
    email = normalise_email(email)
    if role not in ROLES:
        raise operator.OperatorError(f"role must be one of {', '.join(ROLES)}")
    if "@" not in email or not 3 <= len(email) <= 320:
        raise operator.OperatorError("give an email address")
    check_password(password)
    if await login_exists(session, email):
        raise operator.OperatorError(f"a console user {email} already exists")
    user = User(id=new_id("usr"), workspace_id=workspace.id, name=name or email, email=email, role=role,
                created_at=now, updated_at=now)
    session.add(user)
    await session.flush()
    key, _secret = await operator.create_key(session, now, workspace, f"Console: {email}", ROLE_SCOPES[role],
                                             role=role, user_id=user.id)
    login = ConsoleLogin(user_id=user.id, email=email, password_hash=_argon2()[0].hash(password), key_id=key.id,
                         created_at=now, updated_at=now)
    session.add(login)
    await session.flush()
    return user, login


async def accept_invitation(session: AsyncSession, now: datetime, token: str, password: str,
                            name: str | None = None) -> tuple[User, ConsoleLogin]:
    """Spend an invitation (tools/operator/team.py): its email becomes a user of its workspace with its role and
    brand restriction, signing in with `password`."""
    from tools.operator import team

    invitation = await team.open_invitation(session, now, token, lock=True)
    check_password(password)
    workspace = await session.get(Workspace, invitation.workspace_id)
    assert workspace is not None
    user, login = await create_user(session, now, workspace, invitation.email, password, role=invitation.role,
                                    name=(name or "").strip()[:200] or None)
    if invitation.brand_ids is not None:
        key = await session.get(ApiKey, login.key_id)
        assert key is not None
        key.brand_ids = list(invitation.brand_ids)
        session.add(key)
    invitation.accepted_at, invitation.updated_at = now, now
    session.add(invitation)
    await session.flush()
    return user, login


async def login_exists(session: AsyncSession, email: str) -> bool:
    return (await session.exec(select(ConsoleLogin.user_id).where(
        ConsoleLogin.email == normalise_email(email)))).first() is not None


async def set_password(session: AsyncSession, now: datetime, email: str, password: str) -> ConsoleLogin:
    """A new password; every session of the user ends."""
    check_password(password)
    login = (await session.exec(select(ConsoleLogin).where(ConsoleLogin.email == normalise_email(email)))).first()
    if login is None:
        raise operator.OperatorError(f"no console user {normalise_email(email)}")
    login.password_hash = _argon2()[0].hash(password)
    login.updated_at = now
    session.add(login)
    await session.exec(delete(ConsoleSession).where(col(ConsoleSession.user_id) == login.user_id))
    await session.flush()
    return login


async def console_key_ids(session: AsyncSession, workspace_id: str) -> set[str]:
    """Keys that belong to console sign-ins (hidden from the API keys page)."""
    return set((await session.exec(select(ConsoleLogin.key_id).join(User, col(User.id) == ConsoleLogin.user_id)
                                   .where(User.workspace_id == workspace_id))).all())


async def verify_login(session: AsyncSession, email: str, password: str) -> ConsoleLogin | None:
    if len(password) > MAX_PASSWORD or len(email) > 320:
        return None
    login = (await session.exec(select(ConsoleLogin).join(User, col(User.id) == ConsoleLogin.user_id).where(
        ConsoleLogin.email == normalise_email(email), col(User.deactivated_at).is_(None)))).first()
    from argon2.exceptions import InvalidHashError, VerificationError

    hasher, dummy = _argon2()
    try:
        hasher.verify(login.password_hash if login else dummy, password)
    except (VerificationError, InvalidHashError):
        return None
    return login


def session_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def start_session(session: AsyncSession, now: datetime, login: ConsoleLogin,
                        replacing: str | None = None) -> str:
    """A new session for a successful sign-in; returns the cookie value. Any session the browser brought
    along (`replacing`, a cookie value) is deleted, so a planted session ID is never promoted (no fixation)."""
    if replacing:
        await session.exec(delete(ConsoleSession).where(col(ConsoleSession.id) == session_hash(replacing)))
    await session.exec(delete(ConsoleSession).where(col(ConsoleSession.user_id) == login.user_id,
                                                    col(ConsoleSession.expires_at) <= now))
    token = secrets.token_urlsafe(32)
    login.last_sign_in_at, login.updated_at = now, now
    session.add(login)
    session.add(ConsoleSession(id=session_hash(token), user_id=login.user_id, expires_at=now + SESSION_LIFETIME,
                               created_at=now, updated_at=now))
    await session.flush()
    return token


async def end_session(session: AsyncSession, token: str) -> None:
    await session.exec(delete(ConsoleSession).where(col(ConsoleSession.id) == session_hash(token)))


async def resolve(session: AsyncSession, now: datetime, token: str | None) -> SignedIn | None:
    """The signed-in user of a cookie value, or None (unknown, expired, or the user's console key revoked)."""
    if not token or len(token) > 100:
        return None
    # Five entities: sqlmodel's `select` is typed for at most four, so its Select class is named directly.
    rows: Select[ConsoleSession, User, ConsoleLogin, ApiKey, Workspace] = Select(
        ConsoleSession, User, ConsoleLogin, ApiKey, Workspace)
    row = (await session.exec(
        rows.join(User, col(User.id) == ConsoleSession.user_id)
        .join(ConsoleLogin, col(ConsoleLogin.user_id) == User.id)
        .join(ApiKey, col(ApiKey.id) == ConsoleLogin.key_id)
        .join(Workspace, col(Workspace.id) == User.workspace_id)
        .where(ConsoleSession.id == session_hash(token)))).first()
    if row is None:
        return None
    sess, user, login, key, ws = row
    if sess.expires_at <= now or key.revoked_at is not None or user.deactivated_at is not None:
        return None
    caller = Caller(key_id=key.id, key_name=key.name, workspace_id=ws.id, workspace_name=ws.name, user_id=user.id,
                    role=user.role, scopes=frozenset(key.scopes),
                    brand_ids=frozenset(key.brand_ids) if key.brand_ids is not None else None,
                    last_used_at=key.last_used_at)
    return SignedIn(user=user, login=login, caller=caller, session_id=sess.id)
