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
import re
from collections import namedtuple
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import JSON, BindParameter
from sqlalchemy.pool import AsyncAdaptedQueuePool
from sqlalchemy.sql import visitors
from sqlalchemy.util import greenlet_spawn
from sqlmodel.ext.asyncio.session import AsyncSession
from sqlmodel.sql.expression import SelectOfScalar

from schemas.time import iso
from storage.db import PlainRead, PlainWrite, json_loads
from storage.sqlite_inline import InlineConnection
from storage.types import UTCDateTime


class Prepared:
    """A select of columns (not ORM entities) with `bindparam`s, built once at import. The time columns named in
    `iso` come out as the API's text (`schemas.time.iso`) instead of datetimes, on every backend; on SQLite
    straight from the stored text (`_iso_processor`)."""

    def __init__(self, statement: Any, iso: tuple[str, ...] = ()) -> None:
        self.statement = statement
        keys = [c.key for c in statement.selected_columns]
        self.row = namedtuple("Row", keys)  # type: ignore[misc]
        assert all(k in keys for k in iso), iso
        self._iso = [i for i, k in enumerate(keys) if k in iso]
        self._scalar = isinstance(statement, SelectOfScalar)  # sqlmodel's session gives its rows as values
        self._compiled: dict[Any, tuple[Any, list[Any]]] = {}  # dialect -> (compiled, [(column, processor)])
        self._converters: dict[Any, Any] = {}  # dialect -> sqlite3 row -> Row (`_converter`)
        # (dialect, parameter names, lengths of the expanding ones) -> (SQL, [(source, processor)]), or None
        self._plans: dict[tuple[Any, ...], tuple[str, list[Any]] | None] = {}
        self._expanding = [b.key for b in visitors.iterate(statement) if isinstance(b, BindParameter) and b.expanding]

    def _compile(self, dialect: Any) -> tuple[Any, list[Any]]:
        found = self._compiled.get(dialect)
        if found is None:
            processors = [(i, p) for i, c in enumerate(self.statement.selected_columns)
                          if (p := _processor(c.type.dialect_impl(dialect), dialect, i in self._iso)) is not None]
            found = self._compiled[dialect] = (self.statement.compile(dialect=dialect), processors)
        return found

    async def rows(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """All rows, as named tuples (attribute access and unpacking, as SQLAlchemy's rows)."""
        driver, dialect = await _driver_of(session)
        if not isinstance(driver, InlineConnection):
            found = (await session.exec(self.statement, params=params)).all()
            if self._iso:  # the session gives datetimes
                found = [list(r) for r in found]
                for r in found:
                    for i in self._iso:
                        r[i] = iso(r[i])
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
        convert = self._converters.get(dialect)
        if convert is None:
            convert = self._converters[dialect] = _converter(self.row, processors)
        return list(map(convert, driver.fetchall(sql, args)))

    async def rows_alone(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """As `rows`, for a handler whose only read this is (`GET /v1/context`): on SQLite it runs on a pooled
        read connection of its own, outside the session's transaction (one statement reads one snapshot
        anyway), which spares the session its connection and transaction (~10 % of that request)."""
        if type(session) is PlainRead:  # its transaction (storage/db.py `plain_read`): already off the session
            return await self.rows(session, params)
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


def _processor(impl: Any, dialect: Any, as_iso: bool = False) -> Any:
    """The column's result processor; on SQLite, times and JSON in one function where SQLAlchemy nests two or
    three per value (a list page converts 80 JSON and 40 time values): same values, same errors. `as_iso`: a
    time column whose value is wanted as `iso()` of what the processor gives."""
    if dialect.name == "sqlite" and isinstance(impl, UTCDateTime):
        return _iso_processor() if as_iso else _utc_time
    if as_iso:
        process = impl.result_processor(dialect, None)
        return iso if process is None else lambda value: iso(process(value))
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
        if deserialize is not json_loads:
            return json_value
        loads, refused = orjson.loads, orjson.JSONDecodeError

        def orjson_value(value: Any) -> Any:  # json_loads inlined: what orjson decodes, json_loads returns as is
            if value is None:
                return None
            try:
                return loads(value)
            except refused:
                return json_value(value)
        return orjson_value
    return impl.result_processor(dialect, None)


def _converter(row: Any, processors: list[tuple[int, Any]]) -> Any:
    """sqlite3 row -> `row` (a namedtuple), each converting column through its processor, in one function made
    for these columns, as namedtuple makes its own (a loop over columns cost more than the conversions)."""
    names = {f"p{i}": process for i, process in processors}
    values = ", ".join(f"p{i}(r[{i}])" if f"p{i}" in names else f"r[{i}]" for i in range(len(row._fields)))
    namespace = {"new": tuple.__new__, "Row": row, **names}
    exec(f"def convert(r):\n    return new(Row, ({values},))", namespace)  # the source: our own column indices
    return namespace["convert"]


def _utc_time(value: Any) -> datetime | None:  # DATETIME's str_to_datetime, then UTCDateTime's own
    if value is None:
        return None
    value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# The text SQLAlchemy's SQLite DATETIME stores (naive UTC, six fraction digits); ASCII digits only (`\d` would
# take other scripts' digits, which fromisoformat refuses), and years from 1000 (`iso` spells earlier ones
# with strftime, unpadded).
_STORED = re.compile(r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}").fullmatch


def _iso_processor() -> Any:
    """`iso(_utc_time(value))` without the two datetimes: for stored text of the form SQLAlchemy writes,
    `iso` keeps its date, its time and the first three fraction digits (milliseconds, truncated) and adds `Z`.
    fromisoformat still checks such text (a day or hour out of range raises as before); anything else takes the
    long way. tests/test_prepared.py holds the two equal over edge cases."""
    stored, check = _STORED, datetime.fromisoformat

    def iso_text(value: Any) -> str | None:
        if value.__class__ is str and stored(value) is not None:
            check(value)
            return f"{value[:10]}T{value[11:23]}Z"
        return iso(_utc_time(value))
    return iso_text


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
    if type(session) is PlainRead:  # a read transaction without a session (storage/db.py `plain_read`)
        return await session.driver()
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
