"""Keyset pagination, the one helper every keyset list uses: pages ordered by (a sort column, the ID), a
position = the (value, ID) of the last row of a page, and the next page = the rows strictly after it. A page
costs the same at any depth (an index on (brand, column, id) serves it).

Cursors come in the two forms the API has, both validated here the same way (unknown, forged, foreign or
inaccessible -> None, which the list answers with 400 INVALID_CURSOR):
- signed (`encode` / `decode`): the position signed and bound to everything that defines the list (brand,
  window, filters, direction), so a cursor never works for another brand or another filter;
- the spec-fixed ID cursor (`position_of_id`): the released content list's `next_cursor` is its last item's
  ID; the position is read back from that row, within the caller's brand.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import BindParameter, Integer, bindparam
from sqlmodel import or_, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.errors import ApiError, issue
from schemas.ids import is_id
from schemas.time import iso, parse_timestamp
from storage.pagination import sort_order
from storage.statements import Query

Position = tuple[Any, str]  # (sort value, row ID) of the last row of a page


class Signer(Protocol):
    """A keyed MAC for one purpose (tools/services/signing.py `signer`)."""

    def sign(self, *parts: str) -> str: ...

    def verify(self, signature: str, *parts: str) -> bool: ...


def order(column: Any, id_column: Any, desc: bool) -> tuple[Any, Any]:
    return sort_order(column, id_column, "desc" if desc else "asc")


def after(query: Any, column: Any, id_column: Any, position: Position | tuple[Any, BindParameter[Any]],
          desc: bool) -> Any:
    """The rows strictly after `position` in the list's order (a page's values, or bound parameters for them)."""
    value, last_id = position
    if desc:
        return query.where(column <= value, or_(column < value, id_column < last_id))
    return query.where(column >= value, or_(column > value, id_column > last_id))


async def page(session: AsyncSession, query: Any, column: Any, id_column: Any, *, desc: bool, limit: int,
               position: Position | None = None) -> tuple[list[Any], bool]:
    """One page (rows after `position`, if any) and whether more rows follow (one extra row tells)."""
    if position is not None:
        query = after(query, column, id_column, position, desc)
    rows = list((await session.exec(query.order_by(*order(column, id_column, desc)).limit(limit + 1))).all())
    return rows[:limit], len(rows) > limit


class PageQuery:
    """The statements of one keyset list built once, with the limit, the position and the list's own filters
    as bound parameters: building a statement costs more than running it on a hot list (bench/HISTORY.md,
    "Request path profile"). `query` selects the rows and filters them with `bindparam`s that `params` fills."""

    def __init__(self, query: Any, column: Any, id_column: Any) -> None:
        self.column, self.id_column = column, id_column
        value = bindparam("keyset_value", type_=column.type)
        last_id = bindparam("keyset_id", type_=id_column.type)
        limit = bindparam("keyset_limit", type_=Integer())
        self._statements = {
            (desc, positioned): Query(
                (after(query, column, id_column, (value, last_id), desc) if positioned else query)
                .order_by(*order(column, id_column, desc)).limit(limit))
            for desc in (False, True) for positioned in (False, True)}
        # The position of a row by its ID among the rows the list's filters select (the spec-fixed cursor).
        self._position = Query(select(column).where(query.whereclause, id_column == last_id))

    async def page(self, session: AsyncSession, params: dict[str, Any], *, desc: bool, limit: int,
                   position: Position | None = None, alone: bool = False) -> tuple[list[Any], bool]:
        """As `page`: the rows after `position` (if any) and whether more rows follow. `alone`: the page is the
        handler's only read outside a transaction (`Query.rows_alone`; in the session's transaction if one is
        open, e.g. after `position_of_id`)."""
        params = {**params, "keyset_limit": limit + 1}
        if position is not None:
            params["keyset_value"], params["keyset_id"] = position
        query = self._statements[desc, position is not None]
        rows = await (query.rows_alone if alone else query.rows)(session, params)
        return rows[:limit], len(rows) > limit

    async def position_of_id(self, session: AsyncSession, params: dict[str, Any], cursor: str,
                             id_prefix: str | None = None) -> Position | None:
        """As `position_of_id`, among the rows the list's filters select."""
        if not is_id(cursor, id_prefix):
            return None
        found = await self._position.rows(session, {**params, "keyset_id": cursor})
        return (found[0][0], cursor) if found else None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def encode(signer: Signer, bound: tuple[str, ...], at: datetime, row_id: str) -> str:
    """A signed cursor naming the last row of a page; it verifies only with the same signer and `bound`."""
    body = _b64(json.dumps({"t": iso(at), "i": row_id}, separators=(",", ":")).encode())
    return f"{body}.{signer.sign(*bound, body)}"


def decode(signer: Signer, bound: tuple[str, ...], cursor: str, id_prefix: str) -> Position | None:
    """(time, id) of a cursor from `encode`, or None when it is forged, foreign or malformed."""
    body, _, signature = cursor.partition(".")
    if not body or not signature or not signer.verify(signature, *bound, body):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        at, row_id = parse_timestamp(data["t"]), data["i"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return (at, row_id) if is_id(row_id, id_prefix) else None


async def position_of_id(session: AsyncSession, column: Any, id_column: Any, cursor: str, *visible: Any,
                         id_prefix: str | None = None) -> Position | None:
    """The position of the row whose ID is `cursor` (the spec-fixed cursor), among the rows `visible` selects
    (the caller's brand); None when there is no such row."""
    if not is_id(cursor, id_prefix):
        return None
    value = (await session.exec(select(column).where(id_column == cursor, *visible))).first()
    return None if value is None else (value, cursor)


def invalid_cursor(message: str, hint: str = "Send the next_cursor this list returned.") -> ApiError:
    return ApiError("INVALID_CURSOR", message, issues=[issue("$.cursor", "INVALID_CURSOR", hint)])
