"""Sign-in, sign-out and the console's front door."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console import identity, web
from server.console.identity import SignedIn
from server.console.pages.shared import NOTICES, Console, safe_next
from server.console.web import ConsoleError, check_csrf, redirect, render


async def sign_in_page(c: Console, request: Request, error: str | None = None, status: int = 200,
                       headers: dict[str, str] | None = None) -> Response:
    pre = request.cookies.get(web.PRE_COOKIE) or web.new_pre_session()
    response = render("sign_in.html", status, headers, csrf=web.csrf_for_pre(c.rt, pre), error=error,
                      notice=NOTICES.get(request.query_params.get("notice", "")),
                      next=safe_next(request.query_params.get("next")))
    web.set_cookie(response, request, c.rt, web.PRE_COOKIE, pre, 3600)
    return response


async def show_sign_in(c: Console, request: Request) -> Response:
    if await c.signed_in(request) is not None:
        return redirect("/")
    return await sign_in_page(c, request)


async def do_sign_in(c: Console, request: Request) -> Response:
    try:
        form = await c.form_of(request)
        check_csrf(c.rt, form.get("csrf"), pre=request.cookies.get(web.PRE_COOKIE))
    except ConsoleError as exc:
        return await sign_in_page(c, request, exc.message, exc.status)
    email = identity.normalise_email(str(form.get("email") or ""))[:320]
    # request.client: the peer, or the client a trusted proxy named (server/app.py)
    admission = c.throttle.admit(email, request.client.host if request.client else "")
    if admission.wait is not None:
        return await sign_in_page(c, request, f"Too many sign-in attempts. Try again in {admission.wait} "
                                              "seconds.", 429, {"Retry-After": str(admission.wait)})
    async with c.rt.db.session(write=True) as session:
        login = await identity.verify_login(session, email, str(form.get("password") or ""))
        if login is None:
            token = None
        else:
            token = await identity.start_session(session, c.rt.clock.now(), login,
                                                 replacing=request.cookies.get(web.COOKIE))
    if token is None:
        return await sign_in_page(c, request, "Wrong email or password.", 401)
    c.throttle.succeeded(admission)
    target = safe_next(form.get("next"))
    response = (web.RedirectResponse(target, status_code=303, headers=web.SECURITY_HEADERS) if target
                else redirect("/"))
    web.set_cookie(response, request, c.rt, web.COOKIE, token, int(identity.SESSION_LIFETIME.total_seconds()))
    response.delete_cookie(web.PRE_COOKIE, path=web.PREFIX)
    return response


async def sign_out(c: Console, request: Request, me: SignedIn) -> Response:
    async with c.rt.db.session(write=True) as session:
        await identity.end_session(session, request.cookies.get(web.COOKIE) or "")
    response = web.RedirectResponse(f"{web.PREFIX}/sign-in?notice=signed-out", status_code=303,
                                    headers=web.SECURITY_HEADERS)
    response.delete_cookie(web.COOKIE, path=web.PREFIX)
    return response


async def home(c: Console, request: Request, me: SignedIn) -> Response:
    return redirect("/workspace")


def routes(c: Console) -> list[BaseRoute]:
    async def show(request: Request) -> Response:
        return await show_sign_in(c, request)

    async def submit(request: Request) -> Response:
        return await do_sign_in(c, request)

    return [
        Route("/", c.page(home), methods=["GET"]),
        Route("/sign-in", show, methods=["GET"]),
        Route("/sign-in", submit, methods=["POST"]),
        Route("/sign-out", c.page(sign_out), methods=["POST"]),
    ]
