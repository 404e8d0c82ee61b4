"""Hot read statements built and compiled once, run on SQLite's loop-thread connection without SQLAlchemy's
per-execution machinery.

On the hot reads (`GET /v1/context`, a content list page) SQLAlchemy's per-statement work (ORM compile state,
execution context, cursor result and row objects, a greenlet round trip per driver call) cost several times
the SQLite query itself (docs/operations.md, "Request path profile"). A `Prepared` statement is compiled once
per dialect with SQLAlchemy's own compiler and type processors (`construct_expanded_state`, the columns'
bind and result processors), and in a read transaction on SQLite (storage/sqlite_inline.py) it runs on that
transaction's sqlite3 connection directly. Anywhere else (PostgreSQL, a write transaction) it is executed by
the session as any statement is, so results are the same rows either way.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from sqlalchemy.pool import AsyncAdaptedQueuePool
from sqlalchemy.util import greenlet_spawn
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import SelectOfScalar

from storage.sqlite_inline import InlineConnection


class Prepared:
    """A select of columns (not ORM entities) with `bindparam`s, built once at import."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.row = namedtuple("Row", [c.key for c in statement.selected_columns])  # type: ignore[misc]
        self._scalar = isinstance(statement, SelectOfScalar)  # sqlmodel's session gives its rows as values
        self._compiled: dict[Any, tuple[Any, list[Any]]] = {}  # dialect -> (compiled, [(column, processor)])

    def _compile(self, dialect: Any) -> tuple[Any, list[Any]]:
        found = self._compiled.get(dialect)
        if found is None:
            processors = [(i, p) for i, c in enumerate(self.statement.selected_columns)
                          if (p := c.type.dialect_impl(dialect).result_processor(dialect, None)) is not None]
            found = self._compiled[dialect] = (self.statement.compile(dialect=dialect), processors)
        return found

    async def rows(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """All rows, as named tuples (attribute access and unpacking, as SQLAlchemy's rows)."""
        driver, dialect = await session.run_sync(_driver)
        if not isinstance(driver, InlineConnection):
            found = (await session.exec(self.statement, params=params)).all()
            return [self.row(r) if self._scalar else self.row(*r) for r in found]
        return self._fetch(driver, dialect, params)

    def _fetch(self, driver: InlineConnection, dialect: Any, params: dict[str, Any]) -> list[Any]:
        compiled, processors = self._compile(dialect)
        state = compiled.construct_expanded_state(params)
        binds = state.processors
        args = tuple(binds[name](value) if name in binds else value
                     for name, value in zip(state.positiontup, state.positional_parameters, strict=True))
        rows = driver.fetchall(state.statement, args)
        if processors:  # only the columns whose type converts (times, JSON)
            rows = [list(r) for r in rows]
            for r in rows:
                for i, process in processors:
                    r[i] = process(r[i])
        make = self.row._make
        return [make(r) for r in rows]

    async def rows_alone(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """As `rows`, for a handler whose only read this is (`GET /v1/context`): on SQLite it runs on a pooled
        read connection of its own, outside the session's transaction (one statement reads one snapshot
        anyway), which spares the session its connection and transaction (~10 % of that request)."""
        engine = session.bind
        if not (engine.dialect.name == "sqlite" and isinstance(engine.sync_engine.pool, AsyncAdaptedQueuePool)):
            return await self.rows(session, params)
        found = await greenlet_spawn(self._alone, engine.sync_engine, params)
        return await self.rows(session, params) if found is None else found

    def _alone(self, engine: Any, params: dict[str, Any]) -> list[Any] | None:
        connection = engine.raw_connection()
        try:
            driver = connection.driver_connection
            if not isinstance(driver, InlineConnection):  # not the loop-thread read engine
                return None
            return self._fetch(driver, engine.dialect, params)
        finally:
            connection.close()


def _driver(session: Any) -> tuple[Any, Any]:
    """The session's transaction's driver connection (begun if it was not) and its dialect."""
    connection = session.connection()
    return connection.connection.driver_connection, connection.dialect
