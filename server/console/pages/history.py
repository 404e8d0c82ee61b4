"""A brand's History and publications (`list_history`, `list_publications`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console
from server.console.web import render


async def history(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    hist = await c.api(me, "list_history", brand_id=b.id, limit=50)
    pubs = await c.api(me, "list_publications", brand_id=b.id, limit=50)
    return render("history.html", **c.base(me, request, brand=b, tab="history", history=hist["items"],
                                           publications=pubs))


def routes(c: Console) -> list[BaseRoute]:
    return [Route(f"{BRAND}/history", c.page(history), methods=["GET"])]
