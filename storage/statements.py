"""Hot statements built once at import and run through SQLAlchemy Core on the session's connection.

On the hot paths (`GET /v1/context`, a content list page, creating a draft) building a statement and running it
through the ORM (entities, an identity map, the unit of work) cost more than the query itself (bench/HISTORY.md,
"Request path profile"). These statements select columns or insert plain values; each is built once, compiled
once per dialect into the engine's statement cache (SQLAlchemy's own, keyed by the statement's structure), and
executed on the session's `AsyncConnection`, so they share the request's transaction without the ORM's execution
machinery. Public APIs only (docs/decisions.md, "Public APIs only").
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.time import iso


async def connection(session: AsyncSession) -> AsyncConnection:
    """The session's transaction's connection (begun if it was not), after flushing pending ORM changes as the
    session's own execute would (autoflush), so statements reach the database in the order they were issued."""
    if session.new or session.dirty or session.deleted:
        await session.flush()
    return await session.connection()


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

    async def rows(self, session: AsyncSession, params: dict[str, Any]) -> list[Any]:
        """All rows, in the session's transaction."""
        result = await (await connection(session)).execute(self.statement, params)
        return self._rows(result.all())

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
            return self._rows(result.all())

    def _rows(self, found: Sequence[Any]) -> list[Any]:
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

    async def run(self, session: AsyncSession, params: dict[str, Any]) -> int:
        """Execute with one set of parameters; the number of rows written."""
        result = await (await connection(session)).execute(self.statement, params)
        return result.rowcount

    async def run_many(self, session: AsyncSession, params: list[dict[str, Any]]) -> int:
        """Execute with each set of parameters (all with the same names; the driver's `executemany`); the number
        of rows written."""
        result = await (await connection(session)).execute(self.statement, params)
        return result.rowcount
