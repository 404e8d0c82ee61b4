"""Leases: the one claim / renew / release / retry mechanism of the worker, for every table whose rows a worker
carries out (background jobs in `storage/queue.py`, due Schedules in `tools/publishing/claims.py`).

A row is held by a worker while its `lease_owner` names the worker and `lease_expires_at` is ahead; a worker that
dies simply stops renewing, and once the lease has expired the row is claimable again (crash recovery).

- **Claim** is one statement: `UPDATE ... SET lease ... WHERE id IN (SELECT id ... WHERE <due> ORDER BY ...
  LIMIT n FOR UPDATE SKIP LOCKED) RETURNING id`. On PostgreSQL two workers skip each other's locked rows; SQLite
  serialises writers and SQLAlchemy leaves the locking clause out there, so the same statement is atomic on both.
  What is due (the table's own states, plus `expired(now)`) is the caller's condition.
- **Renew** pushes forward the lease of every row a worker holds, locked in ID order (as every other multi-row
  lock of the worker, so the two cannot deadlock). It finds them through the `lease_owner` column, which a
  partial index (`lease_owner IS NOT NULL`) makes as cheap as the number of claims, whatever the table's size.
- **Release** gives rows back, only those the worker still holds, with the caller's new values.
- **Retry** is one backoff rule, `RetryPolicy`: base doubled per attempt, capped, never shorter than what the
  other side asked for (`Retry-After`), and given up after a number of attempts.

Why not a job library: see docs/decisions.md ("One lease mechanism for jobs and publishing").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import Update

from storage.db import Database


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: `base`, 2 x base, 4 x base ... capped at `cap`; final after `max_attempts`."""

    base: timedelta
    cap: timedelta
    max_attempts: int

    def delay(self, attempts: int, retry_after: float | None = None) -> timedelta:
        """The wait after the `attempts`-th attempt failed (at least `retry_after` seconds, within the cap)."""
        delay = min(self.cap, self.base * (2 ** max(0, attempts - 1)))
        if retry_after:
            delay = max(delay, timedelta(seconds=min(retry_after, self.cap.total_seconds())))
        return delay

    def exhausted(self, attempts: int, max_attempts: int | None = None) -> bool:
        """No attempt is left (`max_attempts`: the row's own bound, when it carries one)."""
        return attempts >= (self.max_attempts if max_attempts is None else max_attempts)


@dataclass(frozen=True)
class Leased:
    """A table whose rows are claimed under a lease: `table` has `id`, `lease_owner`, `lease_expires_at` and
    `updated_at`; `order_by` is the claim order; `on_claim` the other values a claim sets (a status, a count)."""

    table: Table
    order_by: Sequence[Any]
    on_claim: Mapping[str, Any]

    def expired(self, now: datetime) -> ColumnElement[bool]:
        """Held by a worker whose lease ran out (it died or hung): claimable again."""
        c = self.table.c
        return and_(c.lease_owner.is_not(None), c.lease_expires_at < now)

    def claim_statement(self, due: ColumnElement[bool], now: datetime, owner: str, lease: timedelta,
                        limit: int) -> Update:
        c = self.table.c
        chosen = (select(c.id).where(due).order_by(*self.order_by).limit(limit)
                  .with_for_update(skip_locked=True))
        return (update(self.table).where(c.id.in_(chosen))
                .values(lease_owner=owner, lease_expires_at=now + lease, updated_at=now, **self.on_claim)
                .returning(c.id))

    async def any_due(self, db: Database, due: ColumnElement[bool]) -> bool:
        """Whether a claim would find a row: a read first, so an idle worker pass takes no write lock."""
        async with db.session(write=False) as session:
            connection = await session.connection()
            return (await connection.execute(select(self.table.c.id).where(due).limit(1))).first() is not None

    async def claim(self, db: Database, due: ColumnElement[bool], now: datetime, owner: str, *,
                    lease: timedelta, limit: int) -> list[str]:
        """Claim up to `limit` due rows for `owner`, atomically; their IDs (sorted)."""
        async with db.session(write=True) as session:
            connection = await session.connection()
            rows = await connection.execute(self.claim_statement(due, now, owner, lease, limit))
            return sorted(rows.scalars().all())

    def held(self, owner: str, ids: Sequence[str] | None = None) -> Any:
        """The IDs of the rows `owner` holds (of `ids`, when given), locked in ID order."""
        c = self.table.c
        query = select(c.id).where(c.lease_owner == owner)
        if ids is not None:
            query = query.where(c.id.in_(ids))
        return query.order_by(c.id).with_for_update()

    def renew_statement(self, owner: str, expires: datetime) -> Update:
        c = self.table.c
        return update(self.table).where(c.id.in_(self.held(owner))).values(lease_expires_at=expires)

    async def renew(self, connection: AsyncConnection, owner: str, now: datetime, lease: timedelta) -> int:
        """Push the lease of every row `owner` holds to `now + lease`; how many."""
        return (await connection.execute(self.renew_statement(owner, now + lease))).rowcount

    async def release(self, connection: AsyncConnection, owner: str, ids: Sequence[str], now: datetime,
                      values: Mapping[str, Any] | None = None) -> int:
        """Give back those of `ids` that `owner` still holds (lease cleared, `values` set); how many."""
        c = self.table.c
        statement = (update(self.table).where(c.id.in_(self.held(owner, ids)))
                     .values(lease_owner=None, lease_expires_at=None, updated_at=now, **(values or {})))
        return (await connection.execute(statement)).rowcount


def holds(row: Any, owner: str) -> bool:
    """Whether `owner` still holds this (ORM) row's lease: the check before settling work done under it."""
    return row is not None and row.lease_owner == owner


def drop(row: Any, now: datetime) -> None:
    """Clear this (ORM) row's lease: it is settled, or due again for any worker."""
    row.lease_owner = row.lease_expires_at = None
    row.updated_at = now
