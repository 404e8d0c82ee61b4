"""SQLite read connections that run on the event loop's own thread.

aiosqlite runs every call (cursor, execute, fetch, close, BEGIN, rollback) on a thread of its own and wakes the
event loop for each result: about a dozen thread handoffs per read transaction, which cost more CPU than the
queries (docs/operations.md, "Request path profile"). A read on a local SQLite file in WAL mode takes
microseconds and never waits for a writer, so the read engine calls sqlite3 directly instead, behind the
small part of aiosqlite's interface that SQLAlchemy's aiosqlite dialect uses. Writes keep aiosqlite: a
writer can wait up to the busy timeout for another writer, and that wait must not hold up the event loop.
"""

from __future__ import annotations

import atexit
import sqlite3
import weakref
from collections.abc import Callable, Iterable
from typing import Any

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


class InlineCursor:
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

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
        if parameters is None:
            self._cursor.execute(sql)
        else:
            self._cursor.execute(sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> InlineCursor:
        self._cursor.executemany(sql, parameters)
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
    """The part of `aiosqlite.Connection` that sqlalchemy.dialects.sqlite.aiosqlite calls."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._connection: sqlite3.Connection | None = conn  # the dialect checks it before commit and rollback
        self._tx = _InlineQueue()
        _OPEN.add(self)

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> InlineCursor:
        return InlineCursor(self._conn.cursor())

    async def execute(self, sql: str, parameters: Any = None) -> InlineCursor:
        return await self.cursor().execute(sql, parameters)

    def fetchall(self, sql: str, parameters: tuple[Any, ...]) -> list[Any]:
        """Rows of a read, straight from sqlite3 (storage/prepared.py)."""
        return self._conn.execute(sql, parameters).fetchall()

    def begin(self) -> None:
        """A deferred read transaction (storage/db.py issues it from SQLAlchemy's `begin` event)."""
        self._conn.execute("BEGIN")

    async def commit(self) -> None:
        self._conn.commit()

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


def connector(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[], Any]:
    """An `async_creator` for create_async_engine: sqlite3.connect with the dialect's own arguments."""

    async def connect() -> InlineConnection:
        return InlineConnection(sqlite3.connect(*args, **{**kwargs, "check_same_thread": False}))

    return connect
