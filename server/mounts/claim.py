"""Public claim pages of prospect brands (no API key: holding the link is the authority).

- `GET /claim/{token}`: shows the offer and a button; changes nothing (previews and prefetchers are harmless).
- `POST /claim/{token}`: claims the brand, once (tools.admin.claim).

Unknown or replaced links answer 404; used or expired links 410. Pages are small static HTML, every value
escaped, no scripts (strict CSP), never cached, no referrer (the token is in the URL).
"""

from __future__ import annotations

from html import escape
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from schemas.time import iso
from tools.admin import claim as admin_claim
from tools.runtime import Runtime

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex",
}

_TEXT = {
    "missing": (404, "Link not found", "This claim link does not exist or was replaced by a newer one. Ask for a "
                                       "new link."),
    "revoked": (404, "Link not found", "This claim link does not exist or was replaced by a newer one. Ask for a "
                                       "new link."),
    "used": (410, "Already claimed", "This claim link was already used. Each link works once."),
    "expired": (410, "Link expired", "This claim link has expired. Ask for a new link."),
}


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>body{{font-family:system-ui,sans-serif;max-width:32rem;"
            "margin:3rem auto;padding:0 1rem}button{font-size:1rem;padding:.7rem 1.4rem}</style></head>"
            f"<body><h1>{escape(title)}</h1>{body}</body></html>")
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def _refused(state: str) -> HTMLResponse:
    status, title, text = _TEXT[state]
    return _page(title, f"<p>{escape(text)}</p>", status)


def routes(rt: Runtime, dispatcher: Any) -> list[Route]:
    def limited(request: Request) -> Response | None:
        return dispatcher.rate_limiter.refusal(f"claim:{request.client.host if request.client else ''}")

    async def show(request: Request) -> Response:
        refused = limited(request)
        if refused is not None:
            return refused
        async with rt.db.session(write=False) as session:
            found = await admin_claim.view(session, rt.clock.now(), request.path_params["token"])
        if found.state != "active":
            return _refused(found.state)
        expiry = (f"<p>This link expires at {escape(iso(found.expires_at) or '')}.</p>" if found.expires_at
                  else "")
        return _page(f"Claim {found.brand_name}",
                     f"<p>{escape(found.brand_name)} has been prepared for you: a brand with sample posts made from "
                     f"your website. Claim it to make it yours.</p>{expiry}"
                     "<form method=\"post\"><button type=\"submit\">Claim this brand</button></form>")

    async def claim(request: Request) -> Response:
        refused = limited(request)
        if refused is not None:
            return refused
        async with rt.db.session(write=True) as session:
            result = await admin_claim.claim(session, rt.clock.now(), request.path_params["token"])
        if not result.claimed_now:
            return _refused(result.state)
        return _page("Brand claimed", f"<p>{escape(result.brand_name)} is yours. You can close this page.</p>")

    return [Route(admin_claim.CLAIM_ROUTE, show, methods=["GET", "HEAD"]),
            Route(admin_claim.CLAIM_ROUTE, claim, methods=["POST"])]
