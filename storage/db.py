"""The async engine and transactions.

SQLite (the embedded default) runs in WAL mode with foreign keys on. Write transactions start with
`BEGIN IMMEDIATE` so two writers never fail mid-transaction when one upgrades a read lock; reads use a plain
deferred `BEGIN` and never block each other or a writer.

Within one process, SQLite writers take turns on an in-process lock (FIFO) before they open their transaction:
SQLite's own busy handler makes a blocked writer sleep and retry with back-offs growing to 100 ms, so under
concurrency a writer that arrives late can win while one that has waited long sleeps, and draft creation at
16 connections had a p99 of seconds (docs/operations.md, "Write latency"). Between processes (`serve` beside a
separate `socialpub worker`) the busy timeout still arbitrates. PostgreSQL needs and gets neither.

SQLite statements, reads and writes, run on the event loop's thread (storage/sqlite_inline.py); a writer that
meets another process's write lock waits for it on a worker thread, and a write transaction commits (writes to
disk) there, so the loop never waits for a lock or the disk.
"""

from __future__ import annotations

import json
import sqlite3
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.lowlevel
import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.util import await_only, greenlet_spawn
from sqlmodel.ext.asyncio.session import AsyncSession

from storage import sqlite_inline

SQLITE_BUSY_TIMEOUT_MS = 15_000
# How long a SQLite writer waits for its turn in this process before giving up like a busy timeout would.
WRITER_TURN_TIMEOUT_S = SQLITE_BUSY_TIMEOUT_MS / 1000
SQLITE_READ_POOL = 64


def json_loads(text: str | bytes) -> object:
    """JSON columns decoded by orjson (several times faster on the hot reads); what orjson refuses and Python's
    json accepts (integers beyond 64 bits, NaN) still decodes, as before."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _sqlite_engine(url: str, *, immediate: bool) -> AsyncEngine:
    # A pool as large as the requests a process serves at once: connections past pool_size are closed when
    # returned, so a smaller pool reopens a connection (the file, four PRAGMAs) for most requests under
    # concurrency. The write engine needs few: its transactions take turns.
    # (An in-memory database has one static connection and no pool to size.)
    database = make_url(url).database
    options: dict = {} if not database or database == ":memory:" else {
        "pool_size": 4 if immediate else SQLITE_READ_POOL, "max_overflow": SQLITE_READ_POOL}
    connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    # Both engines run on the loop's thread (storage/sqlite_inline.py); a write connection has no busy timeout
    # there and waits for another process's writer on a worker thread instead.
    dialect = create_async_engine(url).dialect
    args, kwargs = dialect.create_connect_args(make_url(url))
    options["async_creator"] = sqlite_inline.connector(tuple(args), {**kwargs, **connect_args},
                                                       busy_timeout_ms=SQLITE_BUSY_TIMEOUT_MS if immediate else None)
    engine = create_async_engine(url, connect_args=connect_args, json_deserializer=json_loads, **options)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (pysqlite's own handling is wrong)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={0 if immediate else SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn) -> None:
        if immediate:
            _begin_immediate(conn)
        else:  # straight to the loop-thread connection: a statement through SQLAlchemy costs more than the BEGIN
            conn.connection.driver_connection.begin()

    return engine


def _begin_immediate(conn) -> None:
    """BEGIN IMMEDIATE straight on the loop-thread connection (a statement through SQLAlchemy's execution machinery
    costs a tenth of a small write transaction); waiting for another process's writer happens off the loop."""
    try:
        await_only(conn.connection.driver_connection.begin_immediate())
    except sqlite3.Error as exc:  # as SQLAlchemy would have raised it (OperationalError: "database is locked")
        raise DBAPIError.instance("BEGIN IMMEDIATE", None, exc, sqlite3.Error) from exc


class DatabaseUnusable(RuntimeError):
    """The database URL cannot be used at all: unparsable, a driver that is not installed, or a SQLite file
    whose directory cannot be created. The message names the URL without its password."""


def display_url(url: str) -> str:
    """The URL as operators may see it in messages and logs: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # unparsable: still worth naming, minus anything up to '@' (credentials)
        return url.rsplit("@", 1)[-1]


class Database:
    def __init__(self, url: str) -> None:
        try:
            self._open(url)
        except (ArgumentError, NoSuchModuleError, ImportError, OSError) as exc:
            raise DatabaseUnusable(f"cannot use the database at {display_url(url)}: {exc}") from exc

    def _open(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self.read_engine = _sqlite_engine(url, immediate=False)
            self.write_engine = _sqlite_engine(url, immediate=True)
        else:
            self.read_engine = self.write_engine = create_async_engine(url, pool_pre_ping=True,
                                                                       json_deserializer=json_loads)
        # One writer lock per event loop (a lock cannot move between loops; tests run several).
        self._writer_locks: weakref.WeakKeyDictionary[object, anyio.Lock] = weakref.WeakKeyDictionary()
        self._plain_idle: list = []  # SQLite write connections checked out for `plain_write`, idle
        self._read_idle: list = []  # SQLite read connections checked out for `plain_read`, idle, in no transaction

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    def _writer_lock(self) -> anyio.Lock:
        loop = anyio.lowlevel.current_token().native_token
        lock = self._writer_locks.get(loop)
        if lock is None:
            lock = self._writer_locks[loop] = anyio.Lock()
        return lock

    @asynccontextmanager
    async def session(self, *, write: bool) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block ends normally, rolled back when it raises. A SQLite write
        transaction first waits for this process's writer turn and holds it until the connection is back in
        the pool, so keep write blocks short: a network call goes inside `outside_transaction`."""
        engine = self.write_engine if write else self.read_engine
        turn = _WriterTurn(self._writer_lock()) if write and self.is_sqlite else None
        if turn is not None:
            await turn.take()
        try:
            session = AsyncSession(engine, expire_on_commit=False)
            session.info["writer_turn"] = turn
            try:
                yield session
                if write:
                    await session.commit()
                # A read session just closes: its objects stay readable after the block (a rollback would
                # expire them).
            except BaseException:
                await session.rollback()
                raise
            finally:
                if self.is_sqlite:
                    # Nothing in a SQLite close waits (storage/sqlite_inline.py), so a cancellation cannot cut it
                    # short: no task of its own, which AsyncSession's __aexit__ makes for every session.
                    await session.close()
                else:
                    await session.__aexit__(None, None, None)
        finally:
            if turn is not None:
                await turn.give_up()

    @asynccontextmanager
    async def plain_write(self) -> AsyncIterator[PlainWrite]:
        """A SQLite write transaction without the ORM session, for endpoints declared `session_free` (the create):
        the same writer turn, a write connection of the pool (kept for the next plain write), `BEGIN IMMEDIATE` (a
        locked database waited for on a worker thread), commit on a commit thread and rollback on any exception or
        cancellation as `session(write=True)`, minus AsyncSession's own work (~0.16 ms of CPU per transaction). What runs in it goes straight to the
        driver connection: prepared reads and writes (storage/prepared.py, storage/prepared_write.py). Anything
        else the block asks of its `PlainWrite` raises `SessionNeeded`, the transaction rolls back, and the
        caller runs the request again in a session (server/dispatch.py). SQLite only."""
        turn = _WriterTurn(self._writer_lock())
        await turn.take()
        try:
            engine = self.write_engine
            # The connection the last plain write left (writers take turns, so one is nearly always enough): a pool
            # checkout and check-in each go through a greenlet and the pool's events (~20 % of this transaction).
            raw = self._plain_idle.pop() if self._plain_idle else \
                await greenlet_spawn(engine.sync_engine.raw_connection)
            keep = False
            try:
                driver = raw.driver_connection
                if not isinstance(driver, sqlite_inline.InlineConnection) or driver.busy_timeout_ms is None:
                    raise SessionNeeded("not SQLite's loop-thread write connection")
                try:
                    await driver.begin_immediate()
                except sqlite3.Error as exc:  # as `_begin_immediate` raises it: 503 on a locked database
                    raise DBAPIError.instance("BEGIN IMMEDIATE", None, exc, sqlite3.Error) from exc
                info: dict = {"writer_turn": turn}
                try:
                    yield PlainWrite(engine, info, (driver, engine.sync_engine.dialect))
                    if info.get(_SESSION_NEEDED):  # asked for and the SessionNeeded swallowed: never commit that
                        raise SessionNeeded(info[_SESSION_NEEDED])
                    try:
                        await driver.commit()
                    except sqlite3.Error as exc:
                        raise DBAPIError.instance("COMMIT", None, exc, sqlite3.Error) from exc
                except BaseException as exc:
                    # Nothing in a SQLite rollback waits, so a cancellation cannot cut it short.
                    await driver.rollback()
                    keep = not driver._conn.in_transaction
                    if info.get(_SESSION_NEEDED) and isinstance(exc, Exception) and not isinstance(exc, SessionNeeded):
                        raise SessionNeeded(info[_SESSION_NEEDED]) from exc  # an error that followed the refusal
                    raise
                keep = not driver._conn.in_transaction
            finally:
                if keep:  # ended cleanly, no transaction open: the next plain write takes it
                    self._plain_idle.append(raw)
                else:  # back to the pool (its reset rolls back whatever is left)
                    await greenlet_spawn(raw.close)
        finally:
            await turn.give_up()

    @staticmethod
    @asynccontextmanager
    async def outside_transaction(session: AsyncSession) -> AsyncIterator[None]:
        """Commit the session's transaction and, for the block (a network call), hold neither a transaction
        nor this process's SQLite writer turn; the turn is taken again (in arrival order) after it. The
        session stays usable: its next statement opens a new transaction."""
        await session.commit()
        turn: _WriterTurn | None = session.info.get("writer_turn")
        if turn is None:
            yield
            return
        await turn.give_up()
        try:
            yield
        finally:
            await turn.take()

    def plain_read(self) -> PlainRead:
        """A SQLite read transaction without the ORM session, for read endpoints declared `session_free` (the content
        list): their prepared reads (storage/prepared.py) run in one snapshot on one read connection, begun at the
        first read and rolled back at the end of the block, as `session(write=False)` reads, minus AsyncSession's
        own work (~45 µs of a list page: the session, a greenlet round trip for its connection, the pool's checkout
        and check-in). The connection is kept for the next plain read. Anything else asked of the `PlainRead`
        raises `SessionNeeded`, and the caller runs the request again in `session(write=False)`
        (server/dispatch.py). SQLite only."""
        return PlainRead(self.read_engine, self._read_idle)

    async def dispose(self) -> None:
        while self._plain_idle:
            await greenlet_spawn(self._plain_idle.pop().close)
        while self._read_idle:
            await greenlet_spawn(self._read_idle.pop().close)
        await self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            await self.read_engine.dispose()


class SessionNeeded(Exception):
    """Something in a `plain_write` transaction needs the ORM session: the transaction is rolled back and the
    request runs again in `session(write=True)`."""


class PlainWrite:
    """What a `plain_write` block gets instead of an AsyncSession: the engine (`bind`, for its dialect), `info`
    (the writer turn, as a session's) and `driver` (the driver connection and dialect the prepared statements use).
    Every other attribute raises `SessionNeeded`, so ORM work (`exec`, `add`, `commit`, `outside_transaction`, an
    uncached authentication) sends the request to the session path instead of half-running here."""

    __slots__ = ("bind", "driver", "info")

    def __init__(self, bind: AsyncEngine, info: dict, driver: tuple) -> None:
        self.bind = bind
        self.info = info
        self.driver = driver

    def __getattr__(self, name: str):
        self.info.setdefault(_SESSION_NEEDED, name)
        raise SessionNeeded(name)


_SESSION_NEEDED = "session_needed"  # PlainWrite.info: what was asked of it (the first name)
# Idle read connections kept out of the pool for plain reads: a plain read holds its connection only across awaits
# that rarely wait, so a few serve a process's concurrent requests; more go back to the pool.
_READ_IDLE_MAX = 8


class PlainRead:
    """What a `plain_read` block gets instead of an AsyncSession: the read engine (`bind`, for its dialect), `info`,
    `idle` (the read connections kept between plain reads, never in a transaction) and `driver()`, the driver
    connection and dialect of this block's read transaction (storage/prepared.py `_driver_of`), begun on first use.
    Every other attribute raises `SessionNeeded`, as `PlainWrite`'s. Ending the block rolls the transaction back
    (a read has nothing to commit) and keeps the connection for the next plain read."""

    __slots__ = ("_begun", "bind", "idle", "info")

    def __init__(self, bind: AsyncEngine, idle: list) -> None:
        self.bind = bind
        self.idle = idle
        self.info: dict = {}
        self._begun: tuple | None = None  # (pooled connection, (driver connection, dialect)) once begun

    def __getattr__(self, name: str):
        self.info.setdefault(_SESSION_NEEDED, name)
        raise SessionNeeded(name)

    async def driver(self) -> tuple:
        if self._begun is not None:
            return self._begun[1]
        engine = self.bind.sync_engine
        raw = self.idle.pop() if self.idle else await greenlet_spawn(engine.raw_connection)
        driver = raw.driver_connection
        if not isinstance(driver, sqlite_inline.InlineConnection) or driver.busy_timeout_ms is not None:
            await greenlet_spawn(raw.close)
            self.info.setdefault(_SESSION_NEEDED, "driver")
            raise SessionNeeded("not SQLite's loop-thread read connection")
        try:
            driver.begin()
        except BaseException:
            await greenlet_spawn(raw.close)  # back to the pool, which resets it
            raise
        self._begun = (raw, (driver, engine.dialect))
        return self._begun[1]

    async def __aenter__(self) -> PlainRead:
        return self

    async def __aexit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        begun, self._begun = self._begun, None
        if begun is not None:
            raw, (driver, _dialect) = begun
            # Nothing in a SQLite rollback waits, so a cancellation cannot cut it short.
            try:
                driver._conn.rollback()
            finally:
                if driver._conn.in_transaction or len(self.idle) >= _READ_IDLE_MAX:
                    await greenlet_spawn(raw.close)  # back to the pool (its reset rolls back whatever is left)
                else:
                    self.idle.append(raw)
        needed = self.info.get(_SESSION_NEEDED)
        if needed and (exc is None or (isinstance(exc, Exception) and not isinstance(exc, SessionNeeded))):
            raise SessionNeeded(needed) from exc  # asked for and swallowed, or an error that followed the refusal


class _WriterTurn:
    """This process's turn to write on SQLite (first come, first served). The wait is bounded like SQLite's busy
    timeout and ends the same way: OperationalError, which the dispatcher answers with 503 DEPENDENCY_UNAVAILABLE
    and Retry-After. A task that opens a write session inside its own gets RuntimeError at once (anyio's lock
    refuses its holder; on SQLite it would have waited out the busy timeout)."""

    def __init__(self, lock: anyio.Lock) -> None:
        self.lock = lock
        self.held = False

    async def take(self) -> None:
        try:
            self.lock.acquire_nowait()  # free and nobody waiting: no timeout scope, no trip through the loop
        except anyio.WouldBlock:
            with anyio.move_on_after(WRITER_TURN_TIMEOUT_S) as waited:
                await self.lock.acquire()
            if waited.cancelled_caught:
                raise OperationalError("BEGIN IMMEDIATE", None, sqlite3.OperationalError("database is locked")) from None
        self.held = True

    async def give_up(self) -> None:
        if self.held:
            self.held = False
            self.lock.release()
