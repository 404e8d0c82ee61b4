"""The operator console at /console (server/console/): sign-in, workspaces, brands, accounts, keys, calendar."""

from __future__ import annotations

from typing import Any

from starlette.responses import RedirectResponse
from starlette.routing import Mount, Route

from server.console import pages
from tools.runtime import Runtime


def routes(rt: Runtime, dispatcher: Any) -> list[Any]:
    async def to_console(request: Any) -> RedirectResponse:
        return RedirectResponse("/console/", status_code=307)

    return [Route("/console", to_console), Mount("/console", routes=pages.routes(rt, dispatcher))]
