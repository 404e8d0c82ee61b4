"""Connecting OAuth network accounts from a brand's accounts page: "Connect" (and "Reconnect") starts the
authorization-code flow of tools/networks/oauth.py (the one `socialpub integrations connect --oauth` prints),
marked to return to the console; the network's callback (server/mounts/connect.py) then lands on the accounts
page, or, when the grant reaches several accounts (Facebook Pages, Instagram business accounts, LinkedIn
organizations, Pinterest boards, Tumblr blogs, Business Profile locations), on the page choosing one.

The Connect form posts here and is answered with a redirect to the network: the accounts page's CSP
`form-action` names the networks' authorization origins (`form_origins`), and nothing else.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from schemas.platforms import BY_KEY
from server.console import web
from server.console.identity import SignedIn
from server.console.pages.shared import Console, need_scope
from server.console.web import ConsoleError, redirect, render
from storage.tables.integrations import Integration
from tools.networks import apps, oauth
from tools.networks import connect as networks
from tools.runtime import Runtime


def operator_platforms() -> list[str]:
    return [p for p, n in oauth.NETWORKS.items() if n.register is None]


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def form_origins() -> list[str]:
    """Where a Connect form's answer may send the browser: each operator-app network's authorize page."""
    return sorted({_origin(n.url(n.server, n.authorize_path)) for p, n in oauth.NETWORKS.items()
                   if n.register is None})


def accounts_headers() -> dict[str, str]:
    csp = web.SECURITY_HEADERS["Content-Security-Policy"].replace(
        "form-action 'self'", "form-action 'self' " + " ".join(form_origins()))
    return {"Content-Security-Policy": csp}


async def oauth_cards(rt: Runtime) -> list[dict[str, Any]]:
    """One Connect card per operator-app network: configured or not (then what to do)."""
    configured = {a["platform"]: a["configured"] for a in await apps.list_apps(rt)}
    return [{"platform": p, "name": oauth.NETWORKS[p].display_name, "configured": configured.get(p, False),
             "scopes": oauth.NETWORKS[p].scope_param} for p in operator_platforms()]


def routes(c: Console) -> list[Route]:
    rt = c.rt
    async def start(request: Request, me: SignedIn, integration: Integration | None = None) -> Response:
        need_scope(me, "integrations:write")
        b = await c.brand_of(me, request.path_params["brand_id"])
        platform = integration.platform if integration else request.path_params["platform"]
        if platform not in operator_platforms():
            raise ConsoleError("This network is not connected with an operator app.", 404)
        try:
            flow = await oauth.start(rt, b.id, platform, integration_id=integration.id if integration else None,
                                     return_to="console")
        except networks.ConnectError as exc:
            raise ConsoleError(str(exc), 422) from None
        return web.RedirectResponse(flow["authorize_url"], status_code=303,
                                    headers={**web.SECURITY_HEADERS, **accounts_headers()})

    async def own(me: SignedIn, request: Request) -> Integration:
        b = await c.brand_of(me, request.path_params["brand_id"])
        async with rt.db.session(write=False) as s:
            row = await s.get(Integration, request.path_params["integration_id"])
        if row is None or row.brand_id != b.id or row.provider == "sandbox":
            raise ConsoleError("No such network account in this brand.", 404)
        return row

    @c.page
    async def connect(_: Console, request: Request, me: SignedIn) -> Response:
        return await start(request, me)

    @c.page
    async def reconnect(_: Console, request: Request, me: SignedIn) -> Response:
        need_scope(me, "integrations:write")
        return await start(request, me, await own(me, request))

    @c.page
    async def choose_page(_: Console, request: Request, me: SignedIn) -> Response:
        need_scope(me, "integrations:write")
        row = await own(me, request)
        b = await c.brand_of(me, row.brand_id)
        candidates = [c for c in (row.provider_state or {}).get("candidates") or [] if isinstance(c, dict)]
        rules = BY_KEY.get(row.platform)
        return render("choose_account.html", **c.base(
            me, request, brand=b, tab="accounts", row=row, candidates=candidates,
            network=rules.display_name if rules else row.platform))

    @c.page
    async def choose(_: Console, request: Request, me: SignedIn) -> Response:
        need_scope(me, "integrations:write")
        row = await own(me, request)
        try:
            await networks.select_account(rt, row.id, str(request.state.form.get("account") or "")[:200])
        except networks.ConnectError as exc:
            raise ConsoleError(str(exc), 422) from None
        return redirect(f"/brands/{row.brand_id}/accounts", "connected")

    brand_path = "/brands/{brand_id:str}/accounts"
    return [
        Route(f"{brand_path}/oauth/{{platform:str}}", connect, methods=["POST"]),
        Route(f"{brand_path}/{{integration_id:str}}/reconnect-oauth", reconnect, methods=["POST"]),
        Route(f"{brand_path}/{{integration_id:str}}/choose", choose_page, methods=["GET"]),
        Route(f"{brand_path}/{{integration_id:str}}/choose", choose, methods=["POST"]),
    ]
