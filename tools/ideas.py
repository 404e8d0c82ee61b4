"""Ideas: a brand's content idea backlog (older list shape)."""

from __future__ import annotations

from sqlmodel import col, select

from schemas import library as sl
from schemas.errors import ApiError, issue, not_found
from schemas.ids import new_id
from schemas.library import ListIdeasRequest
from schemas.time import iso
from storage.pagination import older_page, sort_order
from storage.tables.library import Idea
from tools.endpoint import Call, Endpoint, Reply


def idea_out(i: Idea) -> sl.Idea:
    return sl.Idea(id=i.id, name=i.name, description=i.description, type=i.type, status=i.status, labels=i.labels,
                   last_used_at=iso(i.last_used_at), created_at=iso(i.created_at), updated_at=iso(i.updated_at))


async def list_ideas(call: Call, req: ListIdeasRequest) -> Reply[list[sl.Idea]]:
    order = list(sort_order(getattr(Idea, req.sort_by), Idea.id, req.sort_dir))
    if req.sort_by == "last_used_at":
        order.insert(0, col(Idea.last_used_at).is_(None))  # never-used ideas last on both backends
    rows, pagination = await older_page(
        call.session, select(Idea).where(Idea.brand_id == call.brand_id).order_by(*order), req.page, req.limit)
    return Reply(data=[idea_out(r) for r in rows], pagination=pagination)


async def create_idea(call: Call, req: sl.CreateIdeaRequest) -> sl.Idea:
    assert call.brand is not None
    idea = Idea(id=new_id("ide"), workspace_id=call.brand.workspace_id, brand_id=call.brand_id, name=req.name,
                description=req.description, type=req.type, status=req.status, labels=list(req.labels),
                last_used_at=call.now if req.status == "used" else None, created_at=call.now, updated_at=call.now)
    call.session.add(idea)
    await call.session.flush()
    return idea_out(idea)


async def load_idea(call: Call, idea_id: str) -> Idea:
    idea = (await call.session.exec(select(Idea).where(Idea.id == idea_id, Idea.brand_id == call.brand_id))).first()
    if idea is None:
        raise not_found("Idea")
    return idea


async def update_idea(call: Call, req: sl.UpdateIdeaRequest) -> sl.Idea:
    provided = req.model_fields_set & {"name", "description", "type", "status", "labels"}
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send at least one field to change.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send at least one of name, description, type, status, "
                                                          "labels.")])
    idea = await load_idea(call, req.idea_id)
    for name in provided:
        value = getattr(req, name)
        if name == "status" and value == "used" and idea.status != "used":
            idea.last_used_at = call.now
        setattr(idea, name, list(value) if name == "labels" else value)
    idea.updated_at = call.now
    call.session.add(idea)
    await call.session.flush()
    return idea_out(idea)


async def delete_idea(call: Call, req: sl.IdeaPath) -> sl.Deleted:
    idea = await load_idea(call, req.idea_id)
    await call.session.delete(idea)
    await call.session.flush()
    return sl.Deleted(id=idea.id, outcome="deleted")


PATH = "/v1/brands/{brand_id}/ideas"
ONE = PATH + "/{idea_id}"

ENDPOINTS = [
    Endpoint(
        name="list_ideas", method="GET", path=PATH, toolset="ideas", handler=list_ideas, request=ListIdeasRequest,
        response=sl.Idea, list_shape="older", scopes=("ideas:read",), title="List ideas",
        summary="List a brand's content ideas in the older page/limit shape, sorted by creation, update or last "
                "use.",
        guidance="Read-only. Turn an idea into a draft with create_content_item, then mark it used with "
                 "update_idea.",
    ),
    Endpoint(
        name="create_idea", method="POST", path=PATH, toolset="ideas", handler=create_idea,
        request=sl.CreateIdeaRequest, response=sl.Idea, scopes=("ideas:write",), status=201, title="Create idea",
        summary="Create a content idea with an optional name, description, type, status and labels.",
        guidance="Creates no draft and no Schedule.",
    ),
    Endpoint(
        name="update_idea", method="PATCH", path=ONE, toolset="ideas", handler=update_idea,
        request=sl.UpdateIdeaRequest, response=sl.Idea, scopes=("ideas:write",), title="Update idea",
        summary="Change an idea's fields; only the given fields change, and setting status used records "
                "last_used_at.",
        guidance="Creates no draft and no Schedule.",
    ),
    Endpoint(
        name="delete_idea", method="DELETE", path=ONE, toolset="ideas", handler=delete_idea, request=sl.IdeaPath,
        response=sl.Deleted, scopes=("ideas:write",), destructive=True, title="Delete idea",
        summary="Delete a content idea; drafts made from it stay.",
        guidance="Never deletes a draft: it deletes only the idea.",
    ),
]
