"""One Schedule: the post as it will appear (preview cards), preflight as if approved now while it has not run,
and the actions: approve, reject with a reason, edit (move to draft, then the composer), and for a run that
failed in part, per-target outcomes in the receipt's words with retry and permalinks. Every action is the API's
own endpoint run as the signed-in user, so authority is the API's (tools/schedules/authority.py)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

from sqlmodel import col, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from schemas.scopes import PUBLISH_SCOPE
from server.console import compose_form as cf
from server.console import web
from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console, z
from server.console.postview import post_view
from server.console.web import ConsoleError, redirect, render
from storage.tables.publishing import Publication, PublishTarget
from tools import catalogue
from tools.history import history_item
from tools.schedules.review import REASON_MAX, record_rejection

# Whether to offer a button: the endpoint's own scopes, from the catalogue (the endpoint still decides).
APPROVE_SCOPES = catalogue.get("approve_schedule").scopes
EDIT_SCOPES = catalogue.get("move_schedule_to_draft").scopes


def compose_url(brand_id: str, content_item_id: str) -> str:
    """The composer on a draft (server/console/pages/compose.py, issue 30 item 4)."""
    return f"{web.PREFIX}/brands/{brand_id}/compose?content_item_id={content_item_id}"


async def run_outcome(c: Console, me: SignedIn, brand_id: str, s: dict[str, Any]) -> dict[str, Any] | None:
    """The latest run in the receipt's words, each target with its account and the permalink of what published."""
    if s.get("latest_execution") is None:
        return None
    receipt = await c.api(me, "get_schedule_receipt", brand_id=brand_id, schedule_id=s["id"])
    run = receipt.get("receipt")
    if run is None:
        return None
    links: dict[str, str] = {}
    async with c.rt.db.session(write=False) as session:
        rows = (await session.exec(select(Publication, PublishTarget).join(
            PublishTarget, col(PublishTarget.id) == Publication.target_id).where(
            PublishTarget.execution_id == run["execution_id"], Publication.brand_id == brand_id).limit(50))).all()
    metrics: dict[str, dict[str, Any]] = {}
    for pub, target in rows:
        if url := history_item(pub, target)["permalink_url"]:  # History's rule for a safe public link
            links[pub.integration_id] = url
        if pub.status == "published" and "analytics:read" in me.caller.scopes:  # what the API would show
            read = await c.api(me, "get_publication_metrics", brand_id=brand_id, publication_id=pub.id)
            metrics[pub.integration_id] = {
                "status": read["collection"]["status"], "read_at": read["collection"]["read_at"],
                "values": [(k.replace("_", " "), v) for k, v in (read["latest"] or {}).items() if v is not None]}
    return {**run, "permalinks": links, "metrics": metrics, "next_actions": receipt.get("next_actions") or [],
            "retryable": [t["integration_id"] for t in run["targets"] if t.get("next_action") == "create_schedule"],
            "editable": any(t.get("next_action") == "repair_and_preflight" for t in run["targets"])}


async def schedule(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    s = await c.api(me, "get_schedule", brand_id=b.id, schedule_id=request.path_params["schedule_id"])
    view = await post_view(c, me, b, s)
    outcome = await run_outcome(c, me, b.id, s)
    soon = (c.rt.clock.now() + timedelta(minutes=15)).astimezone(ZoneInfo(b.timezone or "UTC"))
    return render("schedule.html", headers=c.media_headers(), **c.base(
        me, request, brand=b, tab="calendar", v=view, **view, outcome=outcome,
        can_approve=all(x in me.caller.scopes for x in APPROVE_SCOPES),
        can_edit=all(x in me.caller.scopes for x in EDIT_SCOPES), reason_max=REASON_MAX,
        retry_at=soon.strftime("%Y-%m-%dT%H:%M"), compose_url=compose_url(b.id, s["content_item_id"]),
        idem=web.new_idempotency_key()))


def _idem(request: Request) -> str:
    return (str(request.state.form.get("idempotency_key") or "") or web.new_idempotency_key())[:255]


async def schedule_action(c: Console, request: Request, me: SignedIn, endpoint: str, notice: str) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    sid = request.path_params["schedule_id"]
    await c.api(me, endpoint, idempotency_key=_idem(request), brand_id=b.id, schedule_id=sid, confirm_schedule_id=sid)
    back = request.state.form.get("back")
    if back == "review":
        return redirect("/review", notice)
    return redirect(f"/brands/{b.id}/schedules/{sid}", notice)


async def approve(c: Console, request: Request, me: SignedIn) -> Response:
    return await schedule_action(c, request, me, "approve_schedule", "approved")


async def reject(c: Console, request: Request, me: SignedIn) -> Response:
    """Cancel (the API's way a held Schedule never publishes), then record the reason and tell the author."""
    reason = " ".join(str(request.state.form.get("reason") or "").split())
    if not 1 <= len(reason) <= REASON_MAX:
        raise ConsoleError(f"Say why you reject it (1 to {REASON_MAX} characters): its author is told.", 422)
    response = await schedule_action(c, request, me, "cancel_schedule", "rejected")
    b = await c.brand_of(me, request.path_params["brand_id"])
    async with c.rt.db.session(write=True) as session:
        await record_rejection(session, c.rt.clock.now(), b, request.path_params["schedule_id"], reason,
                               me.user.name or me.login.email)
    return response


async def edit(c: Console, request: Request, me: SignedIn) -> Response:
    """A held (or approved, unsent) post's draft cannot be edited under its Schedule (the content usage rule):
    move it to drafts (move_schedule_to_draft), then open the composer on it with the old time filled in;
    scheduling again is the composer's. The one way to edit such a post, from the review queue, the schedule
    page and the composer alike."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    sid = request.path_params["schedule_id"]
    s = await c.api(me, "get_schedule", brand_id=b.id, schedule_id=sid)
    moved = await c.api(me, "move_schedule_to_draft", idempotency_key=_idem(request), brand_id=b.id,
                        schedule_id=sid, confirm_schedule_id=sid)
    at = cf.local_input(datetime.fromisoformat(s["scheduled_at"].replace("Z", "+00:00")), ZoneInfo(b.timezone or "UTC"))
    return web.RedirectResponse(f"{compose_url(b.id, moved['content_item_id'])}&{urlencode({'at': at, 'notice': 'moved'})}",
                                status_code=303, headers=web.SECURITY_HEADERS)


async def retry(c: Console, request: Request, me: SignedIn) -> Response:
    """A new Schedule of the same draft for the targets whose receipt says to schedule again (create_schedule);
    approved when the user holds the publish authority, else held for review, as the API decides."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    s = await c.api(me, "get_schedule", brand_id=b.id, schedule_id=request.path_params["schedule_id"])
    outcome = await run_outcome(c, me, b.id, s)
    if outcome is None or not outcome["retryable"]:
        raise ConsoleError("No target of this Schedule's run can be retried as it is.", 409)
    try:
        local = datetime.strptime(str(request.state.form.get("scheduled_at") or ""), "%Y-%m-%dT%H:%M")
    except ValueError:
        raise ConsoleError("Give the new time as a date and time.", 422) from None
    when = local.replace(tzinfo=ZoneInfo(b.timezone or "UTC"))
    data = await c.api(me, "create_schedule", idempotency_key=_idem(request), brand_id=b.id,
                       content_item_id=s["content_item_id"], integration_ids=sorted(outcome["retryable"]),
                       scheduled_at=z(when),
                       approval_status="approved" if PUBLISH_SCOPE in me.caller.scopes else "pending_review")
    return redirect(f"/brands/{b.id}/schedules/{data['schedule']['id']}", "retried")


def routes(c: Console) -> list[BaseRoute]:
    one = f"{BRAND}/schedules/{{schedule_id:str}}"
    return [
        Route(one, c.page(schedule), methods=["GET"]),
        Route(f"{one}/approve", c.page(approve), methods=["POST"]),
        Route(f"{one}/reject", c.page(reject), methods=["POST"]),
        Route(f"{one}/edit", c.page(edit), methods=["POST"]),
        Route(f"{one}/retry", c.page(retry), methods=["POST"]),
    ]
