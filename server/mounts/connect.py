"""`GET /connect/{platform}/callback`: where a network's OAuth authorize page sends the operator back
(tools/networks/oauth.py completes the connect). No API key: the single-use state in the query is the
authority. A connect started in the console returns to the brand's accounts page (or, when the grant reaches
several accounts, to the page choosing one); one started with the CLI gets a page here. Pages are small static HTML, never cached, no referrer (the code is in the URL); they never show
the code, the state or a token.
"""

from __future__ import annotations

import logging
from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from server.console import web
from tools.networks.connect import ConnectError
from tools.networks.oauth import NETWORKS, complete, started_from
from tools.runtime import Runtime

log = logging.getLogger("socialpub.connect")
CALLBACK_ROUTE = "/connect/{platform}/callback"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex",
}


def _page(title: str, body: str, status: int) -> HTMLResponse:
    html = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>body{{font-family:system-ui,sans-serif;max-width:32rem;"
            "margin:3rem auto;padding:0 1rem}</style></head>"
            f"<body><h1>{escape(title)}</h1><p>{escape(body)}</p></body></html>")
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def _back(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303, headers=SECURITY_HEADERS)


def routes(rt: Runtime, dispatcher: Any) -> list[Route]:
    async def callback(request: Request) -> Response:
        refused = dispatcher.rate_limiter.refusal(f"connect:{request.client.host if request.client else ''}")
        if refused is not None:
            return refused
        platform = request.path_params["platform"]
        if platform not in NETWORKS:
            return _page("Not found", "This network has no connect callback.", 404)
        q = request.query_params
        origin = await started_from(rt, platform, q.get("state"))
        back = f"{web.PREFIX}/brands/{origin[0]}/accounts" if origin and origin[1] == "console" else None
        try:
            integration = await complete(rt, platform, q.get("state"), q.get("code"), q.get("error"))
        except ConnectError as exc:
            if back:  # a console connect: back to the accounts page, which shows the message
                return _back(f"{back}?connect_error={web.seal_message(rt, str(exc))}")
            return _page("Connect refused", str(exc), 400)
        except Exception:
            log.exception("connect callback for %s failed", platform)
            message = "Something went wrong; nothing was saved. Start the connect again."
            if back:
                return _back(f"{back}?connect_error={web.seal_message(rt, message)}")
            return _page("Connect failed", message, 500)
        if back:
            several = len((integration.provider_state or {}).get("candidates") or []) > 1
            return _back(f"{back}/{integration.id}/choose" if several else f"{back}?notice=connected")
        name = integration.display_name or integration.username or integration.id
        return _page("Account connected", f"{name} ({integration.id}) is connected and verified; you can close "
                                          "this page.", 200)

    return [Route(CALLBACK_ROUTE, callback, methods=["GET"])]
