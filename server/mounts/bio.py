"""Public Link in bio pages: `GET /@{handle}` (records a view) and `GET /@{handle}/l/{link_id}` (records a
click, then redirects to the link's stored URL — never to anything taken from the request).

Every piece of page content is HTML-escaped; links on the page point at our own redirect route; a strict
Content-Security-Policy forbids scripts. Draft, offline and unknown pages answer 404. No raw IP address or
user agent is stored (see `tools/bio.py`).
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tools import bio
from tools.runtime import Runtime

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_NOT_FOUND = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Page not found</title></head>"
              "<body><p>This page does not exist or is not available.</p></body></html>")


def _client(request: Request) -> tuple[str, str]:
    return (request.client.host if request.client else ""), request.headers.get("user-agent", "")


def render(page: bio.PublicPage) -> str:
    content = page.content
    theme = content.get("theme") or {}
    dark = theme.get("mode") == "dark"
    accent = escape(theme.get("accent_color") or ("#8ab4f8" if dark else "#1a56db"))
    bg, fg = ("#111", "#eee") if dark else ("#fff", "#111")
    title = escape(content.get("title") or page.brand_name)
    links = "".join(
        f'<li><a rel="nofollow noopener" href="/@{quote(page.handle)}/l/{quote(link["id"])}">'
        f"{escape(link['title'])}</a></li>" for link in content.get("links", []))
    about = f"<p>{escape(content['bio'])}</p>" if content.get("bio") else ""
    return (
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{title}</title><style>body{{font-family:system-ui,sans-serif;background:{bg};color:{fg};"
        "max-width:32rem;margin:2rem auto;padding:0 1rem;text-align:center}ul{list-style:none;padding:0}"
        f"a{{display:block;margin:.6rem 0;padding:.8rem;border:2px solid {accent};border-radius:.6rem;"
        f"color:{accent};text-decoration:none}}</style></head>"
        f"<body><h1>{title}</h1>{about}<ul>{links}</ul></body></html>")


def routes(rt: Runtime, dispatcher: Any) -> list[Route]:
    def limited(request: Request) -> Response | None:
        return dispatcher.rate_limiter.refusal(f"bio:{_client(request)[0]}")

    async def page(request: Request) -> Response:
        refused = limited(request)
        if refused is not None:
            return refused
        ip, agent = _client(request)
        count = request.method == "GET"  # HEAD probes are not views
        async with rt.db.session(write=count) as session:
            found = await bio.view_page(session, rt.clock.now(), request.path_params["handle"], ip, agent,
                                        count=count)
        if found is None:
            return HTMLResponse(_NOT_FOUND, status_code=404, headers=SECURITY_HEADERS)
        return HTMLResponse(render(found), headers=SECURITY_HEADERS)

    async def click(request: Request) -> Response:
        refused = limited(request)
        if refused is not None:
            return refused
        async with rt.db.session(write=True) as session:
            url = await bio.click_link(session, rt.clock.now(), request.path_params["handle"],
                                       request.path_params["link_id"])
        if url is None:
            return HTMLResponse(_NOT_FOUND, status_code=404, headers=SECURITY_HEADERS)
        return RedirectResponse(url, status_code=302, headers=SECURITY_HEADERS)

    return [Route("/@{handle}", page, methods=["GET", "HEAD"]),
            Route("/@{handle}/l/{link_id}", click, methods=["GET"])]
