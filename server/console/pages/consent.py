"""The MCP authorization consent page (server/console/oauth.py): which scopes and brands a client may have."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from sqlmodel import col, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from schemas.scopes import SCOPES
from server.console import oauth, web
from server.console.identity import SignedIn
from server.console.pages.shared import Console, scope_groups
from server.console.web import ConsoleError, render
from storage.tables.brands import Brand


async def consent_request(c: Console, token: Any) -> tuple[Any, Any]:
    opened = oauth.open_request(c.rt, token) if isinstance(token, str) else None
    client = await oauth.Provider(c.rt).get_client(opened[0]) if opened else None
    if opened is None or client is None:
        raise ConsoleError("This authorization request is invalid or expired. Start again from the app.", 400)
    return client, opened[1]


def consent_headers(params: Any) -> dict[str, str]:
    # The Allow/Deny answer redirects to the client: CSP form-action must allow that origin.
    target = urlsplit(str(params.redirect_uri))
    origin = f"{target.scheme}://{target.netloc}" if target.netloc else f"{target.scheme}:"
    csp = web.SECURITY_HEADERS["Content-Security-Policy"].replace("form-action 'self'",
                                                                  f"form-action 'self' {origin}")
    return {"Content-Security-Policy": csp}


async def consent(c: Console, request: Request, me: SignedIn) -> Response:
    token = request.query_params.get("request")
    client, params = await consent_request(c, token)
    wanted = params.scopes or list(me.caller.scopes)
    async with c.rt.db.session(write=False) as session:
        brands = (await session.exec(select(Brand).where(Brand.workspace_id == me.caller.workspace_id)
                                     .order_by(Brand.name).limit(500))).all()
    return render("consent.html", headers=consent_headers(params), **c.base(
        me, request, client=client, params=params, request_token=token, groups=scope_groups(),
        wanted=set(wanted), grantable=me.caller.scopes, brands=brands,
        redirect_host=urlsplit(str(params.redirect_uri)).netloc or str(params.redirect_uri)))


async def consent_answer(c: Console, request: Request, me: SignedIn) -> Response:
    form = request.state.form
    client, params = await consent_request(c, form.get("request"))
    if form.get("decision") != "allow":
        target = oauth.denied_redirect(params)
    else:
        requested = set(params.scopes or me.caller.scopes)
        chosen = [s.name for s in SCOPES if s.name in set(form.get("scopes") or [])]
        beyond = [s for s in chosen if s not in me.caller.scopes or s not in requested]
        if not chosen:
            raise ConsoleError("Pick at least one scope to grant.", 422)
        if beyond:
            raise ConsoleError(f"You cannot grant: {', '.join(beyond)}.", 403)
        brand_ids = list(form.get("brand_ids") or []) if form.get("restrict") == "1" else None
        async with c.rt.db.session(write=True) as session:
            if brand_ids is not None:
                found = set((await session.exec(select(Brand.id).where(
                    Brand.workspace_id == me.caller.workspace_id, col(Brand.id).in_(brand_ids)))).all())
                if not brand_ids or found != set(brand_ids):
                    raise ConsoleError("Pick brands of your workspace.", 422)
            target = await oauth.grant_code(c.rt, session, client.client_id, params, me.user, chosen, brand_ids)
    return web.RedirectResponse(target, status_code=303, headers={**web.SECURITY_HEADERS,
                                                                  **consent_headers(params)})


def routes(c: Console) -> list[BaseRoute]:
    return [
        Route("/oauth/consent", c.page(consent), methods=["GET"]),
        Route("/oauth/consent", c.page(consent_answer), methods=["POST"]),
    ]
