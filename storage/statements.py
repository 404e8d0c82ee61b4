"""Hot statements built once at import and run through SQLAlchemy Core on the session's connection.

On the hot paths (`GET /v1/context`, a content list page, creating a draft) building a statement and running it
through the ORM (entities, an identity map, the unit of work) cost more than the query itself (bench/HISTORY.md,
"Request path profile"). These statements select columns or insert plain values; each is built once, compiled
once per dialect into the engine's statement cache (SQLAlchemy's own, keyed by the statement's structure), and
executed on the session's `AsyncConnection`, so they share the request's transaction without the ORM's execution
machinery. Public APIs only (docs/decisions.md, "Public APIs only").

On SQLite each DB-API call through SQLAlchemy's aiosqlite adapter is a trip to aiosqlite's thread and back (a
queue put, a GIL handover, a loop wake-up): a select costs four (cursor, execute, fetchall, close), more than the
query. So on SQLite a statement runs as one call of aiosqlite's own API (`execute_fetchall`, `execute`,
`executemany`) on the driver connection of the same pooled connection and transaction
(`AsyncConnection.get_raw_connection().driver_connection`), with the SQL compiled once per dialect by
`statement.compile` and values converted by the column types' public `bind_processor` / `result_processor`
(docs/decisions.md, "One driver call per statement on SQLite"). Statements SQLite cannot take that way (an
expanding IN list) and PostgreSQL go through `AsyncConnection.execute`.
"""

from __future__ import annotations

import sqlite3
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.pool import StaticPool
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.time import iso
from storage.db import ONE_STATEMENT


async def connection(session: AsyncSession) -> AsyncConnection:
    """The session's transaction's connection (begun if it was not), after flushing pending ORM changes as the
    session's own execute would (autoflush), so statements reach the database in the order they were issued."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    return await session.connection()


class _Driver:
    """A statement compiled once for SQLite: its SQL, its positional parameters' names and bind processors, and
    (for a select) its columns' result processors. A statement with an expanding IN list or another late-rendered
    parameter gets its SQL and values per call from SQLAlchemy's `construct_expanded_state`."""

    def __init__(self, statement: Any, dialect: Any) -> None:
        compiled = self.compiled = statement.compile(dialect=dialect)
        self.sql = compiled.string
        self.late = any(b.expanding or b.literal_execute for b in compiled.binds.values())
        self.binds = [(name, compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect))
                      for name in compiled.positiontup or ()]
        columns = getattr(statement, "selected_columns", None)
        self.results = [] if columns is None else [c.type.dialect_impl(dialect).result_processor(dialect, None)
                                                   for c in columns]
        self.convert = any(self.results)
        # An INSERT compiled without values names every column: only a call that gives them all runs this way
        # (SQLAlchemy's own execution would fill a missing column's default).
        self.needs = frozenset(c.key for c in statement.table.columns) if getattr(statement, "is_insert", False) \
            else frozenset()

    def takes(self, params: dict[str, Any]) -> bool:
        return self.needs.issubset(params)

    def prepare(self, params: dict[str, Any]) -> tuple[str, list[Any]]:
        """The SQL and its positional values for one set of parameters."""
        if self.late:
            state = self.compiled.construct_expanded_state(params)
            processors = state.processors
            return state.statement, [value if (process := processors.get(name)) is None else process(value)
                                     for name in state.positiontup or () for value in (state.parameters[name],)]
        values = self.compiled.construct_params(params)
        return self.sql, [value if process is None else process(value)
                          for name, process in self.binds for value in (values[name],)]

    def convert_rows(self, found: Any) -> list[Any]:
        if not self.convert:
            return list(found)
        results = self.results
        return [[v if p is None else p(v) for p, v in zip(results, row, strict=True)] for row in found]


def _driver(owner: Any, dialect: Any) -> _Driver | None:
    """The statement compiled for `dialect` if it is SQLite (one driver call per statement)."""
    if dialect.name != "sqlite":
        return None
    found = owner.driver
    if found is None:
        found = owner.driver = _Driver(owner.statement, dialect)
    return found


async def _driver_call(conn: AsyncConnection, call: Callable[[Any], Any], sql: str, params: Any) -> Any:
    driver = (await conn.get_raw_connection()).driver_connection
    try:
        return await call(driver)
    except sqlite3.Error as exc:  # as SQLAlchemy would raise it (OperationalError -> 503, IntegrityError, ...)
        raise DBAPIError.instance(sql, params, exc, sqlite3.Error) from exc


class Query:
    """A select of columns (not ORM entities) with `bindparam`s. Rows come as named tuples (attribute access and
    unpacking, as SQLAlchemy's rows); the time columns named in `iso` come out as the API's text
    (`schemas.time.iso`)."""

    def __init__(self, statement: Any, iso: tuple[str, ...] = ()) -> None:
        self.statement = statement
        keys = [c.key for c in statement.selected_columns]
        self.row = namedtuple("Row", keys)
        assert all(k in keys for k in iso), iso
        self.iso = [i for i, k in enumerate(keys) if k in iso]
        self.driver: Any = None

    async def rows(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """All rows, in the session's transaction."""
        return await self._run(await connection(session), params)

    async def _run(self, conn: AsyncConnection, params: dict[str, Any]) -> list[Any]:
        compiled = _driver(self, conn.dialect)
        if compiled is None:
            return self._rows((await conn.execute(self.statement, params)).all())
        sql, values = compiled.prepare(params)
        found = await _driver_call(conn, lambda d: d.execute_fetchall(sql, values), sql, values)
        return self._rows(compiled.convert_rows(found))

    async def rows_alone(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """As `rows`, for a handler whose only read this is (`GET /v1/context`): on a connection of its own, outside
        the session's transaction (one statement reads one snapshot anyway), which spares the session its
        transaction. In a transaction already, or on an in-memory SQLite database (one shared connection), it is
        `rows`."""
        engine = session.bind
        if session.in_transaction() or isinstance(engine.sync_engine.pool, StaticPool):  # pyright: ignore[reportOptionalMemberAccess]  # the session is bound to the engine at start-up
            return await self.rows(session, params)
        async with engine.connect() as conn:  # pyright: ignore[reportAttributeAccessIssue, reportOptionalMemberAccess]  # the session is bound to an AsyncEngine at start-up
            await conn.execution_options(**{ONE_STATEMENT: True})  # SQLite: no BEGIN for one statement
            return await self._run(conn, params)

    def _rows(self, found: list[Any]) -> list[Any]:
        make = self.row._make
        if not self.iso:
            return [make(r) for r in found]
        rows = []
        for r in found:
            values = list(r)
            for i in self.iso:
                values[i] = iso(values[i])
            rows.append(make(values))
        return rows


class Write:
    """An INSERT, UPDATE or DELETE with plain values or `bindparam`s. It runs on the connection, so the session's
    ORM events (`do_orm_execute`) do not see it: not for the auth tables, whose changes the caller cache learns
    of through those events (tools/services/auth.py)."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.driver: Any = None

    async def run(self, session: AsyncSession, params: dict[str, Any]) -> int:
        """Execute with one set of parameters; the number of rows written."""
        conn = await connection(session)
        compiled = _driver(self, conn.dialect)
        if compiled is None or not compiled.takes(params):
            return (await conn.execute(self.statement, params)).rowcount
        sql, values = compiled.prepare(params)
        cursor = await _driver_call(conn, lambda d: d.execute(sql, values), sql, values)
        return cursor.rowcount

    async def run_many(self, session: AsyncSession, params: list[dict[str, Any]]) -> int:
        """Execute with each set of parameters (all with the same names; the driver's `executemany`); the number
        of rows written."""
        conn = await connection(session)
        compiled = _driver(self, conn.dialect)
        if compiled is None or compiled.late or not params or not all(map(compiled.takes, params)):
            return (await conn.execute(self.statement, params)).rowcount
        values = [compiled.prepare(p)[1] for p in params]
        cursor = await _driver_call(conn, lambda d: d.executemany(compiled.sql, values), compiled.sql, values)
        return cursor.rowcount
