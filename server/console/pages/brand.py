"""A brand's overview page (its context, as `get_brand_context` gives it)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console
from server.console.web import render


async def brand(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    data = await c.api(me, "get_brand_context", brand_id=b.id)
    return render("brand.html", **c.base(me, request, brand=b, ctx=data, tab="brand"))


def routes(c: Console) -> list[BaseRoute]:
    return [Route(BRAND, c.page(brand), methods=["GET"])]
