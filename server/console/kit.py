"""What a console page module needs from the page machinery (server/console/pages.py): the `page` wrapper
(sign-in, CSRF on POST, refusals rendered), the template context, the form reader and brand lookup."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from server.console.identity import SignedIn

View = Callable[[Request, SignedIn], Awaitable[Response]]


@dataclass(frozen=True)
class Kit:
    page: Callable[[View], Callable[[Request], Awaitable[Response]]]
    base: Callable[..., dict[str, Any]]  # (me, request, **extra) -> template context
    form_of: Callable[[Request], Awaitable[dict[str, Any]]]
    brand_of: Callable[[SignedIn, str], Awaitable[Any]]
    need_scope: Callable[[SignedIn, str], None]
