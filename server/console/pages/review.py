"""The review queue: every held Schedule the user may see, across brands, soonest due first, filterable by
brand; each entry shows the post as it will appear (server/console/postview.py) with approve and reject."""

from __future__ import annotations

from sqlmodel import select
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from server.console import web
from server.console.identity import SignedIn
from server.console.pages.schedule import APPROVE_SCOPES, EDIT_SCOPES, compose_url
from server.console.pages.shared import Console
from server.console.postview import post_view
from server.console.web import ConsoleError, render
from storage.tables.brands import Brand
from storage.tables.publishing import Schedule
from tools.schedules.review import REASON_MAX

PAGE = 20  # entries on one page: each shows its preview and a preflight


async def review(c: Console, request: Request, me: SignedIn) -> Response:
    wanted = request.query_params.get("brand") or None
    async with c.rt.db.session(write=False) as session:
        brands = (await session.exec(select(Brand).where(Brand.workspace_id == me.caller.workspace_id)
                                     .order_by(Brand.name).limit(500))).all()
        if wanted and wanted not in {b.id for b in brands}:
            raise ConsoleError("No such brand in your workspace.", 404)
        rows = (await session.exec(c.held(me, wanted).order_by(Schedule.scheduled_at, Schedule.id)
                                   .limit(PAGE))).all()
    by_id = {b.id: b for b in brands}
    entries = []
    for row in rows:
        brand = by_id[row.brand_id]
        s = await c.api(me, "get_schedule", brand_id=brand.id, schedule_id=row.id)
        entries.append({"brand": brand, **await post_view(c, me, brand, s),
                        "compose_url": compose_url(brand.id, s["content_item_id"])})
    total = await c.review_count(me)
    return render("review.html", **c.base(
        me, request, entries=entries, brands=brands, wanted=wanted, total=total, page_size=PAGE,
        can_approve=all(x in me.caller.scopes for x in APPROVE_SCOPES),
        can_edit=all(x in me.caller.scopes for x in EDIT_SCOPES), reason_max=REASON_MAX,
        idem=web.new_idempotency_key()))


def routes(c: Console) -> list[BaseRoute]:
    return [Route("/review", c.page(review), methods=["GET"])]
