"""Job queue operations on the worker's one lease mechanism (`storage/leases.py`): a claim is one atomic statement
that moves due jobs (or jobs whose lease expired, after a crash) to `running` under this worker's lease, so two
workers never run the same job at once; a failed job is retried with the shared backoff rule."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, or_
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from storage.db import Database
from storage.leases import Leased, RetryPolicy, drop, holds
from storage.tables.jobs import Job


class RetryLater(Exception):
    """Raised by a job handler for a transient failure: the job is retried with backoff."""


async def enqueue(session: AsyncSession, now: datetime, kind: str, payload: dict[str, Any], *,
                  run_at: datetime | None = None, dedupe_key: str | None = None, max_attempts: int = 5) -> Job:
    if dedupe_key is not None:
        existing = (await session.exec(select(Job).where(Job.dedupe_key == dedupe_key))).first()
        if existing is not None:
            return existing
    job = Job(id=new_id("job"), kind=kind, payload=payload, run_at=run_at or now, max_attempts=max_attempts,
              dedupe_key=dedupe_key, created_at=now, updated_at=now)
    session.add(job)
    await session.flush()
    return job


_TABLE = Job.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
JOBS = Leased(_TABLE, order_by=(_TABLE.c.run_at,), on_claim={"status": "running", "attempts": _TABLE.c.attempts + 1})
# A failed job waits 2 s, 4 s, 8 s ... at most 5 min; how many attempts it gets is its own `max_attempts`.
RETRY = RetryPolicy(base=timedelta(seconds=2), cap=timedelta(minutes=5), max_attempts=5)


def due(now: datetime, kinds: tuple[str, ...] | None = None) -> ColumnElement[bool]:
    """Queued jobs whose time came, and running ones whose worker's lease expired (it crashed)."""
    c = JOBS.table.c
    ready = or_(and_(c.status == "queued", c.run_at <= now), and_(c.status == "running", JOBS.expired(now)))
    return and_(ready, c.kind.in_(kinds)) if kinds else ready


async def claim(db: Database, now: datetime, owner: str, *, lease: timedelta, limit: int = 10,
                kinds: tuple[str, ...] | None = None) -> list[str]:
    return await JOBS.claim(db, due(now, kinds), now, owner, lease=lease, limit=limit)


async def finish(session: AsyncSession, job_id: str, owner: str, now: datetime) -> bool:
    """Mark done, only if this worker still holds the lease."""
    job = await session.get(Job, job_id)
    if job is None or not holds(job, owner) or job.status != "running":
        return False
    drop(job, now)
    job.status = "done"
    job.dedupe_key = None  # a later job for the same subject may be queued again
    return True


async def fail(session: AsyncSession, job_id: str, owner: str, now: datetime, error: str, *,
               retry: bool) -> bool:
    """Requeue with exponential backoff while attempts remain, else mark failed."""
    job = await session.get(Job, job_id)
    if job is None or not holds(job, owner):
        return False
    job.last_error = error[:2000]
    drop(job, now)
    if retry and not RETRY.exhausted(job.attempts, job.max_attempts):
        job.status = "queued"
        job.run_at = now + RETRY.delay(job.attempts)
    else:
        job.status = "failed"
        job.dedupe_key = None
    return True
