"""A brand's connected accounts: connect (sandbox or a real network), reconnect, status, disconnect, sandbox
faults, and the read-only check. Actions call what the CLI calls (tools.operator, tools/networks,
server/commands/sandbox.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from sqlmodel import select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from providers.sandbox import FAULT_KINDS, FAULT_OPERATIONS
from server.commands.networks import FLAGS as network_flags
from server.commands.sandbox import set_sandbox_state
from server.console.connectors import connect_forms, reconnect_fields
from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console, need_scope
from server.console.web import ConsoleError, redirect, render
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from tools.networks import checks as account_checks
from tools.networks import connect as networks
from tools.networks import oauth as network_oauth
from tools.operator import actions as operator

Act = Callable[[Any, Brand, dict[str, Any]], Awaitable[Any]]


async def accounts(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    data = await c.api(me, "list_targets", brand_id=b.id)
    async with c.rt.db.session(write=False) as session:
        rows = (await session.exec(select(Integration.id, Integration.provider, Integration.platform)
                                   .where(Integration.brand_id == b.id).limit(1000))).all()
    # sandbox accounts get status and faults; real ones a reconnect form with their network's fields
    real = {i: reconnect_fields(platform) for i, provider, platform in rows if provider != "sandbox"}
    return render("accounts.html", **c.base(
        me, request, brand=b, tab="accounts", targets=[t for t in data["targets"] if t.get("integration_id")],
        forms=connect_forms(b), can_manage="integrations:write" in me.caller.scopes, real=real,
        fault_operations=FAULT_OPERATIONS, fault_kinds=FAULT_KINDS))


async def account_action(c: Console, request: Request, me: SignedIn, act: Act, notice: str) -> Response:
    need_scope(me, "integrations:write")
    b = await c.brand_of(me, request.path_params["brand_id"])
    try:
        async with c.rt.db.session(write=True) as session:
            await act(session, b, request.state.form)
    except operator.OperatorError as exc:
        raise ConsoleError(str(exc), 422) from None
    return redirect(f"/brands/{b.id}/accounts", notice)


async def own_integration(session: Any, b: Brand, integration_id: str, *, sandbox_only: bool = False) -> None:
    row = await session.get(Integration, integration_id)
    if row is None or row.brand_id != b.id:
        raise ConsoleError("No such account in this brand.", 404)
    if sandbox_only and row.provider != "sandbox":  # a real account comes back only with verified credentials
        raise ConsoleError("Only sandbox accounts take a status or faults from here; reconnect this one.", 422)


async def connect(c: Console, request: Request, me: SignedIn) -> Response:
    async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
        await operator.connect_integration(session, c.rt.clock.now(), b, str(form.get("platform") or ""))
    return await account_action(c, request, me, act, "connected")


async def connect_network(c: Console, request: Request, me: SignedIn) -> Response:
    """A real network account: verified with the network, then stored (tools/networks, as the CLI)."""
    need_scope(me, "integrations:write")
    b = await c.brand_of(me, request.path_params["brand_id"])
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
            flow = await network_oauth.start(c.rt, b.id, "mastodon", server=options["instance"])
            # a link, not a redirect: the page's CSP keeps form posts (and their redirects) on this site
            return render("connect_oauth.html", **c.base(me, request, brand=b, flow=flow,
                                                         instance=urlsplit(flow["authorize_url"]).netloc))
        await networks.connect(c.rt, b.id, platform, options)
    except networks.ConnectError as exc:
        raise ConsoleError(str(exc), 422) from None
    return redirect(f"/brands/{b.id}/accounts", "connected")


async def reconnect_network(c: Console, request: Request, me: SignedIn) -> Response:
    """New credentials (or a new OAuth grant) for a real account, verified like a connect."""
    need_scope(me, "integrations:write")
    b = await c.brand_of(me, request.path_params["brand_id"])
    integration_id, form = request.path_params["integration_id"], request.state.form
    async with c.rt.db.session(write=False) as session:
        row = await session.get(Integration, integration_id)
    if row is None or row.brand_id != b.id or row.provider == "sandbox":
        raise ConsoleError("No such network account in this brand.", 404)
    options = {f.name: value.strip() for f in reconnect_fields(row.platform)
               if isinstance(value := form.get(f.name), str) and value.strip()}
    try:
        if row.platform == "mastodon" and "access_token" not in options:
            flow = await network_oauth.start(c.rt, b.id, "mastodon", integration_id=row.id,
                                             server=(row.provider_state or {}).get("instance"))
            return render("connect_oauth.html", **c.base(me, request, brand=b, flow=flow,
                                                         instance=urlsplit(flow["authorize_url"]).netloc))
        await networks.reconnect(c.rt, row.id, options)
    except (networks.ConnectError, KeyError) as exc:
        message = str(exc) if isinstance(exc, networks.ConnectError) else "Fill in every field."
        raise ConsoleError(message, 422) from None
    return redirect(f"/brands/{b.id}/accounts", "reconnected")


async def set_status(c: Console, request: Request, me: SignedIn) -> Response:
    async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
        await own_integration(session, b, request.path_params["integration_id"], sandbox_only=True)
        await operator.set_integration_status(session, c.rt.clock.now(), request.path_params["integration_id"],
                                              str(form.get("status") or ""))
    return await account_action(c, request, me, act, "status")


async def disconnect(c: Console, request: Request, me: SignedIn) -> Response:
    async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
        await own_integration(session, b, request.path_params["integration_id"])
        await operator.disconnect_integration(session, c.rt.clock.now(), request.path_params["integration_id"],
                                              b.workspace_id)
    return await account_action(c, request, me, act, "disconnected")


async def faults(c: Console, request: Request, me: SignedIn) -> Response:
    async def act(session: Any, b: Brand, form: dict[str, Any]) -> None:
        await own_integration(session, b, request.path_params["integration_id"], sandbox_only=True)
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
    return await account_action(c, request, me, act, "faults")


async def check_account(c: Console, request: Request, me: SignedIn) -> Response:
    """A read-only check of one account with its network (tools/networks/checks.py, as `integrations check`),
    shown on its own page: nothing changes, so it answers 200 rather than a redirect."""
    need_scope(me, "integrations:write")
    b = await c.brand_of(me, request.path_params["brand_id"])
    try:
        report = await account_checks.check_integration(c.rt, request.path_params["integration_id"],
                                                        workspace_id=b.workspace_id, brand_id=b.id)
    except account_checks.CheckError:
        raise ConsoleError("No such account in this brand.", 404) from None
    return render("account_check.html", **c.base(me, request, brand=b, tab="accounts", report=report))


def routes(c: Console) -> list[BaseRoute]:
    one = f"{BRAND}/accounts/{{integration_id:str}}"
    return [
        Route(f"{BRAND}/accounts", c.page(accounts), methods=["GET"]),
        Route(f"{BRAND}/accounts/connect", c.page(connect), methods=["POST"]),
        Route(f"{BRAND}/accounts/connect/{{platform:str}}", c.page(connect_network), methods=["POST"]),
        Route(f"{one}/status", c.page(set_status), methods=["POST"]),
        Route(f"{one}/reconnect", c.page(reconnect_network), methods=["POST"]),
        Route(f"{one}/disconnect", c.page(disconnect), methods=["POST"]),
        Route(f"{one}/faults", c.page(faults), methods=["POST"]),
        Route(f"{one}/check", c.page(check_account), methods=["POST"]),
    ]
