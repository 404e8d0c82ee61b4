"""Query parameters shared by list routes: the older page/limit shape and the bounded cursor shape."""

from __future__ import annotations

from typing import Annotated, Literal

from schemas.requests import QueryParam

OLDER_MAX_LIMIT = 100
OLDER_DEFAULT_LIMIT = 50

Page = Annotated[int, QueryParam(1, "Page number, from 1.", ge=1, le=1_000_000)]
OlderLimit = Annotated[int, QueryParam(OLDER_DEFAULT_LIMIT, "Items per page, 1 to 100.", ge=1, le=OLDER_MAX_LIMIT)]
SortDir = Annotated[Literal["asc", "desc"], QueryParam("desc", "Sort direction.")]
Cursor = Annotated[str | None, QueryParam(None, "next_cursor from the previous page.", max_length=200)]
