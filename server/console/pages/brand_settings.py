"""The brand settings page (admins): name, time zone, website, identity and voice, the fields `get_brand_context`
serves, edited with tools/operator/brand_settings.py (as `socialpub brands update`). A refused change shows the
form again as it was typed, with the message."""

from __future__ import annotations

from zoneinfo import available_timezones

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.console.identity import SignedIn
from server.console.pages.shared import Console
from server.console.web import ConsoleError, redirect, render
from tools.operator import actions as operator
from tools.operator import brand_settings

NOTICES = {"saved": "Brand settings saved: get_brand_context serves them now."}
TIMEZONES = sorted(available_timezones())


def values_of(brand) -> dict[str, str]:
    return {f: ", ".join(brand.colors or []) if f == "colors" else getattr(brand, f) or ""
            for f in brand_settings.FIELDS}


def routes(c: Console) -> list[Route]:
    rt = c.rt
    def need_admin(me: SignedIn) -> None:
        if not me.is_admin:
            raise ConsoleError(f"Your role ({me.user.role}) cannot edit brand settings: ask an admin.", 403)

    def show(request: Request, me: SignedIn, brand, values: dict[str, str], error: str | None = None,
             status: int = 200) -> Response:
        return render("brand_settings.html", status, **c.base(
            me, request, brand=brand, tab="settings", values=values, timezones=TIMEZONES, error=error,
            notice=NOTICES.get(request.query_params.get("notice", ""))))

    @c.page
    async def settings_page(_: Console, request: Request, me: SignedIn) -> Response:
        need_admin(me)
        brand = await c.brand_of(me, request.path_params["brand_id"])
        return show(request, me, brand, values_of(brand))

    @c.page
    async def save(_: Console, request: Request, me: SignedIn) -> Response:
        need_admin(me)
        brand = await c.brand_of(me, request.path_params["brand_id"])
        form = request.state.form
        changes = {f: str(form.get(f) or "") for f in brand_settings.FIELDS if f in form}
        try:
            async with rt.db.session(write=True) as session:
                await brand_settings.update_brand(session, rt.clock.now(), me.caller.workspace_id, brand.id, changes)
        except operator.OperatorError as exc:
            return show(request, me, brand, {**values_of(brand), **changes}, str(exc), 422)
        return redirect(f"/brands/{brand.id}/settings", "saved")

    return [Route("/brands/{brand_id:str}/settings", settings_page, methods=["GET"]),
            Route("/brands/{brand_id:str}/settings", save, methods=["POST"])]
