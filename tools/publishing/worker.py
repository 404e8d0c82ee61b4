"""The publishing worker: turns due, approved Schedules into runs and runs into Publications.

One tick (`publish_due`, run by server/worker.py) repeatedly claims a bounded batch of due Schedules under a
lease and carries each out:

1. Claim, in one statement: approved Schedules that are `scheduled` and due, `publishing` ones whose retry
   time came (lease released), or `publishing` ones whose lease expired (a dead worker). SQLite: a conditional
   `UPDATE ... RETURNING` (writers are serialised); PostgreSQL: the same with `FOR UPDATE SKIP LOCKED`, so
   two workers never claim the same Schedule.
2. First claim of a run: a PublishExecution (`run_...`), one PublishTarget per integration with a stable
   idempotency token, and one Publication per target (status processing).
3. Per target: record the attempt (`attempting`, attempts + 1) and COMMIT; then call the provider outside any
   transaction; then settle in a new transaction, only while this worker still holds the lease. A target
   that was attempted before (a crash, a timeout or a retry) first asks the provider for its token
   (`find_post`) and publishes again, with the same token, only when the provider knows no such post.
4. When every target is final the run and the Schedule become published / partially_published / failed and
   the lease is cleared. Targets waiting to retry keep the Schedule `publishing` with its lease released and
   `next_attempt_at` set.

Nothing publishes without an approved Schedule whose approval came from a key holding publish:execute
(`approved_by_key`); a Schedule approved without one is put back on hold (defence in depth).
Provider IDs and permalinks stay in the tables; failure reasons are our own safe text, never the provider's.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

import anyio
from sqlalchemy import bindparam, event, insert, text, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import instance_state, set_attribute
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from providers.base import Account, PostRequest, PostResult, ProviderError
from schemas.ids import new_id
from schemas.platforms import BY_KEY
from schemas.textcount import compose_text
from storage import vault
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.media import Media
from storage.tables.publishing import (
    TARGET_FINAL_STATES,
    Publication,
    PublishExecution,
    PublishTarget,
    Schedule,
)
from storage.types import UTCDateTime
from storage.vault import VaultError
from tools.media.items import asset_url
from tools.notifications import notify
from tools.runtime import Runtime
from tools.services.accounts import account_of, outbound
from tools.services.redaction import ADAPTER_MARK, FAILURE_MAX, GENERIC_FAILURE, SAFE_FAILURES, adapter_reason
from tools.services.telemetry import count_outcome, observe_provider_call

log = logging.getLogger("socialpub.publishing")

# A worker's claim on a Schedule: short, renewed every RENEW_SECONDS by the claiming worker while it works
# (and at each attempt), so a live worker never loses it and a dead one's claims are free again within LEASE.
LEASE = timedelta(seconds=30)
RENEW_SECONDS = 10.0
STOP_POLL_SECONDS = 0.2  # how soon a stopping worker hands back the Schedules of its batch not yet started
BATCH = 20  # Schedules per claim while provider calls are slow (at CONCURRENCY)
# Schedules of a batch carried out at once; each one's targets go one after another. Their transactions are
# committed together (group commit, `_Group`), so this is also how many share one commit. It starts at
# CONCURRENCY: a stopping worker waits for the calls in flight, and each one in flight (hung, say) holds its
# Schedule until its lease expires. While every provider call answers within FAST_CALL_SECONDS it grows by
# one per such call up to FAST_CONCURRENCY (bigger groups: fewer statements and commits per target), and the
# claims grow with it (BATCH per CONCURRENCY); one slower call sets it back to CONCURRENCY.
CONCURRENCY = 4
FAST_CONCURRENCY = 16
FAST_CALL_SECONDS = 0.25
MAX_SCHEDULES_PER_TICK = 1000  # then the tick returns, so other ticks and jobs get their turn
MAX_ATTEMPTS = 5  # provider calls per target before a retryable failure becomes final
BACKOFF_BASE = timedelta(seconds=30)  # 30 s, 1 min, 2 min, 4 min ... capped
BACKOFF_MAX = timedelta(hours=1)
PROVIDER_TIMEOUT_SECONDS = 120.0  # a provider call that does not answer counts as a transient failure
READY_MEDIA = "completed"

# Safe failure text per provider error kind: never the provider's own words. The same sentences the receipt,
# publications and History show (tools/services/redaction.py), so what is stored is what clients read.
FAILURE_TEXT = {kind: text for kind, (text, _action) in SAFE_FAILURES.items()}
VAULT_LOCKED = ("The account's stored credentials cannot be opened by this service (its vault key is missing or "
                "changed); nothing was sent. The operator must restore the vault key, then schedule the post anew.")
APPROVAL_MISSING = {
    "code": "APPROVAL_PENDING",
    "message": "This Schedule has no recorded approval by a key holding publish:execute, so it was not "
               "published and is held for review.",
    "repair_guidance": "A key holding schedule:write and publish:execute approves it with approve_schedule.",
}

_DUE = ("approval_status = 'approved' AND ("
        "(status = 'scheduled' AND scheduled_at <= :now) "
        "OR (status = 'publishing' AND lease_owner IS NULL AND (next_attempt_at IS NULL OR next_attempt_at <= :now)) "
        "OR (status = 'publishing' AND lease_owner IS NOT NULL AND lease_expires_at < :now))")


M = TypeVar("M")
_FIELD_DEFAULTS: dict[type, list[tuple[str, Any]]] = {}


def _new_row(model: type[M], **values: Any) -> M:
    """A new (transient) object of a table model with `values` and the model's defaults for its other optional
    fields: what `model(**values)` makes, without SQLModel's constructor, which sends each of ~20 fields through
    pydantic's and SQLAlchemy's `__setattr__` (the largest share of making a run's targets and publications).
    The values go straight into the object's `__dict__`, as SQLAlchemy's loader fills a loaded object: the unit
    of work inserts a new object from its `__dict__`, and changes made after this are tracked as usual."""
    defaults = _FIELD_DEFAULTS.get(model)
    if defaults is None:
        defaults = _FIELD_DEFAULTS[model] = [(name, info) for name, info in model.model_fields.items()  # type: ignore[attr-defined]
                                             if not info.is_required()]
    manager = model._sa_class_manager  # type: ignore[attr-defined]
    manager.mapper._check_configure()  # what the constructor's `init` event does (no other listener here)
    obj = manager.new_instance()
    state = obj.__dict__
    for name, info in defaults:
        if name not in values:
            state[name] = info.get_default(call_default_factory=True)
    state.update(values)
    object.__setattr__(obj, "__pydantic_fields_set__", set(values))
    return obj


def _set(obj: Any, **values: Any) -> None:
    """`obj.<name> = <value>` for each column field given, as SQLModel's `__setattr__` does it (SQLAlchemy's tracked
    set, then the field joins pydantic's fields-set) minus its per-call checks: 0.45 µs a field instead of 4.6 on
    this machine, and a target's steps set ~40."""
    fields_set = obj.__pydantic_fields_set__
    for name, value in values.items():
        set_attribute(obj, name, value)
        fields_set.add(name)


def target_token(execution_id: str, integration_id: str) -> str:
    """Stable for every attempt of one target, unique across targets: what the provider dedupes on."""
    return "sp_" + hashlib.sha256(f"{execution_id}|{integration_id}".encode()).hexdigest()[:40]


def backoff(attempts: int, retry_after: float | None = None) -> timedelta:
    delay = min(BACKOFF_MAX, BACKOFF_BASE * (2 ** max(0, attempts - 1)))
    if retry_after:
        delay = max(delay, timedelta(seconds=min(retry_after, BACKOFF_MAX.total_seconds())))
    return delay


T = TypeVar("T")


@dataclass
class _Pending:
    work: Callable[[AsyncSession], Awaitable[Any]]
    schedule_id: str | None = None  # the Schedule the step works on: the group reads its rows up front
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None


class _Group:
    """Group commit for the Schedules of one batch: each step of a run is a function of a session; the steps
    that are ready at the same moment run one after another in ONE write transaction, and each caller gets its
    result only after that transaction committed. Every step keeps its own atomicity (all of a group commits or
    none does) and a provider is still called only after the attempt it follows is durable. A group that
    fails is retried step by step, each in its own transaction, so one faulty run cannot fail the others."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.pending: list[_Pending] = []
        self.flushing = False

    async def run(self, work: Callable[[AsyncSession], Awaitable[T]], schedule_id: str | None = None) -> T:
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
                await _prefetch(s, [item.schedule_id for item in batch if item.schedule_id])
                results = [await item.work(s) for item in batch]
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


# PostgreSQL: groups on this many connections at once, so one group's round trips could overlap another's.
# One: with set-wise reads a group's cost hardly grows with its size, and four lanes split the ready steps into
# groups of one (twice the worker's CPU per target, measured). SQLite has one writer at a time: one group.
POSTGRES_LANES = 1

_GROUPS: contextvars.ContextVar[list[_Group] | None] = contextvars.ContextVar("socialpub_publishing_groups",
                                                                                default=None)


def _groups(rt: Runtime) -> list[_Group]:
    return [_Group(rt) for _ in range(1 if rt.db.is_sqlite else POSTGRES_LANES)]


async def _step(rt: Runtime, work: Callable[[AsyncSession], Awaitable[T]], schedule_id: str | None = None) -> T:
    """Run one step of a run in a write transaction: the batch's group commit inside `publish_due` (the least
    busy group), else its own transaction. `schedule_id`: the Schedule it works on, whose rows the group reads
    (and locks) with those of its other steps."""
    groups = _GROUPS.get()
    if groups and groups[0].rt is rt:
        group = min(groups, key=lambda g: (g.flushing, len(g.pending)))
        return await group.run(work, schedule_id)
    async with rt.db.session(write=True) as s:
        return await work(s)


# --- the rows of a group, read set-wise ---------------------------------------------------------------------

_LOCKED = "publishing_locked"  # session.info: IDs of the Schedules the group locked and read with their rows
_RUN_TARGETS = "publishing_run_targets"  # session.info: execution ID -> its targets, read after the lock
_ROWS = "publishing_rows"  # session.info: every row the group read
_NEW_RUNS = "publishing_new_runs"  # session.info: runs made by the group's steps, inserted before its flush
_RUNS_TABLE = PublishExecution.__table__  # type: ignore[attr-defined]


def _read_by(column: Any, *, lock: bool = False) -> Any:
    """The rows whose `column` is in the list bound as `ids`, current as read (populate_existing); built once, so a
    group does not build and key its seven statements anew."""
    query = select(column.class_).where(column.in_(bindparam("ids", expanding=True)))
    if lock:
        query = query.order_by(column).with_for_update()
    return query.execution_options(populate_existing=True)


_READ_SCHEDULES = _read_by(Schedule.id, lock=True)  # type: ignore[arg-type]
_READ_RUNS = _read_by(PublishExecution.id)
_READ_TARGETS = _read_by(PublishTarget.execution_id)
_READ_PUBLICATIONS = _read_by(Publication.id)
_READ_INTEGRATIONS = _read_by(Integration.id)
_READ_ITEMS = _read_by(ContentItem.id)
_READ_BRANDS = _read_by(Brand.id)


async def _prefetch(s: AsyncSession, schedule_ids: list[str]) -> None:
    """Lock the group's Schedules (in ID order, so two groups cannot deadlock) and read, one statement per table,
    the rows their steps use: runs, targets, publications, content items, integrations, brands. The steps then
    find them in the session's identity map instead of reading them one by one; what they change is flushed
    together at commit (the unit of work batches the UPDATEs)."""
    if not schedule_ids:
        return
    ids = sorted(set(schedule_ids))

    async def read(query: Any, keys: list[str]) -> list[Any]:
        return list((await s.exec(query, params={"ids": keys})).all())

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
    # The session's identity map holds objects weakly: these references keep them there for the steps.
    s.info[_ROWS] = rows
    s.info[_LOCKED] = {x.id for x in schedules}
    s.info[_RUN_TARGETS] = by_run
    s.info[_NEW_RUNS] = []
    event.listen(s.sync_session, "before_flush", _insert_new_runs)


def _insert_new_runs(session: Session, _context: Any, _instances: Any) -> None:
    """Before any flush of a group's session: the runs its steps made, so their targets can follow."""
    if waiting := session.info.get(_NEW_RUNS):
        session.connection().execute(insert(_RUNS_TABLE), list(waiting))
        waiting.clear()


async def _get(s: AsyncSession, model: type[M], ident: str) -> M | None:
    """`s.get(model, ident)`. A row the session holds (the group's rows, found by `_prefetch`, and those its steps
    made) comes straight from the identity map, as `s.get` would return it, without its trip through the session's
    greenlet (about a dozen such gets per target); any other row goes through `s.get`."""
    found = s.sync_session.identity_map.get((model, (ident,), None))
    if found is not None and isinstance(found, model) and not instance_state(found).expired:
        return found
    return await s.get(model, ident)


async def _locked_schedule(s: AsyncSession, schedule_id: str) -> Schedule | None:
    """The Schedule row locked for this transaction: from the group's read when it locked it, else read now."""
    if schedule_id in s.info.get(_LOCKED, ()):
        return await _get(s, Schedule, schedule_id)  # in the identity map: no statement
    return await s.get(Schedule, schedule_id, with_for_update=True)


async def _run_targets(s: AsyncSession, schedule: Schedule) -> list[PublishTarget]:
    """The targets of the Schedule's latest run, as this transaction sees them (changes included)."""
    assert schedule.latest_execution_id
    known = s.info.get(_RUN_TARGETS, {}).get(schedule.latest_execution_id) \
        if schedule.id in s.info.get(_LOCKED, ()) else None
    if known is not None:
        return sorted(known, key=lambda t: t.id)
    await s.flush()
    return await _targets(s, schedule.latest_execution_id)


async def claim_due(rt: Runtime, owner: str, *, limit: int = BATCH) -> list[str]:
    now = rt.clock.now()
    lock = "" if rt.db.is_sqlite else " FOR UPDATE SKIP LOCKED"
    sql = text(
        "UPDATE schedules SET status = 'publishing', lease_owner = :owner, lease_expires_at = :expires, "
        "updated_at = :now "
        f"WHERE id IN (SELECT id FROM schedules WHERE {_DUE} ORDER BY scheduled_at, id LIMIT :limit{lock}) "
        "RETURNING id"
    ).bindparams(bindparam("now", type_=UTCDateTime()), bindparam("expires", type_=UTCDateTime()))
    async with rt.db.session(write=True) as session:
        connection = await session.connection()
        rows = await connection.execute(sql, {"now": now, "owner": owner, "expires": now + LEASE, "limit": limit})
        return sorted(rows.scalars().all())


class _Pace:
    """How many Schedules of a tick run at once (CONCURRENCY up to FAST_CONCURRENCY, see there)."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(CONCURRENCY)

    def answered(self, seconds: float) -> None:
        tokens = self.limiter.total_tokens
        if seconds > FAST_CALL_SECONDS:
            self.limiter.total_tokens = CONCURRENCY  # those running keep their slot; no new one until below
        elif tokens < FAST_CONCURRENCY:
            self.limiter.total_tokens = int(tokens) + 1

    def claim(self) -> int:
        return BATCH * int(self.limiter.total_tokens) // CONCURRENCY


_PACE: contextvars.ContextVar[_Pace | None] = contextvars.ContextVar("socialpub_publishing_pace", default=None)


async def publish_due(rt: Runtime, worker_id: str) -> int:
    """The worker tick: claim and carry out due Schedules, CONCURRENCY (or more, see there) at once (a slow
    provider call does not hold up the others). Returns how many Schedules it worked on."""
    done = 0
    pace = _Pace()
    limiter = pace.limiter

    started: set[str] = set()

    async def one(schedule_id: str) -> None:
        async with limiter:
            if worker_id in rt.stopping:  # stopping: what has not started was handed back (_hand_back)
                return
            started.add(schedule_id)
            try:
                await run_schedule(rt, worker_id, schedule_id)
            except Exception:
                # The lease stays; once it expires another pass recovers the run (attempts are recorded).
                log.exception("publishing schedule %s failed", schedule_id)

    while done < MAX_SCHEDULES_PER_TICK and worker_id not in rt.stopping:
        claimed = await claim_due(rt, worker_id, limit=min(pace.claim(), MAX_SCHEDULES_PER_TICK - done))
        if not claimed:
            break
        left, batch_done = len(claimed), anyio.Event()

        async def tracked(schedule_id: str, batch_done: anyio.Event = batch_done) -> None:
            nonlocal left
            try:
                await one(schedule_id)
            finally:
                left -= 1
                if not left:
                    batch_done.set()

        token = _GROUPS.set(_groups(rt))  # the batch's runs share commits; the tasks below inherit it
        paced = _PACE.set(pace)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_renew_leases, rt, worker_id, batch_done)
                tg.start_soon(_hand_back, rt, worker_id, claimed, started, batch_done)
                for schedule_id in claimed:
                    tg.start_soon(tracked, schedule_id)
        finally:
            _PACE.reset(paced)
            _GROUPS.reset(token)
        done += len(claimed)
    return done


async def _renew_leases(rt: Runtime, owner: str, batch_done: anyio.Event) -> None:
    """The heartbeat: while a batch runs, push the lease of every Schedule this worker holds forward."""
    while True:
        with anyio.move_on_after(RENEW_SECONDS):
            await batch_done.wait()
            return
        try:
            async with rt.db.session(write=True) as s:
                now = rt.clock.now()
                # Rows locked in ID order, as a group commit locks its Schedules: the two cannot deadlock.
                held = select(Schedule.id).where(Schedule.lease_owner == owner).order_by(Schedule.id)
                await s.exec(update(Schedule).where(Schedule.id.in_(held.with_for_update()))  # type: ignore[call-overload]
                             .values(lease_expires_at=now + LEASE))
        except Exception:
            log.warning("could not renew the leases of worker %s; retrying", owner, exc_info=True)


async def _hand_back(rt: Runtime, owner: str, claimed: list[str], started: set[str],
                     batch_done: anyio.Event) -> None:
    """When the worker is asked to stop mid-batch, release at once the claimed Schedules it has not started
    (they wait for a slot of the batch), so another worker takes them without waiting for the lease."""
    while owner not in rt.stopping:
        with anyio.move_on_after(STOP_POLL_SECONDS):
            await batch_done.wait()
            return
    await release(rt, owner, [schedule_id for schedule_id in claimed if schedule_id not in started])


async def release(rt: Runtime, owner: str, schedule_ids: list[str]) -> None:
    """Give back claimed Schedules not yet started (a stopping worker), in one transaction: due again for any
    worker at once."""
    if not schedule_ids:
        return
    async with rt.db.session(write=True) as s:
        for schedule in (await s.exec(select(Schedule).where(Schedule.id.in_(schedule_ids))
                                      .order_by(Schedule.id).with_for_update())).all():
            if schedule.lease_owner != owner:
                continue
            if schedule.status == "publishing" and not schedule.latest_execution_id:
                schedule.status = "scheduled"  # claimed but never started: as it was
            schedule.lease_owner = schedule.lease_expires_at = None
            schedule.updated_at = rt.clock.now()


# --- one Schedule -----------------------------------------------------------------------------------------

async def run_schedule(rt: Runtime, owner: str, schedule_id: str) -> None:
    async def begin(s: AsyncSession) -> tuple[list[str], _Attempt | bool | None] | None:
        """Start (or resume) the run; the first runnable target's attempt is recorded in the same transaction.
        None: nothing to do for this worker (lease lost, cancelled, or held)."""
        now = rt.clock.now()
        schedule = await _locked_schedule(s, schedule_id)
        if schedule is None or schedule.lease_owner != owner:
            return None
        if schedule.status != "publishing":  # changed under us (cancelled): give the claim back
            schedule.lease_owner = schedule.lease_expires_at = None
            return None
        if schedule.approval_status != "approved" or not schedule.approved_by_key:
            log.warning("schedule %s is approved without a publish:execute approval; held", schedule_id)
            schedule.approval_status, schedule.status = "pending_review", "action_required"
            schedule.blocking_reason = dict(APPROVAL_MISSING)
            schedule.approved_at = None
            schedule.lease_owner = schedule.lease_expires_at = schedule.next_attempt_at = None
            schedule.updated_at = now
            return None
        execution = (await _get(s, PublishExecution, schedule.latest_execution_id)
                     if schedule.latest_execution_id else None)
        if execution is None or execution.status != "processing":
            execution, targets = await _start_execution(s, rt, schedule, now)
        else:
            targets = await _run_targets(s, schedule)
        ready = [t for t in targets if t.state not in TARGET_FINAL_STATES
                 and (t.state != "retry_wait" or t.next_attempt_at is None or t.next_attempt_at <= now)]
        runnable = [t.id for t in ready]
        if not runnable or owner in rt.stopping:
            return runnable, None
        return runnable, await _begin_attempt(s, rt, owner, runnable[0], schedule_id, locked=schedule,
                                              target=ready[0])

    begun = await _step(rt, begin, schedule_id)
    if begun is None:
        return
    runnable, first = begun
    finished = False
    for n, target_id in enumerate(runnable):
        if owner in rt.stopping:  # stopping: the targets left go to another worker via finish_schedule
            break
        finished = await run_target(rt, owner, target_id, begun=first if n == 0 else None, schedule_id=schedule_id)
    if not finished:
        await finish_schedule(rt, owner, schedule_id)


async def _media_rows(s: AsyncSession, brand_id: str, ids: list[str]) -> dict[str, Media]:
    if not ids:
        return {}
    rows = (await s.exec(select(Media).where(Media.brand_id == brand_id, Media.id.in_(ids)))).all()
    return {m.id: m for m in rows}


def _platform_settings(item: ContentItem | None, platform: str) -> dict[str, Any] | None:
    known = BY_KEY.get(platform)
    if item is None or known is None or not known.settings_key:
        return None
    return item.settings.get(known.settings_key)


def _post_type(item: ContentItem | None, platform: str) -> str | None:
    settings = _platform_settings(item, platform) or {}
    known = BY_KEY.get(platform)
    return settings.get("post_type") or (known.default_post_type if known else None)


def _media_type(kinds: list[str | None]) -> str | None:
    if not kinds:
        return None
    if len(kinds) > 1:
        return "carousel"
    return kinds[0] if kinds[0] in ("image", "video") else None


async def _start_execution(s: AsyncSession, rt: Runtime, schedule: Schedule,
                           now: datetime) -> tuple[PublishExecution, list[PublishTarget]]:
    execution = _new_row(PublishExecution, id=new_id("run"), brand_id=schedule.brand_id, schedule_id=schedule.id,
                                status="processing", started_at=now, created_at=now, updated_at=now)
    # The unit of work does not order inserts by foreign key, and the targets reference the run: the run goes
    # in as a Core insert before them, in a group at the start of its next flush (`_insert_new_runs`), so the
    # runs, targets and publications of a whole group are three bulk inserts.
    row = {c.name: getattr(execution, c.name) for c in _RUNS_TABLE.columns}
    if (waiting := s.info.get(_NEW_RUNS)) is not None:
        waiting.append(row)
    else:
        with s.sync_session.no_autoflush:  # a Core statement flushes the session first
            await s.execute(insert(_RUNS_TABLE), [row])
    item = await _get(s, ContentItem, schedule.content_item_id)
    if schedule.id in s.info.get(_LOCKED, ()):  # the group read them: the identity map has them
        found = [await _get(s, Integration, i) for i in sorted(set(schedule.integration_ids))]
        integrations = {i.id: i for i in found if i is not None and i.brand_id == schedule.brand_id}
    else:
        integrations = {i.id: i for i in (await s.exec(select(Integration).where(
            Integration.brand_id == schedule.brand_id, Integration.id.in_(schedule.integration_ids)))).all()}
    wanted: list[str] = []
    for integration in integrations.values():
        wanted.extend((_platform_settings(item, integration.platform) or {}).get("media_ids") or [])
    media = await _media_rows(s, schedule.brand_id, wanted)
    targets: list[PublishTarget] = []
    for integration_id in sorted(set(schedule.integration_ids)):
        integration = integrations.get(integration_id)
        platform = integration.platform if integration else "unknown"
        settings = _platform_settings(item, platform) or {}
        kinds = [media[m].kind if m in media else None for m in settings.get("media_ids") or []]
        target_id, publication_id = new_id("ptg"), new_id("pub")
        target = _new_row(PublishTarget, id=target_id, execution_id=execution.id, schedule_id=schedule.id,
                          brand_id=schedule.brand_id, integration_id=integration_id, platform=platform,
                          idempotency_token=target_token(execution.id, integration_id),
                          created_at=now, updated_at=now, publication_id=publication_id)
        publication = _new_row(
            Publication, id=publication_id, workspace_id=schedule.workspace_id, brand_id=schedule.brand_id,
            schedule_id=schedule.id, execution_id=execution.id, target_id=target_id, platform=platform,
            integration_id=integration_id, post_id=schedule.content_item_id,
            post_name=item.name if item else None, post_type=_post_type(item, platform),
            media_type=_media_type(kinds), status="processing",
            source="queue" if schedule.source == "queue" else "calendar", created_at=now, updated_at=now)
        s.add(target)
        s.add(publication)
        targets.append(target)
    _set(schedule, latest_execution_id=execution.id, failure_reason=None, blocking_reason=None, updated_at=now)
    return execution, sorted(targets, key=lambda t: t.id)


# --- one target -------------------------------------------------------------------------------------------

@dataclass
class _Attempt:
    provider: Any
    account: Account
    post: PostRequest
    recover: bool  # attempted before: ask the provider for the token before publishing again
    since: datetime | None = None  # when the run's target was made: the window an earlier post can be in
    schedule_id: str | None = None


class _Skip(Exception):
    """A target that cannot be attempted: settle it at once with this state and safe reason."""

    def __init__(self, state: str, reason: str) -> None:
        super().__init__(reason)
        self.state, self.reason = state, reason


def _build_post(item: ContentItem, integration: Integration, media: dict[str, Media], rt: Runtime,
                token: str) -> PostRequest:
    platform = integration.platform
    known = BY_KEY.get(platform)
    name = known.display_name if known else platform
    settings: dict[str, Any] = {}
    if known is not None and known.settings_key:
        found = item.settings.get(known.settings_key)
        if found is None:
            raise _Skip("failed", f"The content item has no {known.settings_key}, so {name} was skipped.")
        settings = dict(found)
    copy = ((item.platform_copy or {}).get(platform) if item.copy_mode == "per_platform" else item.single_copy)
    if copy is None:
        raise _Skip("failed", f"The content item has no copy for {name}, so it was skipped.")

    def media_list(ids: list[str]) -> list[dict[str, Any]]:
        out = []
        for media_id in ids:
            m = media.get(media_id)
            if m is None or m.status != READY_MEDIA:
                raise _Skip("failed", f"Media {media_id} of this post is missing or not ready, so {name} was "
                                      f"skipped.")
            out.append({"url": asset_url(rt.settings, m.asset_id), "content_type": m.content_type,
                        "width": m.width, "height": m.height, "duration": m.duration})
        return out

    parts = [{**part, "media": media_list(list(part.get("media_ids") or []))}
             for part in settings.get("thread_parts") or []]
    return PostRequest(
        platform=platform, post_type=settings.get("post_type") or (known.default_post_type if known else None),
        text=compose_text(copy.get("caption"), tuple(copy.get("hashtags") or ())),
        title=settings.get("title") or copy.get("title"), media=media_list(list(settings.get("media_ids") or [])),
        settings=settings, thread_parts=parts, idempotency_token=token)


async def _prepare(s: AsyncSession, rt: Runtime, target: PublishTarget, schedule: Schedule) -> _Attempt:
    integration = await _get(s, Integration, target.integration_id)
    if integration is None or integration.brand_id != target.brand_id:
        raise _Skip("action_required", "The account is no longer connected to this brand; connect it again and "
                                       "schedule the post anew.")
    if integration.status != "connected":
        if integration.status in notify.NEEDS_REFRESH_STATUSES:
            await notify.integration_needs_refresh(s, rt.clock.now(), integration)
        raise _Skip("action_required", "The account needs reconnecting before it can publish; nothing was sent.")
    provider = rt.providers.get(integration.provider)
    if provider is None:
        raise _Skip("failed", "No publishing adapter is available for this account; nothing was sent.")
    item = await _get(s, ContentItem, schedule.content_item_id)
    if item is None:
        raise _Skip("failed", "The content item no longer exists; nothing was sent.")
    settings = _platform_settings(item, integration.platform) or {}
    ids = list(settings.get("media_ids") or [])
    for part in settings.get("thread_parts") or []:
        ids.extend(part.get("media_ids") or [])
    post = _build_post(item, integration, await _media_rows(s, schedule.brand_id, ids), rt,
                       target.idempotency_token)
    try:
        account = account_of(integration, rt.settings)
    except VaultError:
        # This process cannot open the stored credentials (e.g. a replica without the shared
        # SOCIALPUB_SECRET_KEYS): settled once, not retried in a loop, and said plainly to the operator.
        log.error("integration %s: its stored credentials cannot be decrypted with this process's vault keys; "
                  "restore the vault key (SOCIALPUB_SECRET_KEYS or the key file) that encrypted them",
                  integration.id)
        raise _Skip("action_required", VAULT_LOCKED) from None
    return _Attempt(provider, account, post, recover=target.state == "attempting" or target.attempts > 0,
                    since=target.created_at, schedule_id=schedule.id)


async def _locked_target(s: AsyncSession, target_id: str,
                         schedule_id: str | None = None) -> tuple[PublishTarget | None, Schedule | None]:
    """The target and its Schedule, the Schedule row locked (PostgreSQL; SQLite serialises writers anyway), so
    a settlement and another worker's claim or attempt of the same run never interleave. Every transaction of
    a run locks the Schedule first; the target is read again after the lock. `schedule_id`, when the caller
    knows it, saves the first read."""
    if schedule_id is None:
        target = await _get(s, PublishTarget, target_id)
        if target is None:
            return None, None
        schedule_id = target.schedule_id
    schedule = await _locked_schedule(s, schedule_id)
    if schedule_id in s.info.get(_LOCKED, ()):  # read by the group after the lock: current
        target = await _get(s, PublishTarget, target_id)
    else:
        target = await s.get(PublishTarget, target_id, populate_existing=True)
    if target is None or target.schedule_id != schedule_id:
        return None, None
    return target, schedule


async def _begin_attempt(s: AsyncSession, rt: Runtime, owner: str, target_id: str,
                         schedule_id: str | None = None, locked: Schedule | None = None,
                         target: PublishTarget | None = None) -> _Attempt | bool:
    """Record the attempt of one target (the caller commits it before any provider call). A target that cannot
    be attempted is settled at once: then True when that finished the whole run, else False. `locked` and
    `target`: the Schedule locked and the target read (or made, not yet flushed) earlier in this transaction."""
    now = rt.clock.now()
    if isinstance(locked, Schedule):
        schedule = locked
        if target is None:
            target = await _get(s, PublishTarget, target_id)
    else:
        target, schedule = await _locked_target(s, target_id, schedule_id)
    if target is None or schedule is None or schedule.lease_owner != owner or target.state in TARGET_FINAL_STATES:
        return False
    try:
        attempt = await _prepare(s, rt, target, schedule)
    except _Skip as skip:
        await _settle_final(s, now, target, schedule, skip.state, skip.reason, None)
        return await _finish_if_final(s, now, schedule)
    _set(target, state="attempting", attempts=target.attempts + 1, attempted_at=now, next_attempt_at=None,
         updated_at=now)
    _set(schedule, lease_expires_at=now + LEASE)
    return attempt


async def run_target(rt: Runtime, owner: str, target_id: str, *, begun: _Attempt | bool | None = None,
                     schedule_id: str | None = None) -> bool:
    """Attempt one target. True when settling it also finished the whole run (every target final). `begun`: the
    attempt already recorded (and committed) by the caller."""
    # 1. Record the attempt and commit before any provider call.
    if begun is None:
        begun = await _step(rt, lambda s: _begin_attempt(s, rt, owner, target_id, schedule_id), schedule_id)
    if isinstance(begun, bool):
        return begun
    attempt = begun
    # 2. The provider, outside any transaction.
    result: PostResult | None = None
    error: ProviderError | None = None
    started = time.perf_counter()
    try:
        with anyio.fail_after(PROVIDER_TIMEOUT_SECONDS), outbound(rt.settings):
            if attempt.recover:
                result = await _find_earlier(attempt)
            if result is None:
                result = await attempt.provider.publish(attempt.account, attempt.post)
    except ProviderError as exc:
        error = exc
    except TimeoutError:
        error = ProviderError("transient", "provider call timed out")
    except Exception:
        log.exception("provider %s failed on target %s", attempt.account.platform, target_id)
        error = ProviderError("transient", "provider call raised")
    seconds = time.perf_counter() - started
    observe_provider_call(attempt.account.platform, error.kind if error else None, seconds)
    if (pace := _PACE.get()) is not None:
        pace.answered(seconds)
    # 3. Settle, only while this worker still holds the lease.
    async def settle(s: AsyncSession) -> bool:
        now = rt.clock.now()
        if attempt.account.credentials_changed:  # rotated during the call: the old ones may no longer work
            await _store_credentials(s, rt, now, attempt.account)
        target, schedule = await _locked_target(s, target_id, attempt.schedule_id)
        if target is None or schedule is None or schedule.lease_owner != owner or target.state != "attempting":
            log.warning("target %s: lease lost before settling; the new holder recovers it", target_id)
            return False
        if result is not None:
            await _settle_final(s, now, target, schedule, "published", None, result)
        elif error is not None and error.kind == "reauth_required":
            integration = await _get(s, Integration, target.integration_id)
            if integration is not None and integration.status == "connected":
                integration.status, integration.updated_at = "needs_reauth", now
                await notify.integration_status_changed(s, now, integration, "connected")
            await _settle_final(s, now, target, schedule, "action_required", _reason(error, error.kind),
                                None, error_kind=error.kind)
        elif error is not None and error.retryable and target.attempts < MAX_ATTEMPTS:
            _set(target, state="retry_wait", error_kind=error.kind, updated_at=now)
            count_outcome(target.platform, "retry", error.kind)
            _set(target, next_attempt_at=now + backoff(target.attempts, error.retry_after))
        else:
            kind = error.kind if error is not None else "transient"
            await _settle_final(s, now, target, schedule, "failed", _reason(error, kind), None, error_kind=kind)
        # The run's last settlement finishes it in the same transaction (one commit fewer per Schedule).
        return await _finish_if_final(s, now, schedule)

    return await _step(rt, settle, attempt.schedule_id)


async def _find_earlier(attempt: _Attempt) -> PostResult | None:
    """The post an earlier attempt made: by token, or (networks without idempotency keys, providers/base.py
    `find_post_matching`) by an exact match of the post among the account's posts since the run began."""
    found = await attempt.provider.find_post(attempt.account, attempt.post.idempotency_token)
    matching = getattr(attempt.provider, "find_post_matching", None)
    if found is None and matching is not None and attempt.since is not None:
        found = await matching(attempt.account, attempt.post, attempt.since)
    return found


def _reason(error: ProviderError | None, kind: str) -> str:
    """The adapter's own safe sentence when it wrote one, else the fixed text of the kind."""
    if error is not None and error.safe_reason:
        return (ADAPTER_MARK + error.safe_reason)[:FAILURE_MAX]
    return FAILURE_TEXT.get(kind, GENERIC_FAILURE)


async def _store_credentials(s: AsyncSession, rt: Runtime, now: datetime, account: Account) -> None:
    integration = await _get(s, Integration, account.integration_id)
    if integration is not None and isinstance(account.credentials, dict) and account.credentials:
        integration.credentials = vault.seal(rt.settings, account.credentials)
        integration.updated_at = now


async def _settle_final(s: AsyncSession, now: datetime, target: PublishTarget, schedule: Schedule, state: str,
                        reason: str | None, result: PostResult | None, *, error_kind: str | None = None) -> None:
    _set(target, state=state, settled_at=now, updated_at=now)
    count_outcome(target.platform, state, error_kind)
    _set(target, next_attempt_at=None, failure_reason=reason, error_kind=error_kind)
    if result is not None:
        _set(target, publish_id=result.publish_id, permalink_url=result.permalink_url)
    publication = await _get(s, Publication, target.publication_id) if target.publication_id else None
    if publication is not None:
        _set(publication, updated_at=now)
        if state == "published":
            _set(publication, status="published", published_at=now,
                 publish_id=result.publish_id if result else None,
                 permalink_url=result.permalink_url if result else None, failure_reason=None)
        else:
            _set(publication, status="failed", failure_reason=reason)
    await _notify_outcome(s, now, target, schedule, state, reason, publication)


async def _notify_outcome(s: AsyncSession, now: datetime, target: PublishTarget, schedule: Schedule, state: str,
                          reason: str | None, publication: Publication | None) -> None:
    brand = await _get(s, Brand, schedule.brand_id)
    if brand is None:
        return
    known = BY_KEY.get(target.platform)
    platform = known.display_name if known else target.platform
    integration = await _get(s, Integration, target.integration_id)
    account = (integration.display_name or integration.username) if integration else None
    where = f"{platform} ({account})" if account else platform
    name = (publication.post_name if publication else None) or "A post"
    if state == "published":
        await notify.notify(s, now, brand, "post_published", "post_published", f"Published on {platform}",
                            f"“{name}” was published to {where}.")
    else:
        await notify.notify(s, now, brand, "post_failed", "post_failed", f"Post failed on {platform}",
                            f"“{name}” could not be published to {where}. {adapter_reason(reason) or reason or ''}")


# --- the end of a pass ------------------------------------------------------------------------------------

async def _targets(s: AsyncSession, execution_id: str) -> list[PublishTarget]:
    return list((await s.exec(select(PublishTarget).where(PublishTarget.execution_id == execution_id))).all())


async def _finish_if_final(s: AsyncSession, now: datetime, schedule: Schedule,
                           targets: list[PublishTarget] | None = None) -> bool:
    """When every target of the run is final: the run and the Schedule take the outcome, the lease is cleared."""
    if not schedule.latest_execution_id:
        return False
    targets = targets if targets is not None else await _run_targets(s, schedule)
    if not all(t.state in TARGET_FINAL_STATES for t in targets):
        return False
    published = sum(t.state == "published" for t in targets)
    status = ("failed" if published == 0 else
              "published" if published == len(targets) else "partially_published")
    _set(schedule, status=status, next_attempt_at=None, lease_owner=None, lease_expires_at=None, updated_at=now,
         failure_reason=(None if status == "published" else
                         f"{len(targets) - published} of {len(targets)} targets did not publish."))
    execution = await _get(s, PublishExecution, schedule.latest_execution_id)
    if execution is not None:
        _set(execution, status=status, finished_at=now, updated_at=now)
    return True


async def finish_schedule(rt: Runtime, owner: str, schedule_id: str) -> None:
    await _step(rt, lambda s: _finish_schedule(s, rt, owner, schedule_id), schedule_id)


async def _finish_schedule(s: AsyncSession, rt: Runtime, owner: str, schedule_id: str) -> None:
    now = rt.clock.now()
    schedule = await _locked_schedule(s, schedule_id)
    if schedule is None or schedule.lease_owner != owner or not schedule.latest_execution_id:
        return
    targets = await _run_targets(s, schedule)
    if await _finish_if_final(s, now, schedule, targets):
        return
    schedule.lease_owner = schedule.lease_expires_at = None
    schedule.updated_at = now
    # Targets still to go: wait for the earliest retry. An attempt left unsettled (its settlement failed)
    # is recovered after the base backoff, not at once, so a persistent fault cannot make workers spin.
    if owner in rt.stopping and any(t.state == "pending" for t in targets):
        schedule.next_attempt_at = now  # handed back by a stopping worker: due again for another at once
        return
    waits = [t.next_attempt_at for t in targets if t.state == "retry_wait" and t.next_attempt_at]
    if any(t.state in ("pending", "attempting") for t in targets) or not waits:
        waits.append(now + BACKOFF_BASE)
    schedule.next_attempt_at = min(waits)


TICKS = [publish_due]
