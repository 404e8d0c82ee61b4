"""The team page (admins): the workspace's users with role and last sign-in, invitations, role changes, brand
restrictions and deactivation; and the invitation page where an invited person picks a password.

Every action is tools/operator/team.py's, the same as `socialpub users`. An invitation link is shown once, on the
page the invite redirects to (carried like a new key's secret: sealed, bound to the session, short-lived), unless
a registered email sender (`team.invitation_senders`) sent it.
"""

from __future__ import annotations

import json
from typing import Any

from cryptography.fernet import InvalidToken
from sqlmodel import select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from schemas.scopes import ROLES
from server.console import identity, web
from server.console.pages.shared import Console
from server.console.web import ConsoleError, redirect, render
from storage import vault
from storage.tables.accounts import Workspace
from storage.tables.brands import Brand
from tools.operator import actions as operator
from tools.operator import team
from tools.runtime import Runtime

LINK_COOKIE = "socialpub_console_invite"
LINK_TTL = 120  # seconds from the invite to the page that shows its link

NOTICES = {
    "invited": "Invitation created.",
    "invite-sent": "Invitation sent by email.",
    "role": "Role changed.",
    "brands": "Brand access changed.",
    "deactivated": "User deactivated: their sessions ended and their keys stopped working.",
    "welcome": "Welcome: sign in with your email and the password you chose.",
}


def routes(c: Console) -> list[Route]:
    rt = c.rt

    def need_admin(me: identity.SignedIn) -> None:
        if not me.is_admin:
            raise ConsoleError(f"Your role ({me.user.role}) cannot manage the team: ask an admin.", 403)

    async def refused(action: Any) -> Any:
        try:
            async with rt.db.session(write=True) as session:
                return await action(session)
        except operator.OperatorError as exc:
            raise ConsoleError(str(exc), 422) from None

    @c.page
    async def team_page(_: Console, request: Request, me: identity.SignedIn) -> Response:
        need_admin(me)
        now = rt.clock.now()
        async with rt.db.session(write=False) as session:
            users = await team.list_users(session, me.caller.workspace_id)
            invitations = await team.list_invitations(session, now, me.caller.workspace_id)
            brands = (await session.exec(select(Brand).where(Brand.workspace_id == me.caller.workspace_id)
                                         .order_by(Brand.name).limit(500))).all()
        link = _take_link(request, rt, me)
        response = render("team.html", **c.base(me, request, users=users, invitations=invitations, brands=brands,
                                              roles=ROLES, link=link,
                                              notice=NOTICES.get(request.query_params.get("notice", ""))))
        if LINK_COOKIE in request.cookies:  # shown once: a reload finds no link
            response.delete_cookie(LINK_COOKIE, path=f"{web.PREFIX}/team", httponly=True, samesite="strict",
                                   secure=web.is_secure(request, rt))
        return response

    @c.page
    async def invite(_: Console, request: Request, me: identity.SignedIn) -> Response:
        need_admin(me)
        form = request.state.form
        role = str(form.get("role") or "member")
        if role == "super_admin" and me.user.role != "super_admin":
            raise ConsoleError("Only a super admin can invite a super admin.", 403)
        brand_ids = list(form.get("brand_ids") or []) if form.get("restrict") == "1" else None

        async def act(session: Any) -> tuple[Any, str, str]:
            ws = await session.get(Workspace, me.caller.workspace_id)
            invitation, link = await team.invite(session, rt.clock.now(), ws, str(form.get("email") or ""), role,
                                                 brand_ids=brand_ids, invited_by=me.user.id,
                                                 public_url=rt.settings.public_url)
            return invitation, link, ws.name

        invitation, link, ws_name = await refused(act)
        if await team.send_invitation(invitation, ws_name, link):
            return redirect("/team", "invite-sent")
        response = redirect("/team", "invited")
        sealed = vault.fernet(rt.settings).encrypt(json.dumps([me.session_id, invitation.email, link]).encode())
        response.set_cookie(LINK_COOKIE, sealed.decode(), max_age=LINK_TTL, path=f"{web.PREFIX}/team",
                            httponly=True, samesite="strict", secure=web.is_secure(request, rt))
        return response

    @c.page
    async def set_role(_: Console, request: Request, me: identity.SignedIn) -> Response:
        need_admin(me)
        role, user_id = str(request.state.form.get("role") or ""), request.path_params["user_id"]
        await refused(lambda s: team.set_role(s, rt.clock.now(), me.caller.workspace_id, user_id, role,
                                              acting_role=me.user.role))
        return redirect("/team", "role")

    @c.page
    async def set_brands(_: Console, request: Request, me: identity.SignedIn) -> Response:
        need_admin(me)
        form = request.state.form
        brand_ids = list(form.get("brand_ids") or []) if form.get("restrict") == "1" else None
        await refused(lambda s: team.restrict_brands(s, rt.clock.now(), me.caller.workspace_id,
                                                     request.path_params["user_id"], brand_ids))
        return redirect("/team", "brands")

    @c.page
    async def deactivate(_: Console, request: Request, me: identity.SignedIn) -> Response:
        need_admin(me)
        await refused(lambda s: team.deactivate(s, rt.clock.now(), me.caller.workspace_id,
                                                request.path_params["user_id"]))
        return redirect("/team", "deactivated")

    # -- accepting an invitation (not signed in) ------------------------------------------------------------
    async def invitation_page(request: Request, error: str | None = None, status: int = 200) -> Response:
        token = request.path_params["token"]
        try:
            async with rt.db.session(write=False) as session:
                invitation = await team.open_invitation(session, rt.clock.now(), token)
                ws = await session.get(Workspace, invitation.workspace_id)
        except operator.OperatorError as exc:
            return render("invitation.html", 404, invitation=None, error=str(exc))
        pre = request.cookies.get(web.PRE_COOKIE) or web.new_pre_session()
        response = render("invitation.html", status, invitation=invitation, workspace=ws, error=error,
                          csrf=web.csrf_for_pre(rt, pre), min_password=identity.MIN_PASSWORD)
        web.set_cookie(response, request, rt, web.PRE_COOKIE, pre, 3600)
        return response

    async def accept(request: Request) -> Response:
        try:
            form = await c.form_of(request)
            web.check_csrf(rt, form.get("csrf"), pre=request.cookies.get(web.PRE_COOKIE))
        except ConsoleError as exc:
            return await invitation_page(request, exc.message, exc.status)
        password = str(form.get("password") or "")
        if password != str(form.get("password_again") or ""):
            return await invitation_page(request, "The passwords differ.", 422)
        try:
            async with rt.db.session(write=True) as session:
                await identity.accept_invitation(session, rt.clock.now(), request.path_params["token"], password,
                                                 name=str(form.get("name") or ""))
        except operator.OperatorError as exc:
            return await invitation_page(request, str(exc), 422)
        return web.RedirectResponse(f"{web.PREFIX}/sign-in?notice=welcome", status_code=303,
                                    headers={**web.SECURITY_HEADERS, "Referrer-Policy": "no-referrer"})

    return [
        Route("/team", team_page, methods=["GET"]),
        Route("/team/invite", invite, methods=["POST"]),
        Route("/team/{user_id:str}/role", set_role, methods=["POST"]),
        Route("/team/{user_id:str}/brands", set_brands, methods=["POST"]),
        Route("/team/{user_id:str}/deactivate", deactivate, methods=["POST"]),
        Route("/invitations/{token:str}", invitation_page, methods=["GET"]),
        Route("/invitations/{token:str}", accept, methods=["POST"]),
    ]


def _take_link(request: Request, rt: Runtime, me: identity.SignedIn) -> tuple[str, str] | None:
    """(email, link) of the invitation this session just made, if any."""
    sealed = request.cookies.get(LINK_COOKIE)
    if not sealed:
        return None
    try:
        session_id, email, link = json.loads(vault.fernet(rt.settings).decrypt(sealed.encode(), ttl=LINK_TTL))
    except (InvalidToken, ValueError, TypeError):
        return None
    return (email, link) if session_id == me.session_id else None
