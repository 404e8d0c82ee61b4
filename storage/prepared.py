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

import json
import numbers
from collections import namedtuple
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BindParameter
from sqlalchemy.pool import AsyncAdaptedQueuePool
from sqlalchemy.sql import visitors
from sqlalchemy.util import greenlet_spawn
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import SelectOfScalar

from storage.db import PlainWrite
from storage.sqlite_inline import InlineConnection
from storage.types import UTCDateTime


class Prepared:
    """A select of columns (not ORM entities) with `bindparam`s, built once at import."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.row = namedtuple("Row", [c.key for c in statement.selected_columns])  # type: ignore[misc]
        self._scalar = isinstance(statement, SelectOfScalar)  # sqlmodel's session gives its rows as values
        self._compiled: dict[Any, tuple[Any, list[Any]]] = {}  # dialect -> (compiled, [(column, processor)])
        # (dialect, parameter names, lengths of the expanding ones) -> (SQL, [(source, processor)]), or None
        self._plans: dict[tuple[Any, ...], tuple[str, list[Any]] | None] = {}
        self._expanding = [b.key for b in visitors.iterate(statement) if isinstance(b, BindParameter) and b.expanding]

    def _compile(self, dialect: Any) -> tuple[Any, list[Any]]:
        found = self._compiled.get(dialect)
        if found is None:
            processors = [(i, p) for i, c in enumerate(self.statement.selected_columns)
                          if (p := _processor(c.type.dialect_impl(dialect), dialect)) is not None]
            found = self._compiled[dialect] = (self.statement.compile(dialect=dialect), processors)
        return found

    async def rows(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """All rows, as named tuples (attribute access and unpacking, as SQLAlchemy's rows)."""
        driver, dialect = await _driver_of(session)
        if not isinstance(driver, InlineConnection):
            found = (await session.exec(self.statement, params=params)).all()
            return [self.row(r) if self._scalar else self.row(*r) for r in found]
        return self._fetch(driver, dialect, params)

    def _fetch(self, driver: InlineConnection, dialect: Any, params: dict[str, Any]) -> list[Any]:
        compiled, processors = self._compile(dialect)
        key = (dialect, tuple(params), *(len(params[name]) for name in self._expanding if name in params))
        plan = self._plans.get(key, False)
        if plan is False:
            plan = self._plans[key] = _plan(compiled, params)
        if plan is None:  # a shape the plan does not cover: SQLAlchemy's expansion as is
            sql, args = _expanded(compiled, params)
        else:
            sql, sources = plan
            args = tuple(_value(params, source, process) for source, process in sources)
        rows = driver.fetchall(sql, args)
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


def _processor(impl: Any, dialect: Any) -> Any:
    """The column's result processor; on SQLite, times and JSON in one function where SQLAlchemy nests two or
    three per value (a list page converts 80 JSON and 40 time values): same values, same errors."""
    if dialect.name == "sqlite" and isinstance(impl, UTCDateTime):
        def utc_time(value: Any) -> datetime | None:  # DATETIME's str_to_datetime, then UTCDateTime's own
            if value is None:
                return None
            value = datetime.fromisoformat(value)
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        return utc_time
    if dialect.name == "sqlite" and isinstance(impl, JSON) and impl._str_impl.result_processor(dialect, None) is None:
        deserialize = dialect._json_deserializer or json.loads

        def json_value(value: Any) -> Any:  # JSON's processor inside the SQLite dialect's (numbers pass)
            if value is None:
                return None
            try:
                return deserialize(value)
            except TypeError:
                if isinstance(value, numbers.Number):
                    return value
                raise
        return json_value
    return impl.result_processor(dialect, None)


def _expanded(compiled: Any, params: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
    """SQL and positional arguments as SQLAlchemy expands them (expanding IN lists, bind processors)."""
    state = compiled.construct_expanded_state(params)
    binds = _binds(compiled, state)
    return state.statement, tuple(binds[name](value) if name in binds else value
                                  for name, value in zip(state.positiontup, state.positional_parameters, strict=True))


def _binds(compiled: Any, state: Any) -> dict[str, Any]:
    """The bind processors of an expanded statement: the compiled statement's own (a time's UTC text on SQLite)
    and those of the expanded IN elements, merged as SQLAlchemy's execution context merges them. The expanded
    state alone holds only the latter, so a keyset position's time went to sqlite3 unconverted (as
    `...+00:00` text, which sorts after the stored value of the same instant: a descending page repeated the
    cursor's row)."""
    return {**compiled._bind_processors, **state.processors}


def _plan(compiled: Any, params: dict[str, Any]) -> tuple[str, list[Any]] | None:
    """Where each positional argument comes from, for parameters of these names and expanding lists of these
    lengths: `construct_expanded_state` rewrites the SQL for an IN list on every call (most of a list page's
    label read). A source is (name, None) for a parameter, (name, index) for an element of an expanding list,
    or (None, value) for a value the statement fixed (its OFFSET 0). None when the plan would not give the
    arguments SQLAlchemy gives for these parameters (a tuple IN, say): such calls expand as before."""
    state = compiled.construct_expanded_state(params)
    binds = _binds(compiled, state)
    element = {name: (key, index) for key, names in state.parameter_expansion.items()
               for index, name in enumerate(names)}
    sources = [(element.get(name) or ((name, None) if name in params else (None, value)),
                binds.get(name))
               for name, value in zip(state.positiontup, state.positional_parameters, strict=True)]
    plan = (state.statement, sources)
    same = tuple(_value(params, source, process) for source, process in sources) == _expanded(compiled, params)[1]
    return plan if same else None


def _value(params: dict[str, Any], source: tuple[Any, Any], process: Any) -> Any:
    name, index = source
    value = index if name is None else params[name] if index is None else params[name][index]
    return value if process is None else process(value)


def cached_driver(session: AsyncSession) -> tuple[Any, Any] | None:
    """What `_driver_of` found for the session's current transaction, if it is still active; else None."""
    transaction = session.sync_session.get_transaction()
    found = session.info.get(_DRIVER)
    if found is not None and transaction is not None and found[0] is transaction and transaction.is_active:
        return found[1]
    return None


async def _driver_of(session: AsyncSession) -> tuple[Any, Any]:
    """`_driver`, found once per transaction: a list page runs three prepared reads in one read transaction
    (the brand check, the page, its labels), and each round trip into the session's greenlet costs more than
    a SQLite query. Kept in `session.info` beside the transaction it belongs to; a new transaction (after a
    commit or rollback) finds its own."""
    if type(session) is PlainWrite:  # a write transaction without a session (storage/db.py `plain_write`)
        return session.driver
    found = cached_driver(session)
    if found is not None:
        return found
    driver = await session.run_sync(_driver)
    session.info[_DRIVER] = (session.sync_session.get_transaction(), driver)
    return driver


_DRIVER = "storage.prepared.driver"  # the session.info key of `_driver_of`


def _driver(session: Any) -> tuple[Any, Any]:
    """The session's transaction's driver connection (begun if it was not) and its dialect."""
    connection = session.connection()
    return connection.connection.driver_connection, connection.dialect
