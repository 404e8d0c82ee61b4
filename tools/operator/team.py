"""A workspace's team (issue 31): list its users, invite by email, change a role, restrict a member to some brands,
deactivate. Operator actions, not API routes (the spec has none): the console's team page and `socialpub users`
both call these, so they refuse the same things.

Authority follows the rows the API already checks: a user's role caps its keys' scopes (`usable_scopes`), its
console key carries its brand restriction, and deactivating revokes every key of the user and ends its console
sessions, so an API call or a console page made with them is refused at once (this process forgets its cached
callers on the commit; another process within `CALLER_CACHE_SECONDS`).

An invitation is a link with a single-use token (only its SHA-256 kept) that expires after `INVITATION_TTL`; the
person who opens it picks a password and becomes a user (server/console/identity.accept_invitation).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.scopes import ADMIN_ROLES, ROLE_SCOPES, ROLES
from schemas.time import iso
from storage.tables.accounts import ApiKey, User, Workspace
from storage.tables.brands import Brand
from storage.tables.console import ConsoleLogin, ConsoleSession, Invitation
from tools.operator.actions import OperatorError

INVITATION_TTL = timedelta(days=7)
MAX_USERS_LISTED = 1000
INVITE_PATH = "/console/invitations/"

# Email delivery (built elsewhere) registers here: (email, workspace name, link, expires_at) -> sent?
# Until one is registered, or when it answers False, the link is shown once to the inviter instead.
InvitationSender = Callable[[str, str, str, datetime], Awaitable[bool]]
invitation_senders: list[InvitationSender] = []


async def send_invitation(invitation: Invitation, workspace_name: str, link: str) -> bool:
    """Hand the link to a registered sender (email); False when none sent it (then show the link once)."""
    for sender in invitation_senders:
        if await sender(invitation.email, workspace_name, link, invitation.expires_at):
            return True
    return False


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _email(value: str) -> str:
    email = value.strip().lower()
    if "@" not in email or not 3 <= len(email) <= 320 or not email.isprintable() or " " in email:
        raise OperatorError("give an email address")
    return email


def _role(role: str) -> str:
    if role not in ROLES:
        raise OperatorError(f"role must be one of {', '.join(ROLES)}")
    return role


async def _brand_ids(session: AsyncSession, workspace_id: str, brand_ids: list[str] | None) -> list[str] | None:
    if brand_ids is None:
        return None
    wanted = sorted({b.strip() for b in brand_ids if b.strip()})
    if not wanted or len(wanted) > 500:
        raise OperatorError("a brand restriction needs 1 to 500 brand IDs")
    found = set((await session.exec(select(Brand.id).where(Brand.workspace_id == workspace_id,
                                                           col(Brand.id).in_(wanted)))).all())
    missing = [b for b in wanted if b not in found]
    if missing:
        raise OperatorError(f"no brand {', '.join(missing)} in this workspace")
    return wanted


async def member(session: AsyncSession, workspace_id: str, user_ref: str) -> User:
    """A user of the workspace by ID or console email; refused (not found) for any other workspace's user."""
    ref = user_ref.strip()
    if "@" in ref:
        user = (await session.exec(select(User).join(ConsoleLogin, col(ConsoleLogin.user_id) == User.id).where(
            ConsoleLogin.email == ref.lower(), User.workspace_id == workspace_id))).first()
    else:
        user = await session.get(User, ref[:40])
    if user is None or user.workspace_id != workspace_id:
        raise OperatorError(f"no user {ref[:320]} in this workspace")
    return user


async def list_users(session: AsyncSession, workspace_id: str) -> list[dict[str, Any]]:
    """The workspace's console users (people who sign in), with role, brand restriction and last sign-in."""
    rows = (await session.exec(
        select(User, ConsoleLogin, ApiKey).join(ConsoleLogin, col(ConsoleLogin.user_id) == User.id)
        .join(ApiKey, col(ApiKey.id) == ConsoleLogin.key_id).where(User.workspace_id == workspace_id)
        .order_by(col(User.created_at), User.id).limit(MAX_USERS_LISTED))).all()
    return [{"id": u.id, "name": u.name, "email": login.email, "role": u.role,
             "brand_ids": key.brand_ids, "last_sign_in_at": iso(login.last_sign_in_at),
             "deactivated_at": iso(u.deactivated_at), "active": u.deactivated_at is None}
            for u, login, key in rows]


async def list_invitations(session: AsyncSession, now: datetime, workspace_id: str) -> list[Invitation]:
    """Invitations still open (neither accepted, revoked nor expired)."""
    return list((await session.exec(select(Invitation).where(
        Invitation.workspace_id == workspace_id, col(Invitation.accepted_at).is_(None), col(Invitation.revoked_at).is_(None),
        Invitation.expires_at > now).order_by(col(Invitation.created_at)).limit(MAX_USERS_LISTED))).all())


async def invite(session: AsyncSession, now: datetime, workspace: Workspace, email: str, role: str = "member", *,
                 brand_ids: list[str] | None = None, invited_by: str | None = None,
                 public_url: str = "") -> tuple[Invitation, str]:
    """A new invitation and its link (the token in it is never stored, so the link exists only in this answer).
    An earlier open invitation of the same email to this workspace is revoked: the newest link is the one."""
    email, role = _email(email), _role(role)
    if (await session.exec(select(ConsoleLogin.user_id).where(ConsoleLogin.email == email))).first():
        raise OperatorError(f"{email} already has a console sign-in")
    restricted = await _brand_ids(session, workspace.id, brand_ids)
    for old in await list_invitations(session, now, workspace.id):
        if old.email == email:
            old.revoked_at, old.updated_at = now, now
            session.add(old)
    token = secrets.token_urlsafe(32)
    invitation = Invitation(id=new_id("inv"), workspace_id=workspace.id, email=email, role=role,
                            brand_ids=restricted, token_hash=token_hash(token), invited_by=invited_by,
                            expires_at=now + INVITATION_TTL, created_at=now, updated_at=now)
    session.add(invitation)
    await session.flush()
    return invitation, f"{public_url.rstrip('/')}{INVITE_PATH}{token}"


async def open_invitation(session: AsyncSession, now: datetime, token: str, *, lock: bool = False) -> Invitation:
    """The invitation a link's token names, if it can still be accepted."""
    if not token or len(token) > 100:
        raise OperatorError("This invitation link is not valid.")
    query = select(Invitation).where(Invitation.token_hash == token_hash(token))
    invitation = (await session.exec(query.with_for_update() if lock else query)).first()
    if invitation is None or invitation.revoked_at is not None:
        raise OperatorError("This invitation link is not valid.")
    if invitation.accepted_at is not None:
        raise OperatorError("This invitation was already used: sign in instead.")
    if invitation.expires_at <= now:
        raise OperatorError("This invitation expired: ask for a new one.")
    return invitation


async def _admins_left(session: AsyncSession, workspace_id: str, without: str) -> int:
    return (await session.exec(select(func.count()).select_from(User).join(
        ConsoleLogin, col(ConsoleLogin.user_id) == User.id).where(
        User.workspace_id == workspace_id, User.id != without, col(User.role).in_(ADMIN_ROLES),
        col(User.deactivated_at).is_(None)))).one()


async def _console_key(session: AsyncSession, user_id: str) -> ApiKey | None:
    login = await session.get(ConsoleLogin, user_id)
    return await session.get(ApiKey, login.key_id) if login is not None else None


async def set_role(session: AsyncSession, now: datetime, workspace_id: str, user_ref: str, role: str, *,
                   acting_role: str | None = None) -> User:
    """A new role: the console key's scopes follow it; other keys keep theirs, capped by the role at every call
    (`usable_scopes`). Refused when it would leave the workspace without an active admin, or when an admin (not
    a super admin) would hand out or take away super_admin."""
    role = _role(role)
    user = await member(session, workspace_id, user_ref)
    if user.deactivated_at is not None:
        raise OperatorError(f"{user.email or user.id} is deactivated")
    if acting_role is not None and acting_role != "super_admin" and "super_admin" in (role, user.role):
        raise OperatorError("only a super admin can grant or take away super_admin")
    if user.role in ADMIN_ROLES and role not in ADMIN_ROLES and not await _admins_left(session, workspace_id,
                                                                                       user.id):
        raise OperatorError("this is the workspace's last admin: make another user admin first")
    user.role, user.updated_at = role, now
    session.add(user)
    key = await _console_key(session, user.id)
    if key is not None:
        key.scopes, key.updated_at = list(ROLE_SCOPES[role]), now
        session.add(key)
    await session.flush()
    return user


async def restrict_brands(session: AsyncSession, now: datetime, workspace_id: str, user_ref: str,
                          brand_ids: list[str] | None) -> User:
    """Limit what a user sees in the console to some brands (None: every brand); its console key carries it."""
    user = await member(session, workspace_id, user_ref)
    restricted = await _brand_ids(session, workspace_id, brand_ids)
    if restricted is not None and user.role in ADMIN_ROLES:
        raise OperatorError("admins see every brand: change the role to member first")
    key = await _console_key(session, user.id)
    if key is None:
        raise OperatorError(f"{user.id} has no console sign-in")
    key.brand_ids, key.updated_at = restricted, now
    session.add(key)
    await session.flush()
    return user


async def deactivate(session: AsyncSession, now: datetime, workspace_id: str, user_ref: str) -> tuple[User, int]:
    """Revoke every key of the user and end its console sessions, at once; returns (user, keys revoked).
    The last active admin cannot be deactivated."""
    user = await member(session, workspace_id, user_ref)
    if user.deactivated_at is not None:
        return user, 0
    if user.role in ADMIN_ROLES and not await _admins_left(session, workspace_id, user.id):
        raise OperatorError("this is the workspace's last admin: make another user admin first")
    keys = (await session.exec(select(ApiKey).where(ApiKey.user_id == user.id,
                                                    col(ApiKey.revoked_at).is_(None)))).all()
    for key in keys:
        key.revoked_at, key.updated_at = now, now
        session.add(key)
    await session.exec(delete(ConsoleSession).where(col(ConsoleSession.user_id) == user.id))
    user.deactivated_at, user.updated_at = now, now
    session.add(user)
    await session.flush()
    return user, len(keys)
