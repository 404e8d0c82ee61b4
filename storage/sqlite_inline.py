"""SQLite connections that run on the event loop's own thread.

aiosqlite runs every call (cursor, execute, fetch, close, BEGIN, rollback) on a thread of its own and wakes the
event loop for each result: about a dozen thread handoffs per read transaction, which cost more CPU than the
queries (docs/operations.md, "Request path profile"). A statement on a local SQLite file in WAL mode takes
microseconds, so both engines call sqlite3 directly instead, behind the small part of aiosqlite's interface
that SQLAlchemy's aiosqlite dialect uses.

Reads never wait in WAL mode. A writer can: another process (a separate worker, the CLI) may hold SQLite's
write lock, and waiting for it on the loop's thread would stop every request of this process. So a write
connection runs with no busy timeout, and a statement SQLite refuses with SQLITE_BUSY (in practice only
`BEGIN IMMEDIATE`, the one statement that takes the write lock) is run again on a worker thread with the full
busy timeout, as aiosqlite would have run it. A statement that fails with SQLITE_BUSY has changed nothing, so
running it again is what SQLite's own busy handler does. Writers of this process never meet here: they take
turns before they begin (storage/db.py). A write transaction's commit, where SQLite writes to disk, runs on a
worker thread too: one handoff per write transaction.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import anyio.to_thread

# Open connections, closed before the interpreter finalizes: a process that exits without disposing its engine
# (a command refused before it started) otherwise spins in the garbage collector's shutdown pass.
_OPEN: weakref.WeakSet[InlineConnection] = weakref.WeakSet()


class _InlineQueue:
    """Stands in for aiosqlite's work queue (the dialect's isolation-level setter puts work on it)."""

    @staticmethod
    def put_nowait(item: tuple[Any, Callable[[], Any]]) -> None:
        future, function = item
        try:
            future.set_result(function())
        except Exception as exc:
            future.set_exception(exc)


class _Committers:
    """Threads that run write transactions' commits: one handoff per commit, at about half the CPU of
    `anyio.to_thread.run_sync` (its capacity limiter, cancel scope and context copy cost more than the queue and
    the wake-up themselves; docs/operations.md, "The write path: the create, third pass"). An idle thread takes
    the next commit; when none is idle (commits of several databases at once) another one starts, so a commit
    never waits behind another database's."""

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[Any]] = []

    async def run(self, function: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        try:
            work = self._idle.pop()
        except IndexError:
            work = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(work,), name="socialpub-sqlite-commit", daemon=True).start()
        work.put((function, loop, done))
        try:
            await asyncio.shield(done)
        except asyncio.CancelledError:
            # Not abandoned on cancellation (as anyio's run_sync): the connection is in use until SQLite answers.
            while not done.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.shield(done)
            raise

    def _serve(self, work: queue.SimpleQueue[Any]) -> None:
        while True:
            function, loop, done = work.get()
            try:
                function()
            except BaseException as exc:  # delivered to the waiting task, as anyio's worker threads do
                outcome: tuple[Any, ...] = (_settle_error, done, exc)
            else:
                outcome = (_settle, done)
            self._idle.append(work)
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits for this commit any more
                loop.call_soon_threadsafe(*outcome)


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


def _settle_error(done: asyncio.Future[None], exc: BaseException) -> None:
    if not done.done():
        done.set_exception(exc)


_COMMITTERS = _Committers()


def _busy(exc: sqlite3.OperationalError) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY


class InlineCursor:
    def __init__(self, cursor: sqlite3.Cursor, owner: InlineConnection) -> None:
        self._cursor = cursor
        self._owner = owner

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Any = None) -> InlineCursor:
        run = self._cursor.execute
        args = (sql,) if parameters is None else (sql, parameters)
        try:
            run(*args)
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or self._owner.busy_timeout_ms is None:
                raise
            await self._owner.wait_busy(run, *args)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> InlineCursor:
        parameters = list(parameters)  # a generator cannot be run twice
        try:
            self._cursor.executemany(sql, parameters)
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or self._owner.busy_timeout_ms is None:
                raise
            await self._owner.wait_busy(self._cursor.executemany, sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(size if size is not None else self._cursor.arraysize)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()


class InlineConnection:
    """The part of `aiosqlite.Connection` that sqlalchemy.dialects.sqlite.aiosqlite calls. `busy_timeout_ms`: for a
    write connection (opened with busy_timeout 0), how long a statement refused with SQLITE_BUSY may then wait
    for the lock on a worker thread; None for a read connection (its errors are raised as they come)."""

    def __init__(self, conn: sqlite3.Connection, busy_timeout_ms: int | None = None) -> None:
        self._conn = conn
        self._connection: sqlite3.Connection | None = conn  # the dialect checks it before commit and rollback
        self._tx = _InlineQueue()
        self.busy_timeout_ms = busy_timeout_ms
        _OPEN.add(self)

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> InlineCursor:
        return InlineCursor(self._conn.cursor(), self)

    async def execute(self, sql: str, parameters: Any = None) -> InlineCursor:
        return await self.cursor().execute(sql, parameters)

    def fetchall(self, sql: str, parameters: tuple[Any, ...]) -> list[Any]:
        """Rows of a read, straight from sqlite3 (storage/prepared.py)."""
        return self._conn.execute(sql, parameters).fetchall()

    async def write(self, sql: str, rows: list[tuple[Any, ...]]) -> int:
        """A write statement with each row of parameters, straight on sqlite3 (storage/prepared_write.py); the
        number of rows written. SQLITE_BUSY is handled as for any statement of this connection."""
        cursor = InlineCursor(self._conn.cursor(), self)
        try:
            if len(rows) == 1:
                await cursor.execute(sql, rows[0])
            else:
                await cursor.executemany(sql, rows)
            return cursor.rowcount
        finally:
            cursor._cursor.close()

    def begin(self) -> None:
        """A deferred read transaction (storage/db.py issues it from SQLAlchemy's `begin` event)."""
        self._conn.execute("BEGIN")

    async def wait_busy(self, run: Callable[..., Any], *args: Any) -> None:
        """Run a statement SQLite refused with SQLITE_BUSY again on a worker thread, waiting up to the busy timeout
        for the lock (another process's writer) while the event loop serves everything else. Not abandoned on
        cancellation: the connection is in use until SQLite answers."""

        def waiting() -> None:
            self._conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms or 0)}")
            try:
                run(*args)
            finally:
                self._conn.execute("PRAGMA busy_timeout=0")

        await anyio.to_thread.run_sync(waiting)

    async def begin_immediate(self) -> None:
        """A write transaction, straight on the connection (storage/db.py issues it from SQLAlchemy's `begin`
        event); the one statement that waits for another process's writer."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or self.busy_timeout_ms is None:
                raise
            await self.wait_busy(self._conn.execute, "BEGIN IMMEDIATE")

    async def commit(self) -> None:
        if self.busy_timeout_ms is None:  # a read transaction has nothing to write
            self._conn.commit()
            return
        # A write transaction's commit is where SQLite writes: the WAL frames and, every ~1000 pages, a checkpoint
        # into the database file with fsyncs. On a busy disk that took up to ~100 ms (p99 44 ms on the shared test
        # machine), which must not stop the loop: one thread handoff per write transaction.
        await _COMMITTERS.run(self._commit_waiting)

    def _commit_waiting(self) -> None:
        try:
            self._conn.commit()
        except sqlite3.OperationalError as exc:  # only outside WAL mode, where a commit waits for readers
            if not _busy(exc):
                raise
            self._conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms or 0)}")
            try:
                self._conn.commit()
            finally:
                self._conn.execute("PRAGMA busy_timeout=0")

    async def rollback(self) -> None:
        self._conn.rollback()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    async def close(self) -> None:
        if self._connection is not None:
            self._connection = None
            self._conn.close()

    def stop(self) -> None:
        if self._connection is not None:
            self._connection = None
            self._conn.close()


@atexit.register
def _close_all() -> None:
    for conn in list(_OPEN):
        conn.stop()


def connector(args: tuple[Any, ...], kwargs: dict[str, Any], *, busy_timeout_ms: int | None = None
              ) -> Callable[[], Any]:
    """An `async_creator` for create_async_engine: sqlite3.connect with the dialect's own arguments. With
    `busy_timeout_ms` a write connection: no busy wait on the loop's thread, the wait on a worker thread instead."""

    async def connect() -> InlineConnection:
        if busy_timeout_ms is None:
            return InlineConnection(sqlite3.connect(*args, **{**kwargs, "check_same_thread": False}))
        conn = sqlite3.connect(*args, **{**kwargs, "timeout": 0, "check_same_thread": False})
        return InlineConnection(conn, busy_timeout_ms)

    return connect
