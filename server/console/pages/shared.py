"""What every console page shares: who is signed in, the form (size-bounded, CSRF-checked), the brand in the path,
the page context, and `page`, which wraps a view with those steps. One `Console` per app, handed to each page
module's `routes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo

from sqlmodel import col, func, select
from starlette.requests import Request
from starlette.responses import Response

from schemas.scopes import SCOPES
from server.console import identity, web
from server.console.identity import SignedIn
from server.console.web import ConsoleError, check_csrf, render
from server.dispatch import Dispatcher
from storage.tables.brands import Brand
from storage.tables.publishing import Schedule
from tools.runtime import Runtime
from tools.schedules.rows import held_clause

NOTICES = {
    "signed-out": "You are signed out.",
    "connected": "Account connected.",
    "reconnected": "Account reconnected: verified with the network.",
    "status": "Account status changed.",
    "disconnected": "Account disconnected: its credentials were deleted; reconnect it to publish again.",
    "faults": "Sandbox faults updated.",
    "revoked": "API key revoked.",
    "approved": "Schedule approved: it publishes at its time.",
    "rejected": "Schedule rejected: it will not publish, and its author was told why.",
    "retried": "A new Schedule was created for the targets that failed.",
    "read": "Notifications marked read.",
    "saved": "Draft saved.",
    "scheduled": "Scheduled: it publishes at its time.",
    "held": "Scheduled, held for review: it publishes once someone with the publish authority approves it.",
    "queued": "Added to the queue.",
    "moved": "Moved back to draft: edit it, then schedule it again.",
    "rescheduled": "Schedule moved.",
    "undone": "Move undone: the post is back at its earlier time.",
    "welcome": "Welcome: sign in with your email and the password you chose.",
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

    async def form_of(self, request: Request, max_form: int = MAX_FORM, max_fields: int = 200) -> dict[str, Any]:
        if int(request.headers.get("content-length") or 0) > max_form:
            raise ConsoleError("The form is too large.", 413)
        form = await request.form(max_files=0, max_fields=max_fields)
        out: dict[str, Any] = {}
        for k, v in form.multi_items():
            if isinstance(v, str):
                out.setdefault(k, []).append(v)
        return {k: v if len(v) > 1 or k in LIST_FIELDS else v[0] for k, v in out.items()}

    async def brand_of(self, me: SignedIn, brand_id: str) -> Brand:
        async with self.rt.db.session(write=False) as session:
            brand = (await session.exec(select(Brand).where(Brand.id == brand_id,
                                                            Brand.workspace_id == me.caller.workspace_id))).first()
        if brand is None or not me.caller.sees_brand(brand.id):  # a member restricted to some brands
            raise ConsoleError("No such brand in your workspace.", 404)
        return brand

    def base(self, me: SignedIn, request: Request, **extra: Any) -> dict[str, Any]:
        notice = NOTICES.get(request.query_params.get("notice", ""))
        return {"me": me, "csrf": web.csrf_for_session(self.rt, me), "notice": notice,
                "review_count": getattr(request.state, "review_count", None), **extra}

    def media_headers(self) -> dict[str, str]:
        """For pages showing media thumbnails: CSP img-src also allows the media origin when it is its own
        (SOCIALPUB_MEDIA_URL on another host), and nothing else."""
        parts = urlsplit(self.rt.settings.resolved_media_url)
        origin = f"{parts.scheme}://{parts.netloc}"
        public = urlsplit(self.rt.settings.public_url)
        if not parts.netloc or (parts.scheme, parts.netloc) == (public.scheme, public.netloc):
            return {}
        csp = web.SECURITY_HEADERS["Content-Security-Policy"].replace("img-src 'self'", f"img-src 'self' {origin}")
        return {"Content-Security-Policy": csp}

    def held(self, me: SignedIn, brand_id: str | None = None) -> Any:
        """Held Schedules the user may see (their workspace, their key's brands), optionally of one brand."""
        query = select(Schedule).join(Brand, col(Brand.id) == Schedule.brand_id).where(
            Brand.workspace_id == me.caller.workspace_id, held_clause())
        if me.caller.brand_ids is not None:
            query = query.where(col(Schedule.brand_id).in_(list(me.caller.brand_ids)))
        return query.where(Schedule.brand_id == brand_id) if brand_id else query

    async def review_count(self, me: SignedIn) -> int:
        async with self.rt.db.session(write=False) as session:
            return (await session.exec(select(func.count()).select_from(self.held(me).subquery()))).one()

    async def api(self, me: SignedIn, name: str, /, idempotency_key: str | None = None, **args: Any) -> Any:
        """A catalogue endpoint as the signed-in user, through the dispatcher REST and MCP use (web.api).
        `name` is positional-only, so an endpoint's own `name` argument (a draft's, a queue's) passes through."""
        return await web.api(self.dispatcher, me, name, idempotency_key, **args)

    def page(self, view: View, max_form: int = MAX_FORM,
             max_fields: int = 200) -> Callable[[Request], Awaitable[Response]]:
        """A view for signed-in users: others go to sign-in (back here after, for a GET); a POST's form is read
        and its CSRF token checked first (in `request.state.form`; `max_form` bytes and `max_fields` fields at
        most); a refusal renders the error page."""
        async def handler(request: Request) -> Response:
            me = await self.signed_in(request)
            if me is None:
                back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                where = f"{web.PREFIX}/sign-in" + (f"?next={quote(back, safe='')}" if request.method == "GET"
                                                  and request.url.path != f"{web.PREFIX}/" else "")
                return web.RedirectResponse(where, status_code=303, headers=web.SECURITY_HEADERS)
            try:
                if request.method == "POST":
                    form = await self.form_of(request, max_form, max_fields)
                    check_csrf(self.rt, form.get("csrf"), me=me)
                    request.state.form = form
                else:  # the navigation's review count, on every page
                    request.state.review_count = await self.review_count(me)
                return await view(self, request, me)
            except ConsoleError as exc:
                return render("error.html", exc.status, **self.base(me, request, error=exc.message,
                                                                     back=back_to(request)))
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


def back_to(request: Request) -> str:
    """Where an error page links back to: the console page the user was on (the form's page for a POST)."""
    if request.method == "GET":
        here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    else:
        referer = urlsplit(request.headers.get("referer") or "")
        same = referer.netloc == request.url.netloc
        here = referer.path + (f"?{referer.query}" if referer.query else "") if same else ""
    return safe_next(here) or f"{web.PREFIX}/workspace"


def z(at: datetime) -> str:
    """An instant as the API writes it (UTC, milliseconds, Z)."""
    return at.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S.000Z")


BRAND = "/brands/{brand_id:str}"  # the path prefix of a brand's pages
