"""One Schedule: its state, preflight as if approved now, and approve / reject for a held one. Approve and
reject are the API's own endpoints, run as the signed-in user."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console import web
from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console
from server.console.web import ConsoleError, redirect, render


async def schedule(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    s = await c.api(me, "get_schedule", brand_id=b.id, schedule_id=request.path_params["schedule_id"])
    try:
        preflight = await c.api(me, "preflight_content", brand_id=b.id, content_item_id=s["content_item_id"],
                                integration_ids=s["integration_ids"], scheduled_at=s["scheduled_at"],
                                approval_status="approved")
        preflight_error = None
    except ConsoleError as exc:
        preflight, preflight_error = None, exc.message
    held = s["approval_status"] == "pending_review" and s["status"] == "action_required"
    return render("schedule.html", **c.base(
        me, request, brand=b, tab="calendar", s=s, preflight=preflight, preflight_error=preflight_error,
        held=held, can_approve=all(x in me.caller.scopes for x in ("schedule:write", "publish:execute")),
        idem=web.new_idempotency_key()))


async def schedule_action(c: Console, request: Request, me: SignedIn, endpoint: str, notice: str) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    sid = request.path_params["schedule_id"]
    idem = str(request.state.form.get("idempotency_key") or "") or web.new_idempotency_key()
    await c.api(me, endpoint, idempotency_key=idem[:255], brand_id=b.id, schedule_id=sid, confirm_schedule_id=sid)
    return redirect(f"/brands/{b.id}/schedules/{sid}", notice)


async def approve(c: Console, request: Request, me: SignedIn) -> Response:
    return await schedule_action(c, request, me, "approve_schedule", "approved")


async def reject(c: Console, request: Request, me: SignedIn) -> Response:
    # The API has no separate reject route for a held Schedule: cancelling it is how it never publishes.
    return await schedule_action(c, request, me, "cancel_schedule", "rejected")


def routes(c: Console) -> list[BaseRoute]:
    one = f"{BRAND}/schedules/{{schedule_id:str}}"
    return [
        Route(one, c.page(schedule), methods=["GET"]),
        Route(f"{one}/approve", c.page(approve), methods=["POST"]),
        Route(f"{one}/reject", c.page(reject), methods=["POST"]),
    ]
