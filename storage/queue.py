"""Job queue operations. A claim is one atomic statement that moves due jobs (or jobs whose lease expired,
after a crash) to `running` under this worker's lease, so two workers never run the same job at once."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, text
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from storage.db import Database
from storage.tables.jobs import Job
from storage.types import UTCDateTime


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


async def claim(db: Database, now: datetime, owner: str, *, lease: timedelta, limit: int = 10,
                kinds: tuple[str, ...] | None = None) -> list[str]:
    kind_filter = ""
    params: dict[str, Any] = {"now": now, "owner": owner, "expires": now + lease, "limit": limit}
    if kinds:
        kind_filter = " AND kind IN (" + ", ".join(f":k{i}" for i in range(len(kinds))) + ")"
        params.update({f"k{i}": k for i, k in enumerate(kinds)})
    due = ("((status = 'queued' AND run_at <= :now) OR (status = 'running' AND lease_expires_at < :now))"
           + kind_filter)
    lock = "" if db.is_sqlite else " FOR UPDATE SKIP LOCKED"
    sql = text(
        f"UPDATE jobs SET status = 'running', lease_owner = :owner, lease_expires_at = :expires, "
        f"attempts = attempts + 1, updated_at = :now "
        f"WHERE id IN (SELECT id FROM jobs WHERE {due} ORDER BY run_at LIMIT :limit{lock}) RETURNING id"
    ).bindparams(bindparam("now", type_=UTCDateTime()), bindparam("expires", type_=UTCDateTime()))
    async with db.session(write=True) as session:
        connection = await session.connection()
        return list((await connection.execute(sql, params)).scalars().all())


async def finish(session: AsyncSession, job_id: str, owner: str, now: datetime) -> bool:
    """Mark done, only if this worker still holds the lease."""
    job = await session.get(Job, job_id)
    if job is None or job.lease_owner != owner or job.status != "running":
        return False
    job.status, job.updated_at, job.lease_owner, job.lease_expires_at = "done", now, None, None
    job.dedupe_key = None  # a later job for the same subject may be queued again
    return True


async def fail(session: AsyncSession, job_id: str, owner: str, now: datetime, error: str, *,
               retry: bool) -> bool:
    """Requeue with exponential backoff while attempts remain, else mark failed."""
    job = await session.get(Job, job_id)
    if job is None or job.lease_owner != owner:
        return False
    job.last_error = error[:2000]
    job.lease_owner, job.lease_expires_at, job.updated_at = None, None, now
    if retry and job.attempts < job.max_attempts:
        job.status = "queued"
        job.run_at = now + timedelta(seconds=min(300, 2 ** job.attempts))
    else:
        job.status = "failed"
        job.dedupe_key = None
    return True
