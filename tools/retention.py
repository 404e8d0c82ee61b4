"""Retention: a worker tick that deletes what the service no longer needs, in bounded batches.

- Idempotency records older than `SOCIALPUB_IDEMPOTENCY_TTL` (default 24 h). The dispatcher already treats an
  expired record as absent, so a replay after the window acts as a new request whether or not this tick has
  run yet; the tick only reclaims the space.
- Finished jobs: `done` after JOB_DONE_DAYS, `failed` after JOB_FAILED_DAYS (kept longer for diagnosis).
- Rate-limit counters (`SOCIALPUB_RATE_LIMIT_STORAGE=database`) whose window ended.
- Spent OAuth codes and rotated refresh tokens (kept to detect a replay) once they would have expired anyway.
- Events (docs/events.md) after EVENT_DAYS: webhook attempts, then settled webhook messages, then fanned-out events
  no message refers to; settled email outbox rows (sent, failed, skipped).

Each kind deletes at most BATCH rows per worker pass, found by a read first so an idle pass takes no write lock.
Notifications, publish history and the sandbox ledger are kept (docs/operations.md, "Retention").
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, exists
from sqlmodel import col, select

from tools.runtime import Runtime

BATCH = 500
JOB_DONE_DAYS = 7
JOB_FAILED_DAYS = 30
EVENT_DAYS = 30  # webhook delivery logs, the event log, sent emails


def idempotency_cutoff(rt: Runtime, now: datetime | None = None) -> datetime:
    """Records created before this instant are expired (the dispatcher and this tick agree on it)."""
    return (now or rt.clock.now()) - timedelta(seconds=rt.settings.idempotency_ttl)


async def _delete_batch(rt: Runtime, model: Any, pk: Any, *where: Any) -> int:
    async with rt.db.session(write=False) as session:
        ids = list((await session.exec(select(pk).where(*where).limit(BATCH))).all())
    if not ids:
        return 0
    async with rt.db.session(write=True) as session:
        result = await session.exec(delete(model).where(pk.in_(ids), *where))
        return result.rowcount or 0


async def sweep(rt: Runtime) -> dict[str, int]:
    """One bounded pass over every kind; returns rows deleted per kind."""
    # The tables are imported here: the dispatcher imports `idempotency_cutoff`, and a process that never sweeps
    # (a stdio server before its first call, a CLI command) need not build them.
    from storage.tables.idempotency import IdempotencyRecord
    from storage.tables.jobs import Job
    from storage.tables.oauth import OAuthSpentToken
    from storage.tables.operations import RateLimitCounter

    now = rt.clock.now()
    return {
        "idempotency_records": await _delete_batch(rt, IdempotencyRecord, IdempotencyRecord.id,
                                                   IdempotencyRecord.created_at < idempotency_cutoff(rt, now)),
        "jobs_done": await _delete_batch(rt, Job, Job.id, Job.status == "done",
                                         Job.run_at < now - timedelta(days=JOB_DONE_DAYS)),
        "jobs_failed": await _delete_batch(rt, Job, Job.id, Job.status == "failed",
                                           Job.run_at < now - timedelta(days=JOB_FAILED_DAYS)),
        # Unix time, as the limiter writes it (the limits library counts on the wall clock).
        "rate_limit_counters": await _delete_batch(rt, RateLimitCounter, RateLimitCounter.key,
                                                   RateLimitCounter.expires_at < time.time()),
        "oauth_spent_tokens": await _delete_batch(rt, OAuthSpentToken, OAuthSpentToken.token_hash,
                                                  OAuthSpentToken.expires_at < time.time()),
        **await _events(rt, now - timedelta(days=EVENT_DAYS)),
    }


async def _events(rt: Runtime, cutoff: datetime) -> dict[str, int]:
    """Children first: attempts, settled messages, then events no message refers to."""
    from storage.tables.events import Event, WebhookAttempt, WebhookMessage  # here: see `sweep`
    from storage.tables.notifications import EmailOutbox

    return {
        "webhook_attempts": await _delete_batch(rt, WebhookAttempt, WebhookAttempt.id,
                                                WebhookAttempt.created_at < cutoff),
        "webhook_messages": await _delete_batch(
            rt, WebhookMessage, WebhookMessage.id, col(WebhookMessage.status).in_(("delivered", "failed")),
            WebhookMessage.updated_at < cutoff,
            ~exists().where(col(WebhookAttempt.message_id) == WebhookMessage.id)),
        "events": await _delete_batch(rt, Event, Event.id, col(Event.fanned_out).is_(True), Event.created_at < cutoff,
                                      ~exists().where(col(WebhookMessage.event_id) == Event.id)),
        "email_outbox": await _delete_batch(rt, EmailOutbox, EmailOutbox.id,
                                            col(EmailOutbox.status).in_(("sent", "failed", "skipped")),
                                            EmailOutbox.created_at < cutoff),
    }


async def retention_tick(rt: Runtime, worker_id: str) -> int:
    """Housekeeping is not work: it never keeps the worker from sleeping (or counts in `worker --once`);
    a backlog drains one bounded batch per pass."""
    await sweep(rt)
    return 0


TICKS = [retention_tick]
