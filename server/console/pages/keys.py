"""API keys: list, create (the secret shown once, after a redirect), revoke. The same operator functions as the
CLI; a user grants only scopes they hold."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from schemas.scopes import SCOPES
from server.console import identity, web
from server.console.identity import SignedIn
from server.console.pages.shared import Console, scope_groups
from server.console.web import ConsoleError, redirect, render
from storage.tables.accounts import ApiKey, Workspace
from storage.tables.brands import Brand
from tools.operator import actions as operator


async def keys_context(c: Console, me: SignedIn) -> dict[str, Any]:
    async with c.rt.db.session(write=False) as session:
        hidden = await identity.console_key_ids(session, me.caller.workspace_id)
        query = select(ApiKey).where(ApiKey.workspace_id == me.caller.workspace_id)
        if not me.is_admin:
            query = query.where(ApiKey.user_id == me.user.id)
        rows = (await session.exec(query.order_by(col(ApiKey.created_at).desc(), col(ApiKey.id)).limit(200))).all()
        brands = (await session.exec(select(Brand).where(Brand.workspace_id == me.caller.workspace_id)
                                     .order_by(Brand.name).limit(500))).all()
    return {"keys": [k for k in rows if k.id not in hidden], "brands": brands, "groups": scope_groups(),
            "grantable": me.caller.scopes}


async def keys(c: Console, request: Request, me: SignedIn) -> Response:
    context = await keys_context(c, me)
    handed = web.take_secret(request, c.rt, me)
    created = next((k for k in context["keys"] if handed and k.id == handed[0]), None)
    response = render("keys.html", **c.base(me, request, created=created,
                                            secret=handed[1] if handed and created else None, **context))
    web.forget_secret(response, request, c.rt)  # shown once: a reload finds no secret
    return response


async def create_key(c: Console, request: Request, me: SignedIn) -> Response:
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
        async with c.rt.db.session(write=True) as session:
            ws = await session.get(Workspace, me.caller.workspace_id)
            assert ws is not None  # the signed-in caller's own workspace
            key, secret = await operator.create_key(session, c.rt.clock.now(), ws, name, wanted,
                                                    brand_ids=brand_ids, role=me.user.role, user_id=me.user.id)
    except operator.OperatorError as exc:
        raise ConsoleError(str(exc).replace("--brands", "A brand restriction"), 422) from None
    # POST/redirect/GET: a reload of the page that shows the secret neither creates another key nor shows it again
    response = redirect("/keys")
    web.hand_over_secret(response, request, c.rt, me, key.id, secret)
    return response


async def revoke_key(c: Console, request: Request, me: SignedIn) -> Response:
    key_id = request.path_params["key_id"]
    async with c.rt.db.session(write=True) as session:
        key = await session.get(ApiKey, key_id)
        hidden = await identity.console_key_ids(session, me.caller.workspace_id)
        if (key is None or key.workspace_id != me.caller.workspace_id or key.id in hidden
                or (not me.is_admin and key.user_id != me.user.id)):
            raise ConsoleError("No such API key.", 404)
        await operator.revoke_key(session, c.rt.clock.now(), key_id)
    return redirect("/keys", "revoked")


def routes(c: Console) -> list[BaseRoute]:
    return [
        Route("/keys", c.page(keys), methods=["GET"]),
        Route("/keys", c.page(create_key), methods=["POST"]),
        Route("/keys/{key_id:str}/revoke", c.page(revoke_key), methods=["POST"]),
    ]
