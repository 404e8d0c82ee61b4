"""The composer: write a post for a brand's accounts, check it, and save it as a draft, schedule it (held for
review or approved) or add it to a queue; and open a draft again to edit it.

Every write is a catalogue endpoint through the dispatcher (`create_content_item`, `update_content_item`,
`create_schedule`, `update_queue`, `move_schedule_to_draft`, `create_media_upload_session`), so the API's
rules and authority apply as they do to REST and MCP. The live check as the user types runs the preflight
engine on the unsaved composition (`tools.schedules.preflight.preflight_unsaved`): it writes nothing.

The plain path works without JavaScript: the form posts, the server saves and redirects back with the
preflight shown. static/compose.js adds the live check, previews, per-platform show/hide, live TikTok and
Pinterest options, and browser uploads with progress through upload sessions.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit
from zoneinfo import ZoneInfo

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from schemas.errors import ApiError
from schemas.platforms import BY_KEY, PLATFORMS
from schemas.scopes import PUBLISH_SCOPE
from server.console import compose_form as cf
from server.console import web
from server.console.compose_preview import preview_cards
from server.console.identity import SignedIn
from server.console.pages.shared import BRAND, Console, z
from server.console.web import ConsoleError, redirect, render
from server.dispatch import validation_error
from tools import catalogue
from tools.schedules.preflight import preflight_unsaved

COMPOSE = f"{BRAND}/compose"
COMPOSE_FORM = 512 * 1024  # bytes: a post's copy for every platform fits; the API bounds each field
COMPOSE_FIELDS = 600
LIBRARY = 24  # media shown in the picker (list_media's largest page)
LIVE = ("action_required", "scheduled")  # Schedule states whose content cannot be edited in place
ACTIONS = {"save", "check", "review", "approve", "queue"}
SEARCH_PAGES = 4  # Schedules read to find the one an edited draft is under (200)


def _json(data: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(data, status_code=status, headers=web.SECURITY_HEADERS)


def csp(c: Console) -> dict[str, str]:
    """The composer's page policy: fetches to this site and to where upload sessions PUT (this service's public
    address, or the object store's when uploads go straight to it); images from the media address."""
    def origin(url: str | None) -> str | None:
        parts = urlsplit(url or "")
        return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None

    s = c.rt.settings
    uploads = " ".join(sorted({o for o in (origin(s.public_url), origin(s.s3_endpoint_url)) if o}))
    images = origin(s.resolved_media_url) or ""
    policy = web.SECURITY_HEADERS["Content-Security-Policy"]
    policy = policy.replace("img-src 'self'", f"img-src 'self' {images}".rstrip())
    return {"Content-Security-Policy": f"{policy}; connect-src 'self' {uploads}".rstrip()}


async def _targets(c: Console, me: SignedIn, brand_id: str) -> list[dict[str, Any]]:
    data = await c.api(me, "list_targets", brand_id=brand_id)
    order = {p.key: i for i, p in enumerate(PLATFORMS)}
    found = [t for t in data["targets"] if t.get("integration_id")]
    return sorted(found, key=lambda t: (order.get(t["platform"], 99), t.get("display_name") or ""))[:200]


async def _media(c: Console, me: SignedIn, brand_id: str, chosen: list[str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if "media:read" in me.caller.scopes:
        items = list((await c.api(me, "list_media", brand_id=brand_id, limit=LIBRARY))["items"])
        known = {m["id"] for m in items}
        for media_id in chosen[:cf.MAX_MEDIA]:  # chosen media older than the newest page
            if media_id not in known:
                with contextlib.suppress(ConsoleError):  # gone since: the API will say so on save
                    items.insert(0, await c.api(me, "get_media", brand_id=brand_id, media_id=media_id))
    order = {m: i for i, m in enumerate(chosen)}
    return sorted(items, key=lambda m: order.get(m["id"], len(order)))  # chosen first, in posting order


async def _options(c: Console, me: SignedIn, brand_id: str, target: dict[str, Any]) -> dict[str, Any]:
    """Live choices of a TikTok or Pinterest account (`get_target_dynamic_options`), or why there are none."""
    try:
        data = await c.api(me, "get_target_dynamic_options", brand_id=brand_id,
                           integration_id=target["integration_id"])
    except ConsoleError as exc:
        return {"options": [], "error": exc.message}
    options = [{"value": str(o.get("value"))[:200], "label": str(o.get("label") or o.get("value"))[:200]}
               for o in data.get("options") or [] if isinstance(o, dict)][:200]
    return {"options": options, "error": None, "kind": data.get("kind")}


async def _live_schedule(c: Console, me: SignedIn, brand_id: str, item_id: str,
                         schedule_id: str | None) -> dict[str, Any] | None:
    """The held or approved Schedule of this content: the one the page was opened from (`schedule_id`), else
    the first found in the next 93 days (`list_schedules`, at most SEARCH_PAGES pages), so an edit the API
    refuses can offer the way out."""
    if schedule_id:
        try:
            s = await c.api(me, "get_schedule", brand_id=brand_id, schedule_id=schedule_id[:64])
        except ConsoleError:
            s = None
        if s and s["content_item_id"] == item_id and s["status"] in LIVE:
            return s
    if "schedule:read" not in me.caller.scopes:
        return None
    now = c.rt.clock.now()
    args: dict[str, Any] = {"brand_id": brand_id, "from": z(now - timedelta(days=1)),
                            "to": z(now + timedelta(days=92)), "limit": 50}
    for _ in range(SEARCH_PAGES):
        data = await c.api(me, "list_schedules", **args)
        found = next((s for s in data["items"] if s["content_item_id"] == item_id and s["status"] in LIVE), None)
        if found or not data.get("has_more") or not data.get("next_cursor"):
            return found
        args["cursor"] = data["next_cursor"]
    return None


def _approval(me: SignedIn) -> str:
    return "approved" if PUBLISH_SCOPE in me.caller.scopes else "pending_review"


async def render_compose(c: Console, request: Request, me: SignedIn, *, values: cf.Values | None = None,
                         item: dict[str, Any] | None = None, at: str | None = None, error: str | None = None,
                         issues: list[dict[str, Any]] | None = None, status: int = 200,
                         idem: str | None = None, schedule_id: str | None = None) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    tz = ZoneInfo(b.timezone or "UTC")
    item_id = (item or {}).get("id") or None
    if values is None:
        values = cf.values_of_body(item) if item else cf.Values()
    targets = await _targets(c, me, b.id)
    by_id = {t["integration_id"]: t for t in targets}
    chosen = [i for i in values.integration_ids if i in by_id]
    platforms = [p for p in PLATFORMS if p.key in {t["platform"] for t in targets}]
    dynamic: dict[str, dict[str, Any]] = {}  # platform -> live options of its chosen accounts
    for i in chosen:
        t = by_id[i]
        if BY_KEY[t["platform"]].dynamic_options and t["connection_status"] == "connected":
            found = await _options(c, me, b.id, t)
            into = dynamic.setdefault(t["platform"], {"options": [], "error": None})
            into["options"] += [o for o in found["options"] if o not in into["options"]]
            into["error"] = into["error"] or found["error"]
    when = at or cf.default_time(c.rt.clock.now(), tz)
    preflight = previews = None
    if item_id and chosen and "schedule:write" in me.caller.scopes and error is None:
        try:
            preflight = await c.api(me, "preflight_content", brand_id=b.id, content_item_id=item_id,
                                    integration_ids=sorted(chosen), approval_status=_approval(me),
                                    scheduled_at=cf.utc_of_local(when, tz))
        except ConsoleError as exc:
            error, issues = exc.message, exc.issues
    media = await _media(c, me, b.id, values.media_ids)
    if item:
        previews = await preview_cards(c.rt, b.id, item, [by_id[i] for i in chosen], values.media_ids,
                                       (preflight or {}).get("issues") or [])
    schedule_id = schedule_id or request.query_params.get("schedule_id")
    queues: list[dict[str, Any]] = []
    if "schedule:read" in me.caller.scopes:
        queues = list(await c.api(me, "list_queues", brand_id=b.id))[:100]
    live = await _live_schedule(c, me, b.id, item_id, schedule_id) if item_id else None
    return render("compose.html", status, csp(c), **c.base(
        me, request, brand=b, tab="compose", item=item, item_id=item_id, values=values, targets=targets,
        platforms=platforms, fields={p.key: cf.settings_fields(p.key) for p in platforms}, cf=cf,
        dynamic=dynamic, media=media, schedule_id=(schedule_id or "")[:64], queues=queues, when=when,
        tz=b.timezone or "UTC", preflight=preflight,
        previews=previews, error=error, issues=issues or [], live=live, idem=idem or web.new_idempotency_key(),
        can_publish=PUBLISH_SCOPE in me.caller.scopes, can_schedule="schedule:write" in me.caller.scopes))


async def compose_page(c: Console, request: Request, me: SignedIn) -> Response:
    item = None
    item_id = request.query_params.get("content_item_id")
    if item_id:
        b = await c.brand_of(me, request.path_params["brand_id"])
        item = (await c.api(me, "get_content_item", brand_id=b.id, content_item_id=item_id[:64]))["content_item"]
    at = request.query_params.get("at")
    return await render_compose(c, request, me, item=item, at=at[:32] if at else None)


async def _save(c: Console, me: SignedIn, brand_id: str, form: dict[str, Any], body: dict[str, Any],
                idem: str) -> dict[str, Any]:
    item_id = cf.text(form, "content_item_id", 64).strip()
    if item_id:
        await c.api(me, "update_content_item", brand_id=brand_id, content_item_id=item_id, **body)
        return (await c.api(me, "get_content_item", brand_id=brand_id, content_item_id=item_id))["content_item"]
    return (await c.api(me, "create_content_item", idempotency_key=f"{idem}-item", brand_id=brand_id,
                        **body))["content_item"]


async def compose_submit(c: Console, request: Request, me: SignedIn) -> Response:
    b = await c.brand_of(me, request.path_params["brand_id"])
    tz = ZoneInfo(b.timezone or "UTC")
    form = request.state.form
    action = cf.text(form, "action", 20)
    if action not in ACTIONS:
        raise ConsoleError("Pick what to do: save, check, schedule or add to a queue.", 422)
    idem = (cf.text(form, "idempotency_key", 200).strip() or web.new_idempotency_key())[:200]
    at = cf.text(form, "scheduled_at", 32).strip()
    platforms_of = {t["integration_id"]: t["platform"] for t in await _targets(c, me, b.id)}
    body = cf.body_of(form, platforms_of)
    item: dict[str, Any] | None = None
    try:
        item = await _save(c, me, b.id, form, body, idem)
        if action in ("save", "check"):
            where = {"content_item_id": item["id"], "at": at, "notice": "saved"}
            return redirect(f"/brands/{b.id}/compose?{urlencode(where)}")
        if action == "queue":
            queue_id = cf.text(form, "queue_id", 64).strip()
            queue = await c.api(me, "get_queue", brand_id=b.id, queue_id=queue_id)
            ids = [i for i in queue["content_item_ids"] if i != item["id"]] + [item["id"]]
            await c.api(me, "update_queue", brand_id=b.id, queue_id=queue_id, content_item_ids=ids)
            return redirect(f"/brands/{b.id}/calendar", "queued")
        when = cf.utc_of_local(at, tz)
        if when is None:
            raise ConsoleError("Give the date and time to publish at.", 422)
        created = await c.api(me, "create_schedule", idempotency_key=f"{idem}-schedule", brand_id=b.id,
                              content_item_id=item["id"], scheduled_at=when,
                              integration_ids=body["intended_integration_ids"],
                              approval_status="approved" if action == "approve" else "pending_review")
        sid = created["schedule"]["id"]
        return redirect(f"/brands/{b.id}/schedules/{sid}", "scheduled" if action == "approve" else "held")
    except ConsoleError as exc:
        # the form as sent, with the API's refusal and its field issues; a saved draft keeps its ID
        shown = {**body, "id": item["id"] if item else cf.text(form, "content_item_id", 64).strip()}
        return await render_compose(c, request, me, values=cf.values_of_body(body), item=shown, at=at,
                                    error=exc.message, issues=exc.issues, status=exc.status, idem=idem,
                                    schedule_id=cf.text(form, "schedule_id", 64).strip() or None)


async def live_check(c: Console, request: Request, me: SignedIn) -> Response:
    """POST (form, CSRF): the unsaved composition's preflight and previews as an HTML fragment. Writes nothing."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    tz = ZoneInfo(b.timezone or "UTC")
    form = request.state.form
    targets = await _targets(c, me, b.id)
    by_id = {t["integration_id"]: t for t in targets}
    body = cf.body_of(form, {i: t["platform"] for i, t in by_id.items()})
    chosen = body["intended_integration_ids"]
    if not body["name"].strip():
        body["name"] = "Untitled"  # the name is not a publishing rule: check the rest while it is still empty
    item_id = cf.text(form, "content_item_id", 64).strip() or None
    preflight, error, issues = None, None, []
    if "schedule:write" not in me.caller.scopes:
        error = f"Your role ({me.user.role}) lacks schedule:write, which checking a post needs."
    elif not chosen:
        error = "Choose at least one account to check the post against."
    else:
        ep = catalogue.get("create_content_item")
        args = {**body, "brand_id": b.id}
        try:
            try:
                req = ep.request.model_validate(args)
            except ValidationError as exc:
                raise validation_error(ep, exc, args) from None
            async with c.rt.db.session(write=False) as session:
                found = await preflight_unsaved(
                    session, caller=me.caller, brand=b, draft_request=req, integration_ids=chosen,
                    scheduled_at=cf.utc_of_local(cf.text(form, "scheduled_at", 32), tz),
                    approval_status=_approval(me), now=c.rt.clock.now(), upgrade_url=c.rt.settings.upgrade_url,
                    content_item_id=item_id)
            preflight = found.payload.model_dump(mode="json", by_alias=True)
        except ApiError as exc:
            error, issues = exc.message or exc.code, list(exc.issues)[:50]
    item = {**body, "id": item_id or "new"}
    previews = await preview_cards(c.rt, b.id, item, [by_id[i] for i in chosen], cf.many(form, "media_ids", cf.MAX_MEDIA),
                                   (preflight or {}).get("issues") or []) if error is None else []
    html = web.templates.get_template("compose_check.html").render(
        prefix=web.PREFIX, preflight=preflight, check_error=error, check_issues=issues, cf=cf, previews=previews)
    return _json({"html": html, "can_schedule": bool(preflight and preflight["can_schedule"])})


async def upload_session(c: Console, request: Request, me: SignedIn) -> Response:
    """POST (form, CSRF): an upload session for a file the browser then PUTs (`create_media_upload_session`)."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    form = request.state.form
    size = cf.text(form, "size", 20)
    try:
        data = await c.api(me, "create_media_upload_session", idempotency_key=cf.text(form, "idempotency_key", 200),
                           brand_id=b.id, filename=cf.text(form, "filename", 500),
                           content_type=cf.text(form, "content_type", 200), size=int(size) if size.isdigit() else 0,
                           sha256=cf.text(form, "sha256", 64))
    except ConsoleError as exc:
        return _json({"error": exc.message}, exc.status)
    return _json({"id": data["id"], "url": data["upload"]["url"], "headers": data["upload"]["headers"]})


async def media_state(c: Console, request: Request, me: SignedIn) -> Response:
    """GET: a media item's processing state, for the upload progress (`get_media`)."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    try:
        m = await c.api(me, "get_media", brand_id=b.id, media_id=request.path_params["media_id"][:64])
    except ConsoleError as exc:
        return _json({"error": exc.message}, exc.status)
    guidance = [a.get("guidance") for a in m["readiness"].get("next_actions") or [] if isinstance(a, dict)][:3]
    return _json({"id": m["id"], "status": m["status"], "ready": m["readiness"]["ready_for_content"],
                  "file_name": m["file_name"], "thumbnail": m.get("thumbnail_small_url"), "guidance": guidance})


async def target_options(c: Console, request: Request, me: SignedIn) -> Response:
    """GET: live choices of one TikTok or Pinterest account, for the settings select of a newly ticked target."""
    b = await c.brand_of(me, request.path_params["brand_id"])
    target = {"integration_id": request.path_params["integration_id"][:64]}
    return _json(await _options(c, me, b.id, target))


def routes(c: Console) -> list[BaseRoute]:
    big = {"max_form": COMPOSE_FORM, "max_fields": COMPOSE_FIELDS}
    return [
        Route(COMPOSE, c.page(compose_page), methods=["GET"]),
        Route(COMPOSE, c.page(compose_submit, **big), methods=["POST"]),
        Route(f"{COMPOSE}/check", c.page(live_check, **big), methods=["POST"]),
        Route(f"{COMPOSE}/uploads", c.page(upload_session), methods=["POST"]),
        Route(f"{COMPOSE}/media/{{media_id:str}}", c.page(media_state), methods=["GET"]),
        Route(f"{COMPOSE}/options/{{integration_id:str}}", c.page(target_options), methods=["GET"]),
    ]
