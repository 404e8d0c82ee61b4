"""Hot write statements (INSERT, UPDATE) compiled once, run on SQLite's loop-thread write connection without
SQLAlchemy's per-execution machinery.

A create with an idempotency key runs three writes (reserve the key, insert the item, settle the key); through
`session.exec` each cost ~40 µs of SQLAlchemy work (execution context, cursor result, a greenlet round trip
per driver call) around a SQLite statement of a few µs (docs/operations.md, "The write path: compiled
writes"). A `PreparedWrite` is compiled once per dialect and set of parameter names with SQLAlchemy's own
compiler and bind processors (the read side's counterpart is storage/prepared.py), and in a transaction on
SQLite's inline write connection it runs on that sqlite3 connection directly. Anywhere else (PostgreSQL, any
other driver), or when the statement needs values SQLAlchemy computes at execution (a column default for a
name not given), the session executes it as any statement, so the same rows are written either way.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlmodel.ext.asyncio.session import AsyncSession

from storage.db import PlainWrite
from storage.prepared import cached_driver
from storage.sqlite_inline import InlineConnection


class PreparedWrite:
    """An INSERT or UPDATE with plain values or `bindparam`s, built once at import."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        # (dialect, parameter names) -> (compiled, bind processors by name), or None when the session must run it
        self._compiled: dict[tuple[Any, tuple[str, ...]], tuple[Any, dict[str, Any]] | None] = {}

    def _compile(self, dialect: Any, names: tuple[str, ...]) -> tuple[Any, dict[str, Any]] | None:
        key = (dialect, names)
        if key not in self._compiled:
            compiled = self.statement.compile(dialect=dialect, column_keys=list(names))
            # A bind SQLAlchemy would fill at execution (a Python-side default) is not among the names given.
            ok = set(compiled.binds) <= set(names) and compiled.positiontup is not None
            # The columns' bind processors (JSON to text, times to ISO strings), as the execution context applies.
            self._compiled[key] = (compiled, dict(compiled._bind_processors)) if ok else None
        return self._compiled[key]

    async def run(self, session: AsyncSession, params: dict[str, Any]) -> int:
        """Execute with one set of parameters; the number of rows written."""
        return await self.run_many(session, [params])

    async def run_many(self, session: AsyncSession, params: list[dict[str, Any]]) -> int:
        """Execute with each set of parameters (all with the same names); the number of rows written."""
        if type(session) is PlainWrite:  # a write transaction without a session (storage/db.py `plain_write`)
            driver, dialect = session.driver
        else:
            # The transaction's connection as a prepared read of this transaction found it (the create's brand
            # check), when no ORM change waits to be flushed: no round trip into the session's greenlet.
            found_driver = cached_driver(session) if session.sync_session._is_clean() else None
            driver, dialect = found_driver or await session.run_sync(_write_driver)
        found = None
        if isinstance(driver, InlineConnection) and driver.busy_timeout_ms is not None:
            found = self._compile(dialect, tuple(params[0]))
        if found is None:  # (in a `PlainWrite`, SessionNeeded: the request runs again in a session)
            result = await session.exec(self.statement, params=params if len(params) > 1 else params[0])
            return result.rowcount  # type: ignore[attr-defined]
        compiled, binds = found
        order = compiled.positiontup
        rows = []
        for values in params:
            bound = compiled.construct_params(values)
            rows.append(tuple(binds[name](bound[name]) if name in binds else bound[name] for name in order))
        try:
            return await driver.write(compiled.string, rows)
        except sqlite3.Error as exc:  # as SQLAlchemy raises it: a locked database is answered with 503
            raise DBAPIError.instance(compiled.string, rows, exc, sqlite3.Error) from exc


def _write_driver(session: Any) -> tuple[Any, Any]:
    """The transaction's driver connection (begun if it was not) and dialect, after flushing pending ORM changes
    as `session.exec` would (autoflush), so statements reach the database in the order they were issued."""
    session._autoflush()
    connection = session.connection()
    return connection.connection.driver_connection, connection.dialect
