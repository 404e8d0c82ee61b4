"""The `Endpoint` value: every route is declared once, and the REST routes, MCP tools, OpenAPI document,
docs and manifest are all derived from these declarations. Request-model conventions: `schemas.requests`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from schemas.errors import ApiError
from schemas.requests import (  # noqa: F401  (re-exported for area modules)
    LOCATION_KEY,
    NoInput,
    PathParam,
    QueryParam,
    RequestModel,
    field_locations,
    fields_at,
)

if TYPE_CHECKING:
    from sqlmodel.ext.asyncio.session import AsyncSession

    from storage.tables.brands import Brand
    from tools.runtime import Runtime
    from tools.services.auth import Caller

PATH_PARAM_RE = re.compile(r"{([a-z_]+)}")

T = TypeVar("T")


@dataclass
class Reply(Generic[T]):
    """What a handler returns when the plain payload is not enough. `Reply[Model]` (older lists:
    `Reply[list[Model]]`) names the declared response model, as a bare return annotation does
    (tests/test_handler_types.py)."""

    data: T | None = None
    status: int | None = None  # None: the endpoint's declared status
    headers: dict[str, str] = field(default_factory=dict)
    pagination: dict[str, Any] | None = None  # the older list shape's sibling object
    not_modified: bool = False  # 304, no body


# A handler returns its endpoint's `response` model (or `Reply[response]`): the REST envelope and the MCP result
# are both dumped from it, so the declared schema and the payload cannot diverge (tests/test_handler_types.py
# holds every handler's return annotation to the declaration).
Handler = Callable[["Call", Any], Awaitable[Any]]


@dataclass(frozen=True, eq=False)
class Endpoint:
    name: str  # verb_noun, the MCP tool name
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"]
    path: str
    summary: str  # one sentence: what it does
    toolset: str
    handler: Handler
    request: type[RequestModel] = NoInput
    response: type[BaseModel] | None = None  # the payload (`data`); for older lists, one item
    scopes: tuple[str, ...] = ()
    public: bool = False  # no key needed (GET /v1/plans, capabilities)
    any_key: bool = False  # any valid key, no scope needed (GET /v1/context)
    roles: tuple[str, ...] = ()  # owner roles required (community, admin)
    idempotency: Literal["none", "optional", "required"] = "none"
    status: int = 200  # status of a first success (201 on creates)
    destructive: bool = False
    # A POST that changes nothing (preflight): runs in a read transaction and is read-only to MCP clients.
    write_free: bool = False
    open_world: bool = False  # reaches a social network (directly or by what it schedules)
    list_shape: Literal["data", "older"] = "data"
    variant: str | None = None  # "older": the older shape of a route that has two; selected by ?variant=older
    guidance: str = ""  # for agents: what it never does, what to call next
    title: str | None = None
    # Rewrites a stored payload for an idempotent replay (e.g. outcome -> "replayed").
    replay: Callable[[Any], Any] | None = None
    # Request headers the handler may read (REST only), e.g. If-None-Match.
    headers: tuple[str, ...] = ()
    # A path with {brand_id}: the handler reads `call.brand` (the Brand row). False: it reads only
    # `call.brand_id`, so the dispatcher checks the brand with a one-column read instead of loading the row
    # (hot lists).
    brand_row: bool = True
    # With `brand_row=False`, a read whose own statement proves the brand visible (it selects nothing of a brand
    # outside the key's workspace, tools/content/routes.py `list_content_items`): the dispatcher checks only the
    # key's brand list, and the database only before an error it answers ahead of the handler (so a missing
    # brand's 404 still comes first). The handler calls `Call.require_brand` whenever its statement cannot tell
    # (an empty result, a cursor to look up).
    brand_proved_by_handler: bool = False

    def __post_init__(self) -> None:
        # Only a read without a key to replay may leave the brand to its handler: nothing it writes or replays
        # can come before the check.
        assert not self.brand_proved_by_handler or (
            self.changes_nothing and self.idempotency == "none" and not self.brand_row), self.name

    @property
    def read_only(self) -> bool:
        return self.method == "GET"

    @property
    def changes_nothing(self) -> bool:
        return self.read_only or self.write_free

    @property
    def route_key(self) -> tuple[str, str, str | None]:
        return (self.method, self.path, self.variant)

    @cached_property  # read on every call (a regex scan each time, before)
    def path_params(self) -> tuple[str, ...]:
        return tuple(PATH_PARAM_RE.findall(self.path))

    @property
    def label(self) -> str:
        return f"{self.method} {self.path}" + (f" (variant={self.variant})" if self.variant else "")

    @property
    def description(self) -> str:
        return f"{self.summary} {self.guidance}".strip()


@dataclass
class Call:
    """Everything a handler may use. It never sees HTTP or MCP."""

    rt: Runtime
    session: AsyncSession
    endpoint: Endpoint
    caller: Caller | None
    request_id: str
    now: datetime
    idempotency_key: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    brand: Brand | None = None  # set when the path has {brand_id}: already checked visible to the key
    visible_brand_id: str | None = None  # instead of `brand` when the endpoint says `brand_row=False`
    # Set (`brand_proved_by_handler`) while the database has not yet been asked whether the brand is visible.
    brand_check: Callable[[], Awaitable[object]] | None = None
    _after_commit: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def scopes(self) -> frozenset[str]:
        return self.caller.scopes if self.caller else frozenset()

    def has_scopes(self, *scopes: str) -> bool:
        return set(scopes) <= self.scopes

    def require_scopes(self, *scopes: str, reason: str = "") -> None:
        """Conditional authority (e.g. publish:execute for approved schedules): fails closed."""
        missing = [s for s in scopes if s not in self.scopes]
        if missing:
            needed = sorted(set(self.endpoint.scopes) | set(scopes))
            raise ApiError("INSUFFICIENT_SCOPE", f"This request needs scope {', '.join(missing)}{reason}.",
                           details={"required_scopes": needed, "missing_scopes": missing})

    @property
    def brand_id(self) -> str:
        if self.brand is not None:
            return self.brand.id
        assert self.visible_brand_id is not None, "endpoint has no {brand_id}"
        return self.visible_brand_id

    async def require_brand(self) -> None:
        """Check the path's brand in the database now, if the dispatcher left it to the handler (404 if it is not
        visible to the key)."""
        check, self.brand_check = self.brand_check, None
        if check is not None:
            await check()

    def after_commit(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run once the transaction has committed (e.g. wake the worker); never runs on failure."""
        self._after_commit.append(fn)

    def wake_worker_after_commit(self) -> None:
        """New work is due (an approved Schedule, a queued job): an idle worker in this process starts at once."""
        async def wake() -> None:
            self.rt.wake_worker()

        self.after_commit(wake)
