"""The mail delivery tick: drains `email_outbox` over SMTP on the worker's one lease mechanism (storage/leases.py).

Each pass claims up to `BATCH` due rows (`pending` and due, or `sending` under an expired lease: their worker died)
under this worker's lease, sends one message per row, and settles the row:
- accepted by the server -> `sent` (with `sent_at`);
- a transient failure (4xx, server down, timeout) -> `pending` again, due after `RETRY`'s backoff; after its last
  attempt -> `failed`;
- a permanent refusal (5xx) -> `failed` with the reason (shown to admins on the console's notifications page);
- no address on the user -> `skipped`.

At most once per acceptance: a row is marked `sent` right after the server accepted it. A worker that dies between
the acceptance and that update leaves the row `sending`; when its lease expires another worker sends it again (the
same Message-ID, so a receiver may drop the copy). That window is one database write long.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, or_
from sqlmodel import col, select

from storage.leases import Leased, RetryPolicy
from storage.tables.brands import Brand
from storage.tables.notifications import EmailOutbox, Notification
from tools.events import mail
from tools.notifications.notify import console_link
from tools.runtime import Runtime
from tools.services.telemetry import count_delivery

log = logging.getLogger("socialpub.events.mail")

_TABLE = EmailOutbox.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
OUTBOX = Leased(_TABLE, order_by=(_TABLE.c.created_at, _TABLE.c.id),
                on_claim={"status": "sending", "attempts": _TABLE.c.attempts + 1})
# 1, 2, 4 ... 60 min between attempts; given up after 10 (about seven hours of trying).
RETRY = RetryPolicy(base=timedelta(minutes=1), cap=timedelta(hours=1), max_attempts=10)
LEASE = timedelta(minutes=2)
BATCH = 20
_warned: set[str] = set()


def due(now: datetime) -> ColumnElement[bool]:
    c = OUTBOX.table.c
    waiting = and_(c.status == "pending", or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now))
    return or_(waiting, and_(c.status == "sending", OUTBOX.expired(now)))


def config_or_none(rt: Runtime) -> mail.SmtpConfig | None:
    try:
        return mail.smtp_config(rt.settings)
    except mail.MailConfigError as exc:
        if str(exc) not in _warned:  # once per process, not once per pass
            _warned.add(str(exc))
            log.error("email delivery is off: %s", exc)
        return None


def email_enabled(rt: Runtime) -> bool:
    return config_or_none(rt) is not None


async def _letter(rt: Runtime, row: EmailOutbox) -> mail.Letter:
    base = rt.settings.public_url.rstrip("/")
    async with rt.db.session(write=False) as session:
        note = await session.get(Notification, row.notification_id)
        brand = await session.get(Brand, row.brand_id)
    return mail.Letter(
        to=row.to_email or "", subject=row.subject, title=note.title if note else row.subject, body=row.body,
        link=base + (row.link or console_link(row.brand_id)),
        preferences=f"{base}{console_link(row.brand_id)}#email", brand=brand.name if brand else row.brand_id,
        category=row.category)


def message_id(row_id: str, config: mail.SmtpConfig) -> str:
    return f"<{row_id}@{config.mail_from.rpartition('@')[2].strip('> ') or 'socialpub'}>"


async def _settle(rt: Runtime, owner: str, row_id: str, values: dict) -> None:
    async with rt.db.session(write=True) as session:
        connection = await session.connection()
        await OUTBOX.release(connection, owner, [row_id], rt.clock.now(), values)


async def deliver_one(rt: Runtime, owner: str, config: mail.SmtpConfig, row_id: str) -> str:
    """Send one claimed row and settle it; the outcome (sent | retry | failed | skipped)."""
    async with rt.db.session(write=False) as session:
        row = await session.get(EmailOutbox, row_id)
    if row is None or row.lease_owner != owner:
        return "lost"
    if not row.to_email:
        await _settle(rt, owner, row_id, {"status": "skipped", "last_error": "the user has no email address"})
        return "skipped"
    message = mail.build(await _letter(rt, row), config.mail_from, message_id(row.id, config))
    try:
        await mail.send(config, message)
    except mail.Permanent as exc:
        await _settle(rt, owner, row_id, {"status": "failed", "last_error": str(exc)[:500]})
        count_delivery("email", "failed")
        log.warning("email %s refused: %s", row_id, exc)
        return "failed"
    except mail.Transient as exc:
        now = rt.clock.now()
        if RETRY.exhausted(row.attempts):
            await _settle(rt, owner, row_id, {"status": "failed", "last_error": f"gave up: {exc}"[:500]})
            count_delivery("email", "failed")
            return "failed"
        await _settle(rt, owner, row_id, {"status": "pending", "last_error": str(exc)[:500],
                                          "next_attempt_at": now + RETRY.delay(row.attempts)})
        count_delivery("email", "retry")
        log.info("email %s: %s; retrying", row_id, exc)
        return "retry"
    await _settle(rt, owner, row_id, {"status": "sent", "sent_at": rt.clock.now(), "last_error": None})
    count_delivery("email", "sent")
    return "sent"


async def deliver_mail(rt: Runtime, owner: str) -> int:
    """Tick: send the due emails; how many rows it settled. Nothing without SMTP settings."""
    config = config_or_none(rt)
    if config is None or owner in rt.stopping:
        return 0
    if not await OUTBOX.any_due(rt.db, due(rt.clock.now())):
        return 0
    ids = await OUTBOX.claim(rt.db, due(rt.clock.now()), rt.clock.now(), owner, lease=LEASE, limit=BATCH)
    done = 0
    for row_id in ids:
        if owner in rt.stopping:  # hand back what was not started
            await _settle(rt, owner, row_id, {"status": "pending"})
            continue
        await deliver_one(rt, owner, config, row_id)
        done += 1
    return done


async def recent_failures(rt: Runtime, workspace_id: str, limit: int = 20) -> list[EmailOutbox]:
    """The workspace's latest emails that could not be delivered (the console shows them to admins)."""
    async with rt.db.session(write=False) as session:
        return list((await session.exec(
            select(EmailOutbox).where(EmailOutbox.workspace_id == workspace_id, EmailOutbox.status == "failed")
            .order_by(col(EmailOutbox.created_at).desc()).limit(limit))).all())


TICKS = [deliver_mail]
