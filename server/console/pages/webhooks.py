"""The webhooks pages (server/console/webhooks.py), registered with the console's shared page steps."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from server.console import webhooks as webhook_pages
from server.console.identity import SignedIn
from server.console.pages.shared import Console


def routes(c: Console) -> list[BaseRoute]:
    def page(view: Callable[[Request, SignedIn], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def as_page(_c: Console, request: Request, me: SignedIn) -> Response:
            return await view(request, me)

        return c.page(as_page)

    return list(webhook_pages.routes(c.rt, page, c.base))
