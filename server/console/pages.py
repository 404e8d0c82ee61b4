"""Console pages and form handlers, mounted at /console by `server/mounts/console.py`.

Reads and writes that the API offers go through `web.api` (the dispatcher, as the signed-in user's key);
operator actions the API does not offer (keys, sandbox accounts, read state) call the same functions as the
CLI (`tools.operator`, `tools.notify`, `server/commands/sandbox.py`). Every form posts a CSRF token; every
POST answers with a redirect (303) on success, so a reload never repeats an action.
"""

from __future__ import annotations

import calendar
from collections.abc import Awaitable, Callable
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import quote, urlsplit
from zoneinfo import ZoneInfo

from sqlmodel import select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from providers.sandbox import FAULT_KINDS, FAULT_OPERATIONS
from schemas.plans import LIMIT_NAMES, PLANS, get_plan
from schemas.scopes import SCOPES
from server.commands.networks import FLAGS as network_flags
from server.commands.sandbox import set_sandbox_state
from server.console import identity, oauth, web
from server.console import webhooks as webhook_pages
from server.console.connectors import connect_forms, reconnect_fields
from server.console.email_status import email_panel
from server.console.identity import SignedIn
from server.console.web import ConsoleError, api, check_csrf, redirect, render
from server.dispatch import Dispatcher
from storage.tables.accounts import ApiKey, Workspace
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from tools.context import plans
from tools.networks import checks as account_checks
from tools.networks import connect as networks
from tools.networks import oauth as network_oauth
from tools.notifications import notify
from tools.operator import actions as operator
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


def scope_groups() -> list[tuple[str, list[Any]]]:
    """Scopes grouped by resource (the part before the colon), with the spec's descriptions."""
    groups: dict[str, list[Any]] = {}
    for s in SCOPES:
        groups.setdefault(s.name.split(":")[0], []).append(s)
    return list(groups.items())


def routes(rt: Runtime, dispatcher: Dispatcher) -> list[Any]:
    throttle = web.Throttle(lambda: rt.clock.now().timestamp())

    async def signed_in(request: Request) -> SignedIn | None:
        async with rt.db.session(write=False) as session:
            return await identity.resolve(session, rt.clock.now(), request.cookies.get(web.COOKIE))

    async def form_of(request: Request) -> dict[str, Any]:
        if int(request.headers.get("content-length") or 0) > MAX_FORM:
            raise ConsoleError("The form is too large.", 413)
        form = await request.form(max_files=0, max_fields=200)
        out: dict[str, Any] = {}
        for k, v in form.multi_items():
            if isinstance(v, str):
                out.setdefault(k, []).append(v)
        return {k: v if len(v) > 1 or k in ("scopes", "brand_ids") else v[0] for k, v in out.items()}

    async def brand_of(me: SignedIn, brand_id: str) -> Brand:
        async with rt.db.session(write=False) as session:
            brand = (await session.exec(select(Brand).where(Brand.id == brand_id,
                                                            Brand.workspace_id == me.caller.workspace_id))).first()
        if brand is None:
            raise ConsoleError("No such brand in your workspace.", 404)
        return brand

    def base(me: SignedIn, request: Request, **extra: Any) -> dict[str, Any]:
        notice = NOTICES.get(request.query_params.get("notice", ""))
        return {"me": me, "csrf": web.csrf_for_session(rt, me), "notice": notice, **extra}

    def page(view: Callable[[Request, SignedIn], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def handler(request: Request) -> Response:
            me = await signed_in(request)
            if me is None:
                back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                where = f"{web.PREFIX}/sign-in" + (f"?next={quote(back, safe='')}" if request.method == "GET"
                                                  and request.url.path != f"{web.PREFIX}/" else "")
                return web.RedirectResponse(where, status_code=303, headers=web.SECURITY_HEADERS)
            try:
                if request.method == "POST":
                    form = await form_of(request)
                    check_csrf(rt, form.get("csrf"), me=me)
                    request.state.form = form
                return await view(request, me)
            except ConsoleError as exc:
                return render("error.html", exc.status, **base(me, request, error=exc.message))
        return handler

    def need_scope(me: SignedIn, scope: str) -> None:
        if scope not in me.caller.scopes:
            raise ConsoleError(f"Your role ({me.user.role}) lacks {scope}, which this action needs.", 403)

    # -- sign-in --------------------------------------------------------------------------------------------
    async def sign_in_page(request: Request, error: str | None = None, status: int = 200,
                           headers: dict[str, str] | None = None) -> Response:
        pre = request.cookies.get(web.PRE_COOKIE) or web.new_pre_session()
        response = render("sign_in.html", status, headers, csrf=web.csrf_for_pre(rt, pre), error=error,
                          notice=NOTICES.get(request.query_params.get("notice", "")),
                          next=_safe_next(request.query_params.get("next")))
        web.set_cookie(response, request, rt, web.PRE_COOKIE, pre, 3600)
        return response

    async def show_sign_in(request: Request) -> Response:
        if await signed_in(request) is not None:
            return redirect("/")
        return await sign_in_page(request)

    async def do_sign_in(request: Request) -> Response:
        try:
            form = await form_of(request)
            check_csrf(rt, form.get("csrf"), pre=request.cookies.get(web.PRE_COOKIE))
        except ConsoleError as exc:
            return await sign_in_page(request, exc.message, exc.status)
        email = identity.normalise_email(str(form.get("email") or ""))[:320]
        # request.client: the peer, or the client a trusted proxy named (server/app.py)
        admission = throttle.admit(email, request.client.host if request.client else "")
        if admission.wait is not None:
            return await sign_in_page(request, f"Too many sign-in attempts. Try again in {admission.wait} "
                                               "seconds.", 429, {"Retry-After": str(admission.wait)})
        async with rt.db.session(write=True) as session:
            login = await identity.verify_login(session, email, str(form.get("password") or ""))
            if login is None:
                token = None
            else:
                token = await identity.start_session(session, rt.clock.now(), login,
                                                     replacing=request.cookies.get(web.COOKIE))
        if token is None:
            return await sign_in_page(request, "Wrong email or password.", 401)
        throttle.succeeded(admission)
        target = _safe_next(form.get("next"))
        response = (web.RedirectResponse(target, status_code=303, headers=web.SECURITY_HEADERS) if target
                    else redirect("/"))
        web.set_cookie(response, request, rt, web.COOKIE, token, int(identity.SESSION_LIFETIME.total_seconds()))
        response.delete_cookie(web.PRE_COOKIE, path=web.PREFIX)
        return response

    @page
    async def sign_out(request: Request, me: SignedIn) -> Response:
        async with rt.db.session(write=True) as session:
            await identity.end_session(session, request.cookies.get(web.COOKIE) or "")
        response = web.RedirectResponse(f"{web.PREFIX}/sign-in?notice=signed-out", status_code=303,
                                        headers=web.SECURITY_HEADERS)
        response.delete_cookie(web.COOKIE, path=web.PREFIX)
        return response

    # -- workspace and plan -----------------------------------------------------------------------------
    @page
    async def workspace(request: Request, me: SignedIn) -> Response:
        context = await api(dispatcher, me, "get_context")
        async with rt.db.session(write=False) as session:
            ws = await session.get(Workspace, me.caller.workspace_id)
            usage = await plans.workspace_usage(session, ws)
        return render("workspace.html", **base(me, request, workspace=ws, plan=get_plan(ws.plan_id), usage=usage,
                                               brands=context["brands"], plans=PLANS, limit_names=LIMIT_NAMES))

    @page
    async def brand(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        data = await api(dispatcher, me, "get_brand_context", brand_id=b.id)
        return render("brand.html", **base(me, request, brand=b, ctx=data, tab="brand"))

    # -- connected accounts -----------------------------------------------------------------------------
    @page
    async def accounts(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        data = await api(dispatcher, me, "list_targets", brand_id=b.id)
        async with rt.db.session(write=False) as session:
            rows = (await session.exec(select(Integration.id, Integration.provider, Integration.platform)
                                       .where(Integration.brand_id == b.id).limit(1000))).all()
        # sandbox accounts get status and faults; real ones a reconnect form with their network's fields
        real = {i: reconnect_fields(platform) for i, provider, platform in rows if provider != "sandbox"}
        return render("accounts.html", **base(
            me, request, brand=b, tab="accounts", targets=[t for t in data["targets"] if t.get("integration_id")],
            forms=connect_forms(b), can_manage="integrations:write" in me.caller.scopes, real=real,
            fault_operations=FAULT_OPERATIONS, fault_kinds=FAULT_KINDS))

    async def account_action(request: Request, me: SignedIn,
                             act: Callable[[Any, Brand, dict[str, Any]], Awaitable[Any]], notice: str) -> Response:
        need_scope(me, "integrations:write")
        b = await brand_of(me, request.path_params["brand_id"])
        try:
            async with rt.db.session(write=True) as session:
                await act(session, b, request.state.form)
        except operator.OperatorError as exc:
            raise ConsoleError(str(exc), 422) from None
        return redirect(f"/brands/{b.id}/accounts", notice)

    async def _own_integration(session: Any, b: Brand, integration_id: str, *, sandbox_only: bool = False) -> None:
        row = await session.get(Integration, integration_id)
        if row is None or row.brand_id != b.id:
            raise ConsoleError("No such account in this brand.", 404)
        if sandbox_only and row.provider != "sandbox":  # a real account comes back only with verified credentials
            raise ConsoleError("Only sandbox accounts take a status or faults from here; reconnect this one.", 422)

    @page
    async def connect(request: Request, me: SignedIn) -> Response:
        async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
            await operator.connect_integration(session, rt.clock.now(), b, str(form.get("platform") or ""))
        return await account_action(request, me, act, "connected")

    @page
    async def connect_network(request: Request, me: SignedIn) -> Response:
        """A real network account: verified with the network, then stored (tools/networks, as the CLI)."""
        need_scope(me, "integrations:write")
        b = await brand_of(me, request.path_params["brand_id"])
        platform, form = request.path_params["platform"], request.state.form
        if platform not in network_flags:
            raise ConsoleError("socialpub cannot connect this network yet.", 404)
        options = {name: value.strip() for name, _, _ in network_flags[platform]
                   if isinstance(value := form.get(name), str) and value.strip()}
        missing = [name for name, required, _ in network_flags[platform] if required and name not in options]
        if missing:
            raise ConsoleError(f"Fill in: {', '.join(missing)}.", 422)
        try:
            if platform == "mastodon" and "access_token" not in options:
                flow = await network_oauth.start(rt, b.id, "mastodon", server=options["instance"])
                # a link, not a redirect: the page's CSP keeps form posts (and their redirects) on this site
                return render("connect_oauth.html", **base(me, request, brand=b, flow=flow,
                                                           instance=urlsplit(flow["authorize_url"]).netloc))
            await networks.connect(rt, b.id, platform, options)
        except networks.ConnectError as exc:
            raise ConsoleError(str(exc), 422) from None
        return redirect(f"/brands/{b.id}/accounts", "connected")

    @page
    async def reconnect_network(request: Request, me: SignedIn) -> Response:
        """New credentials (or a new OAuth grant) for a real account, verified like a connect."""
        need_scope(me, "integrations:write")
        b = await brand_of(me, request.path_params["brand_id"])
        integration_id, form = request.path_params["integration_id"], request.state.form
        async with rt.db.session(write=False) as session:
            row = await session.get(Integration, integration_id)
        if row is None or row.brand_id != b.id or row.provider == "sandbox":
            raise ConsoleError("No such network account in this brand.", 404)
        options = {f.name: value.strip() for f in reconnect_fields(row.platform)
                   if isinstance(value := form.get(f.name), str) and value.strip()}
        try:
            if row.platform == "mastodon" and "access_token" not in options:
                flow = await network_oauth.start(rt, b.id, "mastodon", integration_id=row.id,
                                                 server=(row.provider_state or {}).get("instance"))
                return render("connect_oauth.html", **base(me, request, brand=b, flow=flow,
                                                           instance=urlsplit(flow["authorize_url"]).netloc))
            await networks.reconnect(rt, row.id, options)
        except (networks.ConnectError, KeyError) as exc:
            message = str(exc) if isinstance(exc, networks.ConnectError) else "Fill in every field."
            raise ConsoleError(message, 422) from None
        return redirect(f"/brands/{b.id}/accounts", "reconnected")

    @page
    async def set_status(request: Request, me: SignedIn) -> Response:
        async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
            await _own_integration(session, b, request.path_params["integration_id"], sandbox_only=True)
            await operator.set_integration_status(session, rt.clock.now(), request.path_params["integration_id"],
                                                  str(form.get("status") or ""))
        return await account_action(request, me, act, "status")

    @page
    async def disconnect(request: Request, me: SignedIn) -> Response:
        async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
            await _own_integration(session, b, request.path_params["integration_id"])
            await operator.disconnect_integration(session, rt.clock.now(), request.path_params["integration_id"],
                                                  b.workspace_id)
        return await account_action(request, me, act, "disconnected")

    @page
    async def faults(request: Request, me: SignedIn) -> Response:
        async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
            await _own_integration(session, b, request.path_params["integration_id"], sandbox_only=True)
            op, kind, times = form.get("operation"), form.get("kind"), str(form.get("times") or "").strip()
            clear = form.get("clear") == "1"
            chosen: dict[str, str] = {}
            if not clear:
                if op not in FAULT_OPERATIONS or kind not in FAULT_KINDS:
                    raise operator.OperatorError("pick an operation and a fault kind")
                if times and (not times.isdigit() or not 1 <= int(times) <= 100):
                    raise operator.OperatorError("times must be a whole number from 1 to 100")
                chosen = {op: f"{kind}:{times}" if times else kind}
            await set_sandbox_state(session, request.path_params["integration_id"], faults=chosen, facts={},
                                    clear=clear, workspace_id=b.workspace_id)
        return await account_action(request, me, act, "faults")

    @page
    async def check_account(request: Request, me: SignedIn) -> Response:
        """A read-only check of one account with its network (tools/networks/checks.py, as `integrations check`),
        shown on its own page: nothing changes, so it answers 200 rather than a redirect."""
        need_scope(me, "integrations:write")
        b = await brand_of(me, request.path_params["brand_id"])
        try:
            report = await account_checks.check_integration(rt, request.path_params["integration_id"],
                                                            workspace_id=b.workspace_id, brand_id=b.id)
        except account_checks.CheckError:
            raise ConsoleError("No such account in this brand.", 404) from None
        return render("account_check.html", **base(me, request, brand=b, tab="accounts", report=report))

    # -- API keys -------------------------------------------------------------------------------------------
    async def keys_context(me: SignedIn) -> dict[str, Any]:
        async with rt.db.session(write=False) as session:
            hidden = await identity.console_key_ids(session, me.caller.workspace_id)
            query = select(ApiKey).where(ApiKey.workspace_id == me.caller.workspace_id)
            if not me.is_admin:
                query = query.where(ApiKey.user_id == me.user.id)
            rows = (await session.exec(query.order_by(ApiKey.created_at.desc(), ApiKey.id).limit(200))).all()
            brands = (await session.exec(select(Brand).where(Brand.workspace_id == me.caller.workspace_id)
                                         .order_by(Brand.name).limit(500))).all()
        return {"keys": [k for k in rows if k.id not in hidden], "brands": brands, "groups": scope_groups(),
                "grantable": me.caller.scopes}

    @page
    async def keys(request: Request, me: SignedIn) -> Response:
        context = await keys_context(me)
        handed = web.take_secret(request, rt, me)
        created = next((k for k in context["keys"] if handed and k.id == handed[0]), None)
        response = render("keys.html", **base(me, request, created=created,
                                              secret=handed[1] if handed and created else None, **context))
        web.forget_secret(response, request, rt)  # shown once: a reload finds no secret
        return response

    @page
    async def create_key(request: Request, me: SignedIn) -> Response:
        form = request.state.form
        name = str(form.get("name") or "").strip()
        wanted = tuple(s.name for s in SCOPES if s.name in set(form.get("scopes") or []))
        if not 1 <= len(name) <= 200:
            raise ConsoleError("Give the key a name (1 to 200 characters).", 422)
        if not wanted:
            raise ConsoleError("Pick at least one scope.", 422)
        beyond = [s for s in wanted if s not in me.caller.scopes]
        if beyond:
            raise ConsoleError(f"You cannot grant scopes you do not hold: {', '.join(beyond)}.", 403)
        brand_ids = list(form.get("brand_ids") or []) if form.get("restrict") == "1" else None
        try:
            async with rt.db.session(write=True) as session:
                ws = await session.get(Workspace, me.caller.workspace_id)
                key, secret = await operator.create_key(session, rt.clock.now(), ws, name, wanted,
                                                        brand_ids=brand_ids, role=me.user.role, user_id=me.user.id)
        except operator.OperatorError as exc:
            raise ConsoleError(str(exc).replace("--brands", "A brand restriction"), 422) from None
        # POST/redirect/GET: a reload of the page that shows the secret neither creates another key nor shows it again
        response = redirect("/keys")
        web.hand_over_secret(response, request, rt, me, key.id, secret)
        return response

    @page
    async def revoke_key(request: Request, me: SignedIn) -> Response:
        key_id = request.path_params["key_id"]
        async with rt.db.session(write=True) as session:
            key = await session.get(ApiKey, key_id)
            hidden = await identity.console_key_ids(session, me.caller.workspace_id)
            if (key is None or key.workspace_id != me.caller.workspace_id or key.id in hidden
                    or (not me.is_admin and key.user_id != me.user.id)):
                raise ConsoleError("No such API key.", 404)
            await operator.revoke_key(session, rt.clock.now(), key_id)
        return redirect("/keys", "revoked")

    # -- calendar and Schedules -------------------------------------------------------------------------
    @page
    async def calendar_page(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        tz = ZoneInfo(b.timezone or "UTC")
        view = "month" if request.query_params.get("view") == "month" else "week"
        try:
            day = date.fromisoformat(request.query_params.get("day", ""))
        except ValueError:
            day = rt.clock.now().astimezone(tz).date()
        if view == "week":
            start = day - timedelta(days=day.weekday())
            days = [start + timedelta(days=i) for i in range(7)]
            prev_day, next_day = start - timedelta(days=7), start + timedelta(days=7)
        else:
            first = day.replace(day=1)
            start = first - timedelta(days=first.weekday())
            last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
            end = last + timedelta(days=6 - last.weekday())
            days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
            prev_day = (first - timedelta(days=1)).replace(day=1)
            next_day = last + timedelta(days=1)
        lo = datetime.combine(days[0], time(0), tz)
        hi = datetime.combine(days[-1] + timedelta(days=1), time(0), tz)
        items: list[dict[str, Any]] = []
        cursor = None
        for _ in range(10):  # at most 500 Schedules on one page
            args: dict[str, Any] = {"brand_id": b.id, "from": _z(lo), "to": _z(hi), "limit": 50}
            if cursor:
                args["cursor"] = cursor
            data = await api(dispatcher, me, "list_schedules", **args)
            items.extend(data["items"])
            cursor = data.get("next_cursor")
            if not data.get("has_more") or not cursor:
                break
        by_day: dict[date, list[dict[str, Any]]] = {d: [] for d in days}
        for s in items:
            local = datetime.fromisoformat(s["scheduled_at"].replace("Z", "+00:00")).astimezone(tz)
            s["local_time"] = local.strftime("%H:%M")
            by_day.setdefault(local.date(), []).append(s)
        weeks = [days[i:i + 7] for i in range(0, len(days), 7)]
        return render("calendar.html", **base(
            me, request, brand=b, tab="calendar", view=view, weeks=weeks, by_day=by_day, month=day.month,
            prev_day=prev_day, next_day=next_day, today=rt.clock.now().astimezone(tz).date(), tz=b.timezone or "UTC"))

    @page
    async def schedule(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        s = await api(dispatcher, me, "get_schedule", brand_id=b.id, schedule_id=request.path_params["schedule_id"])
        try:
            preflight = await api(dispatcher, me, "preflight_content", brand_id=b.id,
                                  content_item_id=s["content_item_id"], integration_ids=s["integration_ids"],
                                  scheduled_at=s["scheduled_at"], approval_status="approved")
            preflight_error = None
        except ConsoleError as exc:
            preflight, preflight_error = None, exc.message
        held = s["approval_status"] == "pending_review" and s["status"] == "action_required"
        return render("schedule.html", **base(
            me, request, brand=b, tab="calendar", s=s, preflight=preflight, preflight_error=preflight_error,
            held=held, can_approve=all(x in me.caller.scopes for x in ("schedule:write", "publish:execute")),
            idem=web.new_idempotency_key()))

    async def schedule_action(request: Request, me: SignedIn, endpoint: str, notice: str) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        sid = request.path_params["schedule_id"]
        idem = str(request.state.form.get("idempotency_key") or "") or web.new_idempotency_key()
        await api(dispatcher, me, endpoint, idempotency_key=idem[:255], brand_id=b.id, schedule_id=sid,
                  confirm_schedule_id=sid)
        return redirect(f"/brands/{b.id}/schedules/{sid}", notice)

    @page
    async def approve(request: Request, me: SignedIn) -> Response:
        return await schedule_action(request, me, "approve_schedule", "approved")

    @page
    async def reject(request: Request, me: SignedIn) -> Response:
        # The API has no separate reject route for a held Schedule: cancelling it is how it never publishes.
        return await schedule_action(request, me, "cancel_schedule", "rejected")

    # -- publications, History, notifications -------------------------------------------------------------
    @page
    async def history(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        hist = await api(dispatcher, me, "list_history", brand_id=b.id, limit=50)
        pubs = await api(dispatcher, me, "list_publications", brand_id=b.id, limit=50)
        return render("history.html", **base(me, request, brand=b, tab="history", history=hist["items"],
                                             publications=pubs))

    @page
    async def notifications(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        data = await api(dispatcher, me, "list_notifications", brand_id=b.id, limit=50)
        return render("notifications.html", **base(me, request, brand=b, tab="notifications", items=data["items"],
                                                   email=await email_panel(rt, me, b)))

    @page
    async def mark_read(request: Request, me: SignedIn) -> Response:
        b = await brand_of(me, request.path_params["brand_id"])
        async with rt.db.session(write=True) as session:
            await notify.mark_read(session, rt.clock.now(), me.user.id, brand_id=b.id)
        return redirect(f"/brands/{b.id}/notifications", "read")

    # -- MCP authorization consent (server/console/oauth.py) ---------------------------------------------
    async def consent_request(token: Any) -> tuple[Any, Any]:
        opened = oauth.open_request(rt, token) if isinstance(token, str) else None
        client = await oauth.Provider(rt).get_client(opened[0]) if opened else None
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

    @page
    async def consent(request: Request, me: SignedIn) -> Response:
        token = request.query_params.get("request")
        client, params = await consent_request(token)
        wanted = params.scopes or list(me.caller.scopes)
        async with rt.db.session(write=False) as session:
            brands = (await session.exec(select(Brand).where(Brand.workspace_id == me.caller.workspace_id)
                                         .order_by(Brand.name).limit(500))).all()
        return render("consent.html", headers=consent_headers(params), **base(
            me, request, client=client, params=params, request_token=token, groups=scope_groups(),
            wanted=set(wanted), grantable=me.caller.scopes, brands=brands,
            redirect_host=urlsplit(str(params.redirect_uri)).netloc or str(params.redirect_uri)))

    @page
    async def consent_answer(request: Request, me: SignedIn) -> Response:
        form = request.state.form
        client, params = await consent_request(form.get("request"))
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
            async with rt.db.session(write=True) as session:
                if brand_ids is not None:
                    found = set((await session.exec(select(Brand.id).where(
                        Brand.workspace_id == me.caller.workspace_id, Brand.id.in_(brand_ids)))).all())
                    if not brand_ids or found != set(brand_ids):
                        raise ConsoleError("Pick brands of your workspace.", 422)
                target = await oauth.grant_code(rt, session, client.client_id, params, me.user, chosen, brand_ids)
        return web.RedirectResponse(target, status_code=303, headers={**web.SECURITY_HEADERS,
                                                                      **consent_headers(params)})

    @page
    async def home(request: Request, me: SignedIn) -> Response:
        return redirect("/workspace")

    brand_path = "/brands/{brand_id:str}"
    return [
        Route("/", home, methods=["GET"]),
        Route("/sign-in", show_sign_in, methods=["GET"]),
        Route("/sign-in", do_sign_in, methods=["POST"]),
        Route("/sign-out", sign_out, methods=["POST"]),
        Route("/workspace", workspace, methods=["GET"]),
        Route("/oauth/consent", consent, methods=["GET"]),
        Route("/oauth/consent", consent_answer, methods=["POST"]),
        Route("/keys", keys, methods=["GET"]),
        Route("/keys", create_key, methods=["POST"]),
        Route("/keys/{key_id:str}/revoke", revoke_key, methods=["POST"]),
        Route(brand_path, brand, methods=["GET"]),
        Route(f"{brand_path}/accounts", accounts, methods=["GET"]),
        Route(f"{brand_path}/accounts/connect", connect, methods=["POST"]),
        Route(f"{brand_path}/accounts/connect/{{platform:str}}", connect_network, methods=["POST"]),
        Route(f"{brand_path}/accounts/{{integration_id:str}}/status", set_status, methods=["POST"]),
        Route(f"{brand_path}/accounts/{{integration_id:str}}/reconnect", reconnect_network, methods=["POST"]),
        Route(f"{brand_path}/accounts/{{integration_id:str}}/disconnect", disconnect, methods=["POST"]),
        Route(f"{brand_path}/accounts/{{integration_id:str}}/faults", faults, methods=["POST"]),
        Route(f"{brand_path}/accounts/{{integration_id:str}}/check", check_account, methods=["POST"]),
        Route(f"{brand_path}/calendar", calendar_page, methods=["GET"]),
        Route(f"{brand_path}/schedules/{{schedule_id:str}}", schedule, methods=["GET"]),
        Route(f"{brand_path}/schedules/{{schedule_id:str}}/approve", approve, methods=["POST"]),
        Route(f"{brand_path}/schedules/{{schedule_id:str}}/reject", reject, methods=["POST"]),
        Route(f"{brand_path}/history", history, methods=["GET"]),
        Route(f"{brand_path}/notifications", notifications, methods=["GET"]),
        Route(f"{brand_path}/notifications/read", mark_read, methods=["POST"]),
        *webhook_pages.routes(rt, page, base),  # server/console/webhooks.py
        Mount("/static", StaticFiles(directory=web.HERE / "static"), name="console-static"),
    ]


def _safe_next(value: Any) -> str | None:
    """Only a console path of this site (never `//host` or a scheme) is a place to return to after sign-in."""
    if isinstance(value, str) and value.startswith(f"{web.PREFIX}/") and "//" not in value and "\\" not in value \
            and len(value) <= 8000:
        return value
    return None


def _z(at: datetime) -> str:
    return at.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S.000Z")
