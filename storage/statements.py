"""Hot statements built once at import and run through SQLAlchemy Core on the session's connection.

On the hot paths (`GET /v1/context`, a content list page, creating a draft) building a statement and running it
through the ORM (entities, an identity map, the unit of work) cost more than the query itself (bench/HISTORY.md,
"Request path profile"). These statements select columns or insert plain values; each is built once, compiled
once per dialect into the engine's statement cache (SQLAlchemy's own, keyed by the statement's structure), and
executed on the session's `AsyncConnection`, so they share the request's transaction without the ORM's execution
machinery. Public APIs only (docs/decisions.md, "Public APIs only").
"""

from __future__ import annotations

import numbers
import re
from collections import namedtuple
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from sqlalchemy import type_coerce
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import UserDefinedType
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.time import iso
from storage.db import json_loads
from storage.types import JSONType, UTCDateTime


async def connection(session: AsyncSession) -> AsyncConnection:
    """The session's transaction's connection (begun if it was not), after flushing pending ORM changes as the
    session's own execute would (autoflush), so statements reach the database in the order they were issued."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    return await session.connection()


# -- result types for hot reads -------------------------------------------------------------------------------
# A column selected through `as_api_time` or `as_json` (`type_coerce`: the SQL is unchanged) is converted by one
# function per value, SQLAlchemy's documented `UserDefinedType.result_processor`, where the column's own types
# nest two or three per value (DATETIME's parse, UTCDateTime's zone, then `iso()`; SQLite's JSON wrapper, JSON's,
# then the deserializer). On other dialects the column's own processor runs, then `iso()`.

# The text SQLAlchemy's SQLite DATETIME stores (naive UTC, six fraction digits); ASCII digits only (`\d` would
# take other scripts' digits, which fromisoformat refuses), and years from 1000 (`iso` spells earlier ones with
# strftime, unpadded).
_STORED_TIME = re.compile(r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}").fullmatch


def _iso_of_stored(value: Any) -> str | None:
    """`iso()` of what DATETIME and UTCDateTime make of SQLite's text, without the datetimes: for text of the form
    SQLAlchemy writes, `iso` keeps the date, the time and the first three fraction digits (milliseconds, truncated)
    and adds `Z`; fromisoformat still checks it (a day or an hour out of range raises as DATETIME's parse does).
    Anything else takes the long way."""
    if value.__class__ is str and _STORED_TIME(value) is not None:
        datetime.fromisoformat(value)
        return f"{value[:10]}T{value[11:23]}Z"
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return iso(parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC))


def _json_of_stored(value: Any) -> Any:
    """What SQLite's JSON type and the engine's deserializer (`storage.db.json_loads`) make of the stored text."""
    if value is None:
        return None
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        if isinstance(value, numbers.Number):  # SQLite's JSON type passes a number stored as one through
            return value
        return json_loads(value)  # what orjson refuses and Python's json takes


def _then_iso(process: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    return iso if process is None else lambda value: iso(process(value))


class ApiTime(UserDefinedType):
    """A UTCDateTime column read as the API's text (`schemas.time.iso`). Only for results (`as_api_time`)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:  # never in DDL; what a cast would say
        return "TIMESTAMP"

    def result_processor(self, dialect: Any, coltype: Any) -> Any:  # SQLAlchemy's processor type is private
        if dialect.name == "sqlite":
            return _iso_of_stored
        return _then_iso(UTCDateTime().dialect_impl(dialect).result_processor(dialect, coltype))


class JsonValue(UserDefinedType):
    """A JSONType column read as its value. Only for results (`as_json`)."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:  # never in DDL
        return "JSON"

    def result_processor(self, dialect: Any, coltype: Any) -> Any:  # SQLAlchemy's processor type is private
        if dialect.name == "sqlite":
            return _json_of_stored
        return JSONType.dialect_impl(dialect).result_processor(dialect, coltype)


def as_api_time(column: Any) -> Any:
    """A UTCDateTime column, selected under its own key, whose values come as the API's text."""
    return type_coerce(column, ApiTime()).label(column.key)


def as_json(column: Any) -> Any:
    """A JSONType column, selected under its own key, whose values come decoded (one function per value)."""
    return type_coerce(column, JsonValue()).label(column.key)


class Query:
    """A select of columns (not ORM entities) with `bindparam`s. Rows come as named tuples (attribute access and
    unpacking, as SQLAlchemy's rows, at a tenth of a Row's attribute cost)."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement
        self.row = namedtuple("Row", [c.key for c in statement.selected_columns])

    async def rows(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """All rows, in the session's transaction."""
        result = await (await connection(session)).execute(self.statement, params)
        return list(map(self.row._make, result.all()))

    async def rows_alone(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """As `rows`, for a read that needs no other statement's snapshot (`GET /v1/context`, a read's brand check,
        a content list page without a cursor): on a connection of its own, outside the session's transaction (one
        statement reads one snapshot anyway), which spares the session its transaction; on SQLite a connection of the autocommit engine, so neither BEGIN nor ROLLBACK
        (storage/db.py). In a transaction already, or on an in-memory SQLite database (one shared connection), it
        is `rows`."""
        engine = session.info.get("statement_engine")
        if engine is None or session.in_transaction():
            return await self.rows(session, params)
        async with engine.connect() as conn:
            result = await conn.execute(self.statement, params)
            return list(map(self.row._make, result.all()))


class Write:
    """An INSERT, UPDATE or DELETE with plain values or `bindparam`s. It runs on the connection, so the session's
    ORM events (`do_orm_execute`) do not see it: not for the auth tables, whose changes the caller cache learns
    of through those events (tools/services/auth.py)."""

    def __init__(self, statement: Any) -> None:
        self.statement = statement

    async def run(self, session: AsyncSession, params: dict[str, Any]) -> int:
        """Execute with one set of parameters; the number of rows written."""
        result = await (await connection(session)).execute(self.statement, params)
        return result.rowcount

    async def run_many(self, session: AsyncSession, params: list[dict[str, Any]]) -> int:
        """Execute with each set of parameters (all with the same names; the driver's `executemany`); the number
        of rows written."""
        result = await (await connection(session)).execute(self.statement, params)
        return result.rowcount
