"""How the publishing worker's steps reach the database: each step of a run (start it, record an attempt, settle a
target, finish the run) is a function of one `Tx`, run in a write transaction.

`Steps` is the object a worker pass hands to every run of its batch. With `group=True` (a worker pass) the steps
that are ready at the same moment share ONE transaction and commit (`Group`): the group first locks their
Schedules (in ID order, so two groups cannot deadlock) and reads, one statement per table, the rows the steps
use (`prefetch`); the steps find them in `Tx.rows`; what they change is flushed together at commit (the unit of
work batches the UPDATEs; the runs, publications, events and metrics enrollments a group made go in as one
Core insert per table). Each caller gets its result only after that commit, so a provider is still called only
after the attempt it follows is durable; a group that fails is retried step by step, each in its own
transaction, so one faulty run cannot fail the others.
With `group=False` every step is its own transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from sqlalchemy import Table, bindparam, event, insert
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.publishing import Publication, PublishExecution, PublishTarget, Schedule
from tools.notifications import notify
from tools.runtime import Runtime

log = logging.getLogger("socialpub.publishing")

M = TypeVar("M")
T = TypeVar("T")


@dataclass
class Tx:
    """One write transaction of the worker's steps. `rows`: the rows read (or made) in it, by model and ID: a
    step asks `get` before going to the session. `locked`: the Schedules the group locked and read with their
    rows; `run_targets`: their runs' targets, as read after the lock; `inserts`: rows the steps made as plain
    values (runs, publications, events, enrollments), inserted together, table by table, before the session's
    next flush (None: each inserted at once)."""

    session: AsyncSession
    rows: dict[tuple[type, str], Any] = field(default_factory=dict)
    locked: set[str] = field(default_factory=set)
    run_targets: dict[str, list[PublishTarget]] = field(default_factory=dict)
    inserts: dict[Table, list[dict[str, Any]]] | None = None

    async def get(self, model: type[M], ident: str) -> M | None:
        """The row of `model` with this ID: the one this transaction holds, else `session.get`."""
        found = self.rows.get((model, ident))
        if found is None:
            found = await self.session.get(model, ident)
            if found is not None:
                self.rows[(model, ident)] = found
        return found

    def keep(self, row: Any) -> None:
        """A row made in this transaction: later steps find it with `get`."""
        self.rows[(type(row), row.id)] = row

    async def insert(self, table: Table, values: dict[str, Any]) -> None:
        """Insert a row that no step changes in this transaction as a Core insert (no ORM object to build). The
        unit of work does not order inserts by foreign key and a run's targets reference the run, so these go in
        before the session's objects: in a group, with the group's other new rows of the table as one
        executemany at the start of its next flush (`insert_pending`); alone, at once. Tables go in the order
        they were first used (runs before anything that references them)."""
        if self.inserts is not None:
            self.inserts.setdefault(table, []).append(values)
            return
        await (await self.session.connection()).execute(insert(table), [values])

    def insert_pending(self, session: Any, _context: Any, _instances: Any) -> None:
        """The session's `before_flush` hook in a group: the rows its steps made, so those that reference them
        can follow."""
        for table, rows in (self.inserts or {}).items():
            if rows:
                session.connection().execute(insert(table), list(rows))
                rows.clear()

    async def insert_left(self) -> None:
        """The group's rows no flush has written yet: the session flushes (and `insert_pending` runs) only when
        an ORM object changed, which a group's last steps need not do."""
        if any((self.inserts or {}).values()):
            await self.session.run_sync(self.insert_pending, None, None)


def _read_by(column: Any, *, lock: bool = False) -> Any:
    """The rows whose `column` is in the list bound as `ids`, current as read (populate_existing); built once."""
    query = select(column.class_).where(column.in_(bindparam("ids", expanding=True)))
    if lock:
        query = query.order_by(column).with_for_update()
    return query.execution_options(populate_existing=True)


_READ_SCHEDULES = _read_by(Schedule.id, lock=True)
_READ_RUNS = _read_by(PublishExecution.id)
_READ_TARGETS = _read_by(PublishTarget.execution_id)
_READ_PUBLICATIONS = _read_by(Publication.id)
_READ_INTEGRATIONS = _read_by(Integration.id)
_READ_ITEMS = _read_by(ContentItem.id)
_READ_BRANDS = _read_by(Brand.id)


async def prefetch(tx: Tx, schedule_ids: list[str]) -> None:
    """Lock the Schedules (in ID order) and read the rows their steps use into `tx`: runs, targets, publications,
    content items, integrations, brands, one statement per table."""
    tx.inserts = {}
    event.listen(tx.session.sync_session, "before_flush", tx.insert_pending)
    if not schedule_ids:
        return
    ids = sorted(set(schedule_ids))

    async def read(query: Any, keys: list[str]) -> list[Any]:
        return list((await tx.session.exec(query, params={"ids": keys})).all())

    schedules = await read(_READ_SCHEDULES, ids)
    runs = sorted({x.latest_execution_id for x in schedules if x.latest_execution_id})
    rows: list[Any] = [*schedules]
    by_run: dict[str, list[PublishTarget]] = {run: [] for run in runs}
    if runs:
        rows += await read(_READ_RUNS, runs)
        targets = await read(_READ_TARGETS, runs)
        for target in targets:
            by_run[target.execution_id].append(target)
        publications = sorted({t.publication_id for t in targets if t.publication_id})
        rows += targets + (await read(_READ_PUBLICATIONS, publications) if publications else [])
    integrations = sorted({i for x in schedules for i in x.integration_ids or []})
    if integrations:
        rows += await read(_READ_INTEGRATIONS, integrations)
    rows += await read(_READ_ITEMS, sorted({x.content_item_id for x in schedules}))
    rows += await read(_READ_BRANDS, sorted({x.brand_id for x in schedules}))
    for row in rows:
        tx.keep(row)
    tx.locked = {x.id for x in schedules}
    tx.run_targets = by_run


@dataclass
class _Pending:
    work: Callable[[Tx], Awaitable[Any]]
    schedule_id: str | None = None  # the Schedule the step works on: the group reads its rows up front
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None


class Steps:
    """Runs the steps of a batch's runs: grouped (see the module) or each in its own transaction."""

    def __init__(self, rt: Runtime, *, group: bool = True) -> None:
        self.rt = rt
        self.group = group
        self.pending: list[_Pending] = []
        self.flushing = False

    async def run(self, work: Callable[[Tx], Awaitable[T]], schedule_id: str | None = None) -> T:
        """Run `work` in a committed write transaction; `schedule_id`: the Schedule it works on."""
        if not self.group:
            async with self.rt.db.session(write=True) as s:
                return await work(Tx(s))
        item = _Pending(work, schedule_id)
        self.pending.append(item)
        if self.flushing:
            await item.done.wait()
        else:  # the first caller commits for everyone ready, then for whoever queued meanwhile
            self.flushing = True
            batch: list[_Pending] = []
            try:
                await anyio.sleep(0)  # let the other ready steps join this transaction
                while self.pending:
                    batch, self.pending = self.pending, []
                    await self._commit(batch)
            finally:
                self.flushing = False
                for left in [*batch, *self.pending]:  # cancelled mid-commit: nobody waits for it forever
                    if not left.done.is_set():
                        left.error = RuntimeError("the group commit was cancelled")
                        left.done.set()
                self.pending = []
        if item.error is not None:
            raise item.error
        return item.result

    async def _commit(self, batch: list[_Pending]) -> None:
        try:
            async with self.rt.db.session(write=True) as s:
                s.info[notify.RECIPIENTS_MEMO] = {}  # the steps change no users or preferences
                s.info[notify.DEFERRED] = []  # their notifications: inserted together at the end
                tx = Tx(s)
                await prefetch(tx, [item.schedule_id for item in batch if item.schedule_id])
                results = [await item.work(tx) for item in batch]
                await tx.insert_left()
                await notify.flush_deferred(s)
        except Exception as exc:
            if len(batch) > 1:
                log.warning("a group of %d publishing steps failed; retrying them one by one", len(batch),
                            exc_info=True)
                for item in batch:
                    await self._commit([item])
                return
            batch[0].error = exc
        else:
            for item, result in zip(batch, results, strict=True):
                item.result = result
        for item in batch:
            item.done.set()
