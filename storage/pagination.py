"""Shared list queries: the older page/limit shape, and sort orders with a stable tie-break."""

from __future__ import annotations

from typing import Any

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession


def sort_order(column: Any, tiebreak: Any, direction: str) -> tuple[Any, Any]:
    """ORDER BY column, then the ID, both in `direction` ("asc" or "desc"), so pages never shuffle ties."""
    return (column.desc(), tiebreak.desc()) if direction == "desc" else (column.asc(), tiebreak.asc())


async def older_page(session: AsyncSession, query: Any, page: int, limit: int) -> tuple[list[Any], dict[str, Any]]:
    """One page of an ordered query and the older shape's `pagination` object; one extra row tells has_more."""
    rows = list((await session.exec(query.offset((page - 1) * limit).limit(limit + 1))).all())
    return rows[:limit], {"page": page, "limit": limit, "has_more": len(rows) > limit}


async def older_page_of_ids(session: AsyncSession, entity: Any, id_column: Any, where: tuple[Any, ...],
                            order: tuple[Any, ...], page: int, limit: int) -> tuple[list[Any], dict[str, Any]]:
    """As `older_page`, as a deferred join: OFFSET walks a narrow subquery of IDs (index-only where an index on
    the filter and the order holds the ID), and only the page's rows are read in full. A deep page number then
    skips index entries, not table rows (the spec keeps page numbers)."""
    ids = select(id_column).where(*where).order_by(*order).offset((page - 1) * limit).limit(limit + 1).subquery()
    query = select(entity).join(ids, id_column == ids.c[id_column.key]).order_by(*order)
    rows = list((await session.exec(query)).all())
    return rows[:limit], {"page": page, "limit": limit, "has_more": len(rows) > limit}
