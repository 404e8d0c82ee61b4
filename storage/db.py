"""The async engine and transactions.

SQLite (the embedded default) runs in WAL mode with foreign keys on. Write transactions start with
`BEGIN IMMEDIATE` so two writers never fail mid-transaction when one upgrades a read lock; reads use a plain
deferred `BEGIN` and never block each other or a writer.

Within one process, SQLite writers take turns on an in-process lock (FIFO) before they open their transaction:
SQLite's own busy handler makes a blocked writer sleep and retry with back-offs growing to 100 ms, so under
concurrency a writer that arrives late can win while one that has waited long sleeps, and draft creation at
16 connections had a p99 of seconds (bench/HISTORY.md, "Write latency"). Between processes (`serve` beside a
separate `socialpub worker`) the busy timeout still arbitrates. PostgreSQL needs and gets neither.
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
from sqlmodel.ext.asyncio.session import AsyncSession

SQLITE_BUSY_TIMEOUT_MS = 15_000
# How long a SQLite writer waits for its turn in this process before giving up like a busy timeout would.
WRITER_TURN_TIMEOUT_S = SQLITE_BUSY_TIMEOUT_MS / 1000
SQLITE_READ_POOL = 64
# SQLite: a third engine whose connections run each statement on its own (SQLite's autocommit: no BEGIN, and
# SQLAlchemy's documented `skip_autocommit_rollback`, so no ROLLBACK either) for a read that is one statement
# (storage/statements.py `rows_alone`): one statement reads one snapshot by itself, and aiosqlite runs each
# driver call on its thread, so the BEGIN and the ROLLBACK around it cost two more thread hand-offs.


def json_loads(text: str | bytes) -> object:
    """JSON columns decoded by orjson (several times faster on the hot reads); what orjson refuses and Python's
    json accepts (integers beyond 64 bits, NaN) still decodes, as before."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _sqlite_engine(url: str, *, immediate: bool, autocommit: bool = False) -> AsyncEngine:
    # A pool as large as the requests a process serves at once: connections past pool_size are closed when
    # returned, so a smaller pool reopens a connection (the file, four PRAGMAs) for most requests under
    # concurrency. The write engine needs few: its transactions take turns.
    # (An in-memory database has one static connection and no pool to size.)
    database = make_url(url).database
    options: dict = {} if not database or database == ":memory:" else {
        "pool_size": 4 if immediate else SQLITE_READ_POOL, "max_overflow": SQLITE_READ_POOL}
    # No pool reset on return: SQLAlchemy's connection already rolls back a transaction it leaves open, so the
    # pool's own rollback would only repeat it after every commit (one more trip to aiosqlite's thread).
    # `skip_autocommit_rollback` skips the driver's rollback whenever the connection is in autocommit mode, which
    # ours always are (isolation_level None, below); only the autocommit engine, which never sends BEGIN, may.
    engine = create_async_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
                                 json_deserializer=json_loads, pool_reset_on_return=None,
                                 skip_autocommit_rollback=autocommit, **options)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (pysqlite's own handling is wrong)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    if autocommit:
        return engine

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn) -> None:
        # SQLAlchemy's documented recipe for SQLite transactions (aiosqlite runs each statement on its own thread,
        # so a writer waiting on another process's lock waits there, never on the event loop).
        # One call of aiosqlite's own `execute` (SQLAlchemy's documented `AdaptedConnection.run_async`): through
        # the DB-API adapter a BEGIN is three trips to aiosqlite's thread (cursor, execute, close).
        sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"
        try:
            conn.connection.dbapi_connection.run_async(lambda driver: driver.execute(sql))
        except sqlite3.Error as exc:  # as exec_driver_sql raises it (a busy timeout -> OperationalError -> 503)
            raise DBAPIError.instance(sql, (), exc, sqlite3.Error) from exc

    return engine


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
        # A SQLite file is created only by `socialpub init` (storage/migrate.upgrade): every other command refuses
        # a missing file instead of leaving an empty database where the operator's is not (issue 33).
        self.sqlite_file = (Path(parsed.database).expanduser()
                            if self.dialect == "sqlite" and parsed.database and parsed.database != ":memory:"
                            and not parsed.database.startswith("file:") else None)
        if self.dialect == "sqlite":
            self.read_engine = _sqlite_engine(url, immediate=False)
            self.write_engine = _sqlite_engine(url, immediate=True)
            # An in-memory database is one connection: a one-statement read runs in the session there.
            self.statement_engine: AsyncEngine | None = (
                _sqlite_engine(url, immediate=False, autocommit=True) if self.sqlite_file is not None else None)
        else:
            self.read_engine = self.write_engine = create_async_engine(url, pool_pre_ping=True,
                                                                       json_deserializer=json_loads)
            # PostgreSQL: a one-statement read runs in the session's transaction (a connection of its own would
            # be one more BEGIN and ROLLBACK on the wire, not fewer).
            self.statement_engine = None
        # One writer lock per event loop (a lock cannot move between loops; tests run several).
        self._writer_locks: weakref.WeakKeyDictionary[object, anyio.Lock] = weakref.WeakKeyDictionary()

    def prepare_file(self) -> None:
        """Make the directory of a SQLite file (before `init` creates the file)."""
        if self.sqlite_file is not None:
            try:
                self.sqlite_file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseUnusable(f"cannot use the database at {display_url(self.url)}: {exc}") from exc

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
            session.info["statement_engine"] = self.statement_engine
            try:
                yield session
                if write:
                    await session.commit()
                # A read session just closes: its objects stay readable after the block (a rollback would
                # expire them).
            except BaseException:
                if session.in_transaction():  # (without one, rollback does nothing)
                    await session.rollback()
                raise
            finally:
                if session.in_transaction() or session.identity_map or session.new:
                    async with session:  # SQLAlchemy's close, run to completion even if this task is cancelled
                        pass
                # Otherwise close has nothing to release or expunge: no transaction (none begun: a content list
                # page reads alone, storage/statements.py; or committed, which released its connection) and no
                # objects. Skipped, it spares its task and its greenlet (~50 µs of CPU per request).
        finally:
            if turn is not None:
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

    async def dispose(self) -> None:
        await self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            await self.read_engine.dispose()
        if self.statement_engine is not None:
            await self.statement_engine.dispose()


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
