"""The notification producer other areas call, and email preference resolution.

    from tools.notifications.notify import notify
    await notify(session, now, brand, "post_failed", "post_failed", "Post failed on Instagram",
                 "“Spring launch” could not be published: the account needs reconnecting.")

In the caller's transaction it writes one in-app notification per recipient user, and one `email_outbox`
row for each recipient whose effective email preference for `category` is on (brand override if active,
else account defaults, else the built-in default). tools/events/mail_delivery.py sends the outbox over SMTP;
`planner_review_reminders` is mailed only as its daily digest (tools/events/digest.py), never per event.
Never put secrets, tokens or raw provider errors in a title or message: every recipient can read them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import insert
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.notifications import BUILT_IN_DEFAULTS, CATEGORIES, MESSAGE_MAX, TITLE_MAX
from schemas.platforms import BY_KEY as PLATFORMS_BY_KEY
from schemas.scopes import ADMIN_ROLES
from storage.statements import Write
from storage.tables.accounts import User
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.notifications import (
    EmailOutbox,
    Notification,
    NotificationAccountSettings,
    NotificationBrandOverride,
)
from tools.services import event_log as record

# Recipients are the users of the brand's workspace; a workspace with more users than this notifies the
# first ones by creation (a bound on the rows one event writes).
MAX_RECIPIENTS = 500
DEFAULT_DEDUPE_WINDOW = timedelta(hours=24)
NEEDS_REFRESH_STATUSES = ("expired", "needs_reauth")
RECIPIENTS_MEMO = "notify_recipients_memo"
# With a list at session.info[DEFERRED], notifications without a dedupe key are not flushed by `notify` but
# kept there for the caller's `flush_deferred` (one bulk insert for a whole group commit of the worker).
DEFERRED = "notify_deferred"
# Built once, run through Core on the session's connection (storage/statements.py).
_INSERT_NOTIFICATIONS = Write(insert(Notification.__table__))  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
_INSERT_EMAILS = Write(insert(EmailOutbox.__table__))  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it

_TYPE_RE = re.compile(r"[a-z][a-z0-9_]{0,59}")

Audience = Literal["all", "admins"] | Sequence[str]
# Categories whose emails come only as a digest (`digest=True`): the in-app notification is still per event.
DIGEST_ONLY = frozenset({"planner_review_reminders"})
CONSOLE = "/console"  # the console's mount (server/console/web.py PREFIX): emails link to its pages


def console_link(brand_id: str, page: str = "notifications") -> str:
    return f"{CONSOLE}/brands/{brand_id}/{page}"


@dataclass(frozen=True)
class NotifyResult:
    notifications: int
    emails: int


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def merged(base: dict[str, bool] | None, *over: dict[str, bool] | None) -> dict[str, bool]:
    """All eight booleans: built-in defaults, then each layer given (unknown keys dropped)."""
    out = dict(BUILT_IN_DEFAULTS)
    for layer in (base, *over):
        if layer:
            out.update({k: bool(v) for k, v in layer.items() if k in out})
    return out


async def account_settings(session: AsyncSession, user_id: str) -> tuple[NotificationAccountSettings | None,
                                                                          dict[str, bool]]:
    row = (await session.exec(select(NotificationAccountSettings)
                              .where(NotificationAccountSettings.user_id == user_id))).first()
    return row, merged(row.email_notifications if row else None)


async def effective_preferences(session: AsyncSession, brand_id: str,
                                user_ids: Iterable[str]) -> dict[str, dict[str, bool]]:
    """Effective email preferences of several users for one brand, in two queries."""
    ids = sorted(set(user_ids))
    if not ids:
        return {}
    accounts = {r.user_id: r.email_notifications for r in (await session.exec(
        select(NotificationAccountSettings).where(col(NotificationAccountSettings.user_id).in_(ids)))).all()}
    overrides = {r.user_id: r.email_notifications for r in (await session.exec(
        select(NotificationBrandOverride).where(NotificationBrandOverride.brand_id == brand_id,
                                                col(NotificationBrandOverride.user_id).in_(ids),
                                                col(NotificationBrandOverride.is_active).is_(True)))).all()}
    return {u: merged(accounts.get(u), overrides.get(u)) for u in ids}


async def _recipients(session: AsyncSession, workspace_id: str, audience: Audience) -> list[User]:
    query = select(User).where(User.workspace_id == workspace_id)
    if audience == "admins":
        query = query.where(col(User.role).in_(ADMIN_ROLES))
    elif audience != "all":
        wanted = sorted(set(audience))
        if not wanted:
            return []
        query = query.where(col(User.id).in_(wanted))  # IDs outside the workspace are simply not matched
    return list((await session.exec(query.order_by(col(User.created_at), User.id).limit(MAX_RECIPIENTS))).all())


async def notify(
    session: AsyncSession, now: datetime, brand: Brand | str, type: str, category: str, title: str, message: str,
    *, audience: Audience = "all", dedupe_key: str | None = None,
    dedupe_window: timedelta = DEFAULT_DEDUPE_WINDOW, link: str | None = None, digest: bool = False,
) -> NotifyResult:
    """Notify the users of `brand`'s workspace (or `audience`: "admins", or a list of user IDs).

    `type` says what happened (snake_case, e.g. "post_published"); `category` is one of the eight email
    categories and decides which preference applies. With `dedupe_key`, a user who already got a
    notification with that key within `dedupe_window` is skipped (e.g. one "needs refresh" per account/day).
    `link` is the console path the email points to (default: the brand's notifications page).
    """
    if category not in CATEGORIES:
        raise ValueError(f"category must be one of {', '.join(CATEGORIES)}")
    if not _TYPE_RE.fullmatch(type):
        raise ValueError("type must be snake_case, 1 to 60 characters")
    if isinstance(brand, str):
        found = await session.get(Brand, brand)
        if found is None:
            raise ValueError(f"no brand {brand}")
        brand = found
    # A caller that notifies many times in one transaction which changes no users or preferences (the
    # publishing worker's group commit) puts a dict at session.info[RECIPIENTS_MEMO]: the recipients and their
    # preferences are then looked up once per brand and audience.
    memo = session.info.get(RECIPIENTS_MEMO)
    key = (brand.id, audience if isinstance(audience, str) else tuple(audience))
    if memo is not None and key in memo:
        users, prefs = memo[key]
    else:
        users = await _recipients(session, brand.workspace_id, audience)
        prefs = await effective_preferences(session, brand.id, [u.id for u in users])
        if memo is not None:
            memo[key] = (users, prefs)
    if dedupe_key is not None and users:
        already = set((await session.exec(select(Notification.user_id).where(
            col(Notification.user_id).in_([u.id for u in users]), Notification.dedupe_key == dedupe_key,
            Notification.created_at >= now - dedupe_window))).all())
        users = [u for u in users if u.id not in already]
    if not users:
        return NotifyResult(0, 0)
    title, message = _clip(title, TITLE_MAX), _clip(message, MESSAGE_MAX)
    link = link or console_link(brand.id)
    mails_on = category not in DIGEST_ONLY or digest
    deferred = session.info.get(DEFERRED)
    if deferred is not None and dedupe_key is None:  # nothing in this transaction reads them back
        # Plain rows for `flush_deferred`'s Core inserts: a SQLModel object and the unit of work's insert of it
        # cost more than the rest of a notification. The same columns and values the objects below would write.
        rows, mails = [], []
        subject = _clip(f"[{brand.name}] {title}", TITLE_MAX)
        for user in users:
            note_id = new_id("ntf")
            rows.append({"id": note_id, "workspace_id": brand.workspace_id, "brand_id": brand.id, "user_id": user.id,
                         "type": type, "category": category, "title": title, "message": message, "is_read": False,
                         "read_at": None, "dedupe_key": None, "created_at": now})
            if mails_on and prefs[user.id][category]:
                mails.append({"id": new_id("eml"), "workspace_id": brand.workspace_id, "brand_id": brand.id,
                              "user_id": user.id, "notification_id": note_id, "category": category,
                              "to_email": user.email, "subject": subject, "body": message, "status": "pending",
                              "created_at": now, "link": link, "attempts": 0, "next_attempt_at": now,
                              "lease_owner": None, "lease_expires_at": None, "updated_at": now, "sent_at": None,
                              "last_error": None})
        deferred.append((rows, mails))
        return NotifyResult(len(rows), len(mails))
    notes, emails = [], []
    for user in users:
        note = Notification(id=new_id("ntf"), workspace_id=brand.workspace_id, brand_id=brand.id, user_id=user.id,
                            type=type, category=category, title=title, message=message, dedupe_key=dedupe_key,
                            created_at=now)
        notes.append(note)
        if mails_on and prefs[user.id][category]:
            emails.append(EmailOutbox(
                id=new_id("eml"), workspace_id=brand.workspace_id, brand_id=brand.id, user_id=user.id,
                notification_id=note.id, category=category, to_email=user.email,
                subject=_clip(f"[{brand.name}] {title}", TITLE_MAX), body=message, created_at=now, link=link,
                next_attempt_at=now, updated_at=now))
    session.add_all(notes)
    await session.flush()  # notifications first: outbox rows reference them
    session.add_all(emails)
    await session.flush()
    return NotifyResult(len(notes), len(emails))


async def flush_deferred(session: AsyncSession) -> None:
    """Insert the notifications `notify` kept at session.info[DEFERRED] (plain rows): all of them, then their
    emails, one Core insert each."""
    deferred = session.info.get(DEFERRED) or []
    if notes := [note for notes, _ in deferred for note in notes]:
        await _INSERT_NOTIFICATIONS.run_many(session, notes)
    if emails := [email for _, emails in deferred for email in emails]:
        await _INSERT_EMAILS.run_many(session, emails)
    deferred.clear()


async def integration_needs_refresh(session: AsyncSession, now: datetime, integration: Integration,
                                    *, brand: Brand | None = None) -> NotifyResult:
    """Call when an integration turns `expired` or `needs_reauth` (category integration_refresh).
    At most one per integration and user per day."""
    brand = brand or await session.get(Brand, integration.brand_id)
    assert brand is not None
    record.integration(session, now, integration, "integration.needs_reauth")
    known = PLATFORMS_BY_KEY.get(integration.platform)
    platform = known.display_name if known else integration.platform
    account = integration.display_name or integration.username or platform
    return await notify(
        session, now, brand, "integration_needs_refresh", "integration_refresh",
        f"Reconnect {platform}: {account}",
        f"The {platform} account {account} of {brand.name} needs reconnecting before it can publish again "
        f"(status {integration.status}). Scheduled posts to it will fail until it is reconnected.",
        dedupe_key=f"integration_refresh:{integration.id}")


async def integration_expiring(session: AsyncSession, now: datetime, integration: Integration,
                               expires_at: datetime) -> NotifyResult:
    """Call when an account's authorisation will expire and its network cannot refresh it (LinkedIn without a
    refresh token): a reconnect notice ahead of time (category integration_refresh), once per expiry."""
    brand = await session.get(Brand, integration.brand_id)
    assert brand is not None
    known = PLATFORMS_BY_KEY.get(integration.platform)
    platform = known.display_name if known else integration.platform
    account = integration.display_name or integration.username or platform
    record.integration(session, now, integration, "integration.expiring", expires_at=expires_at)
    return await notify(
        session, now, brand, "integration_expiring", "integration_refresh",
        f"Reconnect {platform} soon: {account}",
        f"The {platform} authorisation of {account} ({brand.name}) expires on {expires_at:%Y-%m-%d} and "
        f"{platform} cannot renew it on its own. Reconnect the account before then so scheduled posts keep "
        "publishing.",
        dedupe_key=f"integration_expiring:{integration.id}:{expires_at:%Y%m%d}", dedupe_window=timedelta(days=60))


async def integration_status_changed(session: AsyncSession, now: datetime, integration: Integration,
                                     previous_status: str) -> NotifyResult | None:
    """The hook for any code that changes `integration.status`: notifies on a transition into a status that
    needs a refresh (connected -> expired / needs_reauth), nothing otherwise."""
    if integration.status in NEEDS_REFRESH_STATUSES and previous_status not in NEEDS_REFRESH_STATUSES:
        return await integration_needs_refresh(session, now, integration)
    return None


async def mark_read(session: AsyncSession, now: datetime, user_id: str, *, brand_id: str | None = None,
                    ids: Sequence[str] | None = None) -> int:
    """Mark a user's notifications read (the dashboard's action; no API route does this)."""
    query = select(Notification).where(Notification.user_id == user_id, col(Notification.is_read).is_(False))
    if brand_id is not None:
        query = query.where(Notification.brand_id == brand_id)
    if ids is not None:
        query = query.where(col(Notification.id).in_(list(ids)))
    rows = (await session.exec(query.limit(10_000))).all()
    for row in rows:
        row.is_read, row.read_at = True, now
    await session.flush()
    return len(rows)


async def set_account_defaults(session: AsyncSession, now: datetime, user: User,
                               values: dict[str, bool]) -> dict[str, bool]:
    """Set some of a user's account-wide email defaults (the dashboard's account settings)."""
    unknown = sorted(set(values) - set(CATEGORIES))
    if unknown:
        raise ValueError(f"unknown categories: {', '.join(unknown)}; known: {', '.join(CATEGORIES)}")
    row, current = await account_settings(session, user.id)
    updated = merged(current, values)
    if row is None:
        session.add(NotificationAccountSettings(id=new_id("nas"), workspace_id=user.workspace_id, user_id=user.id,
                                                email_notifications=updated, created_at=now, updated_at=now))
    else:
        row.email_notifications = updated
        row.updated_at = now
    await session.flush()
    return updated
