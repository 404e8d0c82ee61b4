"""The network apps page (admins): per network that needs an operator app, whether one is configured, the exact
redirect URI to register, the scopes the connect requests, a link to the network's developer console, and a form
for the client ID and secret. The same data and action as `socialpub apps list|set` (tools/networks/apps.py,
tools/networks/status.py); the secret is write-only: sealed in the vault, never rendered, logged or echoed.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.console.identity import SignedIn
from server.console.pages.shared import Console
from server.console.web import ConsoleError, redirect, render
from tools.networks import apps
from tools.networks.status import network_status
from tools.runtime import Runtime

NOTICES = {"app-saved": "App saved: its secret is sealed and will not be shown again."}


def need_admin(me: SignedIn) -> None:
    if not me.is_admin:
        raise ConsoleError(f"Your role ({me.user.role}) cannot configure network apps: ask an admin.", 403)


async def operator_networks(rt: Runtime) -> list[dict]:
    """`socialpub networks status` rows of the networks that take an operator app, with their developer console."""
    return [{**row, "developer_console": apps.DEVELOPER_CONSOLES.get(row["platform"])}
            for row in await network_status(rt) if row["connect"] == "oauth_operator_app"]


def routes(c: Console) -> list[Route]:
    rt = c.rt
    @c.page
    async def apps_page(_: Console, request: Request, me: SignedIn) -> Response:
        need_admin(me)
        return render("apps.html", **c.base(me, request, networks=await operator_networks(rt),
                                              notice=NOTICES.get(request.query_params.get("notice", ""))))

    @c.page
    async def save_app(_: Console, request: Request, me: SignedIn) -> Response:
        need_admin(me)
        platform, form = request.path_params["platform"], request.state.form
        client_id = str(form.get("client_id") or "").strip()
        secret = str(form.get("client_secret") or "").strip()
        if not secret:  # write-only: keep the stored secret when the field is left empty
            secret = await apps.stored_secret(rt, platform) or ""
        try:
            await apps.set_app(rt, platform, client_id, secret)
        except apps.AppError as exc:
            raise ConsoleError(str(exc).replace("--client-id", "The client ID")
                               .replace("--client-secret", "The client secret"), 422) from None
        return redirect("/apps", "app-saved")

    return [Route("/apps", apps_page, methods=["GET"]),
            Route("/apps/{platform:str}", save_app, methods=["POST"])]
