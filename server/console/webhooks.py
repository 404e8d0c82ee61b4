"""The console's webhooks pages (workspace admins only): endpoints with their state, a create form (the secret is
shown once, on the answer to the POST, never stored in the clear nor shown again), and per endpoint its delivery
log with response codes and a Resend button, plus Test, Rotate secret, Enable and Delete."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from server.console.identity import SignedIn
from server.console.web import ConsoleError, redirect, render
from tools.events import webhook_delivery, webhooks
from tools.runtime import Runtime
from tools.services.event_log import EVENT_TYPES

NOTICES = {
    "wh-deleted": "Webhook endpoint deleted.",
    "wh-enabled": "Webhook endpoint enabled.",
    "wh-resent": "Message queued for delivery again (same webhook-id).",
}
NO_STORE = {"Cache-Control": "no-store"}

Page = Callable[[Callable[[Request, SignedIn], Awaitable[Response]]], Callable[[Request], Awaitable[Response]]]


def routes(rt: Runtime, page: Page, base: Callable[..., dict[str, Any]]) -> list[Route]:
    """`page` and `base` are the console's own wrappers (sign-in, CSRF on POST, error page) and page context."""

    def admin(me: SignedIn) -> str:
        if not me.is_admin:
            raise ConsoleError("Only workspace admins manage webhooks.", 403)
        return me.caller.workspace_id

    def context(me: SignedIn, request: Request, **extra: Any) -> dict[str, Any]:
        out = base(me, request, **extra)
        out["notice"] = out.get("notice") or NOTICES.get(request.query_params.get("notice", ""))
        return out

    async def listing(me: SignedIn, request: Request, status: int = 200, **extra: Any) -> Response:
        workspace_id = admin(me)
        async with rt.db.session(write=False) as session:
            endpoints = [webhooks.public(e) for e in await webhooks.list_endpoints(session, workspace_id)]
        return render("webhooks.html", status, NO_STORE, **context(me, request, endpoints=endpoints,
                                                                   event_types=EVENT_TYPES, **extra))

    @page
    async def index(request: Request, me: SignedIn) -> Response:
        return await listing(me, request)

    @page
    async def create(request: Request, me: SignedIn) -> Response:
        workspace_id = admin(me)
        form = request.state.form
        types = form.get("event_types") or []
        types = [types] if isinstance(types, str) else list(types)
        try:
            async with rt.db.session(write=True) as session:
                endpoint, secret = await webhooks.create(session, rt.clock.now(), rt.settings, workspace_id,
                                                         str(form.get("url") or ""), types, None,
                                                         str(form.get("description") or ""))
        except webhooks.WebhookError as exc:
            raise ConsoleError(str(exc), 422) from None
        return await listing(me, request, created=webhooks.public(endpoint), secret=secret)

    async def endpoint_of(me: SignedIn, request: Request) -> Any:
        workspace_id = admin(me)
        async with rt.db.session(write=False) as session:
            try:
                return await webhooks.get(session, request.path_params["endpoint_id"], workspace_id)
            except webhooks.WebhookError as exc:
                raise ConsoleError(str(exc), 404) from None

    @page
    async def detail(request: Request, me: SignedIn, **extra: Any) -> Response:
        endpoint = await endpoint_of(me, request)
        async with rt.db.session(write=False) as session:
            log = await webhooks.delivery_log(session, endpoint.id)
        return render("webhook.html", 200, NO_STORE, **context(me, request, endpoint=webhooks.public(endpoint),
                                                               log=log, **extra))

    async def act(request: Request, me: SignedIn, action: str) -> Response:
        endpoint = await endpoint_of(me, request)
        now = rt.clock.now()
        try:
            if action == "delete":
                async with rt.db.session(write=True) as session:
                    await webhooks.delete(session, endpoint.id, endpoint.workspace_id)
                return redirect("/webhooks", "wh-deleted")
            if action == "enable":
                async with rt.db.session(write=True) as session:
                    await webhooks.enable(session, now, endpoint.id, endpoint.workspace_id)
                return redirect(f"/webhooks/{endpoint.id}", "wh-enabled")
            if action == "resend":
                async with rt.db.session(write=True) as session:
                    await webhooks.resend(session, now, str(request.state.form.get("message_id") or ""),
                                          endpoint.workspace_id)
                rt.wake_worker()
                return redirect(f"/webhooks/{endpoint.id}", "wh-resent")
            if action == "rotate":
                async with rt.db.session(write=True) as session:
                    rotated, secret = await webhooks.rotate_secret(session, now, rt.settings, endpoint.id,
                                                                   endpoint.workspace_id)
                async with rt.db.session(write=False) as session:
                    log = await webhooks.delivery_log(session, endpoint.id)
                return render("webhook.html", 200, NO_STORE, **context(
                    me, request, endpoint=webhooks.public(rotated), log=log, secret=secret))
            result = await webhook_delivery.send_test(rt, endpoint.id, endpoint.workspace_id)
        except webhooks.WebhookError as exc:
            raise ConsoleError(str(exc), 409) from None
        async with rt.db.session(write=False) as session:
            log = await webhooks.delivery_log(session, endpoint.id)
        return render("webhook.html", 200, NO_STORE, **context(me, request, endpoint=webhooks.public(endpoint),
                                                               log=log, tested=result))

    def action(name: str) -> Callable[[Request], Awaitable[Response]]:
        @page
        async def handler(request: Request, me: SignedIn) -> Response:
            return await act(request, me, name)
        return handler

    one = "/webhooks/{endpoint_id:str}"
    return [
        Route("/webhooks", index, methods=["GET"]),
        Route("/webhooks", create, methods=["POST"]),
        Route(one, detail, methods=["GET"]),
        *[Route(f"{one}/{name}", action(name), methods=["POST"])
          for name in ("delete", "enable", "resend", "rotate", "test")],
    ]
