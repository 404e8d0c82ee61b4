"""The operator console at /console (server/console/): sign-in, workspaces, brands, accounts, keys, calendar."""

from __future__ import annotations

from typing import Any

from starlette.responses import RedirectResponse
from starlette.routing import Mount, Route

from server.console import pages
from server.rest import not_found
from tools.runtime import Runtime


def routes(rt: Runtime, dispatcher: Any) -> list[Any]:
    async def to_console(request: Any) -> RedirectResponse:
        return RedirectResponse("/console/", status_code=307)

    async def root(request: Any) -> Any:
        """`/`: a browser is sent to the console; an API client keeps the JSON 404 of any unknown route."""
        if "text/html" in request.headers.get("accept", ""):
            return RedirectResponse("/console/", status_code=303)
        return await not_found(request)

    return [Route("/", root, methods=["GET", "HEAD"]), Route("/console", to_console),
            Mount("/console", routes=pages.routes(rt, dispatcher))]
