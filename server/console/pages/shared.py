"""What every console page shares: who is signed in, the form (size-bounded, CSRF-checked), the brand in the path,
the page context, and `page`, which wraps a view with those steps. One `Console` per app, handed to each page
module's `routes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

from sqlmodel import select
from starlette.requests import Request
from starlette.responses import Response

from schemas.scopes import SCOPES
from server.console import identity, web
from server.console.identity import SignedIn
from server.console.web import ConsoleError, check_csrf, render
from server.dispatch import Dispatcher
from storage.tables.brands import Brand
from tools.runtime import Runtime

NOTICES = {
    "signed-out": "You are signed out.",
    "connected": "Account connected.",
    "reconnected": "Account reconnected: verified with the network.",
    "status": "Account status changed.",
    "disconnected": "Account disconnected: its credentials were deleted; reconnect it to publish again.",
    "faults": "Sandbox faults updated.",
    "revoked": "API key revoked.",
    "approved": "Schedule approved: it publishes at its time.",
    "rejected": "Schedule rejected: it will not publish.",
    "read": "Notifications marked read.",
}
MAX_FORM = 64 * 1024  # bytes: console forms are small
LIST_FIELDS = ("scopes", "brand_ids")  # form fields that are always lists, even with one value

View = Callable[["Console", Request, SignedIn], Awaitable[Response]]


class Console:
    """The runtime and dispatcher the pages act through, and the steps they share."""

    def __init__(self, rt: Runtime, dispatcher: Dispatcher) -> None:
        self.rt = rt
        self.dispatcher = dispatcher
        self.throttle = web.Throttle(lambda: rt.clock.now().timestamp())

    async def signed_in(self, request: Request) -> SignedIn | None:
        async with self.rt.db.session(write=False) as session:
            return await identity.resolve(session, self.rt.clock.now(), request.cookies.get(web.COOKIE))

    async def form_of(self, request: Request) -> dict[str, Any]:
        if int(request.headers.get("content-length") or 0) > MAX_FORM:
            raise ConsoleError("The form is too large.", 413)
        form = await request.form(max_files=0, max_fields=200)
        out: dict[str, Any] = {}
        for k, v in form.multi_items():
            if isinstance(v, str):
                out.setdefault(k, []).append(v)
        return {k: v if len(v) > 1 or k in LIST_FIELDS else v[0] for k, v in out.items()}

    async def brand_of(self, me: SignedIn, brand_id: str) -> Brand:
        async with self.rt.db.session(write=False) as session:
            brand = (await session.exec(select(Brand).where(Brand.id == brand_id,
                                                            Brand.workspace_id == me.caller.workspace_id))).first()
        if brand is None:
            raise ConsoleError("No such brand in your workspace.", 404)
        return brand

    def base(self, me: SignedIn, request: Request, **extra: Any) -> dict[str, Any]:
        notice = NOTICES.get(request.query_params.get("notice", ""))
        return {"me": me, "csrf": web.csrf_for_session(self.rt, me), "notice": notice, **extra}

    async def api(self, me: SignedIn, name: str, idempotency_key: str | None = None, **args: Any) -> Any:
        """A catalogue endpoint as the signed-in user, through the dispatcher REST and MCP use (web.api)."""
        return await web.api(self.dispatcher, me, name, idempotency_key, **args)

    def page(self, view: View) -> Callable[[Request], Awaitable[Response]]:
        """A view for signed-in users: others go to sign-in (back here after, for a GET); a POST's form is read
        and its CSRF token checked first (in `request.state.form`); a refusal renders the error page."""
        async def handler(request: Request) -> Response:
            me = await self.signed_in(request)
            if me is None:
                back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                where = f"{web.PREFIX}/sign-in" + (f"?next={quote(back, safe='')}" if request.method == "GET"
                                                  and request.url.path != f"{web.PREFIX}/" else "")
                return web.RedirectResponse(where, status_code=303, headers=web.SECURITY_HEADERS)
            try:
                if request.method == "POST":
                    form = await self.form_of(request)
                    check_csrf(self.rt, form.get("csrf"), me=me)
                    request.state.form = form
                return await view(self, request, me)
            except ConsoleError as exc:
                return render("error.html", exc.status, **self.base(me, request, error=exc.message))
        return handler


def need_scope(me: SignedIn, scope: str) -> None:
    if scope not in me.caller.scopes:
        raise ConsoleError(f"Your role ({me.user.role}) lacks {scope}, which this action needs.", 403)


def scope_groups() -> list[tuple[str, list[Any]]]:
    """Scopes grouped by resource (the part before the colon), with the spec's descriptions."""
    groups: dict[str, list[Any]] = {}
    for s in SCOPES:
        groups.setdefault(s.name.split(":")[0], []).append(s)
    return list(groups.items())


def safe_next(value: Any) -> str | None:
    """Only a console path of this site (never `//host` or a scheme) is a place to return to after sign-in."""
    if isinstance(value, str) and value.startswith(f"{web.PREFIX}/") and "//" not in value and "\\" not in value \
            and len(value) <= 8000:
        return value
    return None


def z(at: datetime) -> str:
    """An instant as the API writes it (UTC, milliseconds, Z)."""
    return at.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S.000Z")


BRAND = "/brands/{brand_id:str}"  # the path prefix of a brand's pages
