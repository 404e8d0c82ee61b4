"""A brand's notifications for the signed-in user, and marking them read (tools.notify, as the CLI)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console
from server.console.web import redirect, render
from tools.notifications import notify


async def notifications(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    data = await c.api(me, "list_notifications", brand_id=b.id, limit=50)
    return render("notifications.html", **c.base(me, request, brand=b, tab="notifications", items=data["items"]))


async def mark_read(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    async with c.rt.db.session(write=True) as session:
        await notify.mark_read(session, c.rt.clock.now(), me.user.id, brand_id=b.id)
    return redirect(f"/brands/{b.id}/notifications", "read")


def routes(c: Console) -> list[BaseRoute]:
    return [
        Route(f"{BRAND}/notifications", c.page(notifications), methods=["GET"]),
        Route(f"{BRAND}/notifications/read", c.page(mark_read), methods=["POST"]),
    ]
