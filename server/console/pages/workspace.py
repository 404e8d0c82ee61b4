"""The workspace page: its plan, usage and brands."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from schemas.plans import LIMIT_NAMES, PLANS, get_plan
from server.console.identity import SignedIn
from server.console.pages.shared import Console
from server.console.web import render
from storage.tables.accounts import Workspace
from tools.context import plans


async def workspace(c: Console, request: Request, me: SignedIn) -> Response:
    context = await c.api(me, "get_context")
    async with c.rt.db.session(write=False) as session:
        ws = await session.get(Workspace, me.caller.workspace_id)
        assert ws is not None  # the signed-in caller's own workspace
        usage = await plans.workspace_usage(session, ws)
    return render("workspace.html", **c.base(me, request, workspace=ws, plan=get_plan(ws.plan_id), usage=usage,
                                             brands=context["brands"], plans=PLANS, limit_names=LIMIT_NAMES))


def routes(c: Console) -> list[BaseRoute]:
    return [Route("/workspace", c.page(workspace), methods=["GET"])]
