"""Snippets: reusable text blocks of a brand (older list shape)."""

from __future__ import annotations

from sqlmodel import col, select

from schemas import library as sl
from schemas.errors import ApiError, Issues, issue, not_found
from schemas.ids import new_id
from schemas.library import ListSnippetsRequest
from schemas.time import iso
from storage.pagination import older_page, sort_order
from storage.tables.library import Label, Snippet
from tools.endpoint import Call, Endpoint, Reply


def snippet_out(s: Snippet) -> sl.Snippet:
    return sl.Snippet(id=s.id, name=s.name, text=s.text, label_ids=s.label_ids, created_at=iso(s.created_at),
                      updated_at=iso(s.updated_at))


async def check_labels(call: Call, label_ids: list[str], path: str = "$.label_ids") -> None:
    """422 unless every ID is a label of this brand."""
    if not label_ids:
        return
    found = set((await call.session.exec(select(Label.id).where(Label.brand_id == call.brand_id,
                                                                col(Label.id).in_(label_ids)))).all())
    issues = Issues()
    for i, lid in enumerate(label_ids):
        if lid not in found:
            issues.add(f"{path}[{i}]", "NOT_FOUND", "No label of this brand has this ID; use an id from list_labels.")
    issues.raise_if_any()


async def list_snippets(call: Call, req: ListSnippetsRequest) -> Reply[list[sl.Snippet]]:
    rows, pagination = await older_page(
        call.session, select(Snippet).where(Snippet.brand_id == call.brand_id).order_by(
            *sort_order(Snippet.created_at, Snippet.id, "desc")), req.page, req.limit)
    return Reply(data=[snippet_out(r) for r in rows], pagination=pagination)


async def create_snippet(call: Call, req: sl.CreateSnippetRequest) -> sl.Snippet:
    assert call.brand is not None
    await check_labels(call, req.label_ids)
    snippet = Snippet(id=new_id("snp"), workspace_id=call.brand.workspace_id, brand_id=call.brand_id,
                      name=req.name, text=req.text, label_ids=list(req.label_ids), created_at=call.now,
                      updated_at=call.now)
    call.session.add(snippet)
    await call.session.flush()
    return snippet_out(snippet)


async def load_snippet(call: Call, snippet_id: str) -> Snippet:
    snippet = (await call.session.exec(select(Snippet).where(Snippet.id == snippet_id,
                                                             Snippet.brand_id == call.brand_id))).first()
    if snippet is None:
        raise not_found("Snippet")
    return snippet


async def update_snippet(call: Call, req: sl.UpdateSnippetRequest) -> sl.Snippet:
    provided = req.model_fields_set & {"name", "text", "label_ids"}
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send at least one of name, text, label_ids.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send at least one field to change.")])
    snippet = await load_snippet(call, req.snippet_id)
    if "label_ids" in provided:
        await check_labels(call, req.label_ids)
        snippet.label_ids = list(req.label_ids)
    if "name" in provided:
        snippet.name = req.name
    if "text" in provided:
        snippet.text = req.text
    snippet.updated_at = call.now
    call.session.add(snippet)
    await call.session.flush()
    return snippet_out(snippet)


async def delete_snippet(call: Call, req: sl.SnippetPath) -> sl.Deleted:
    snippet = await load_snippet(call, req.snippet_id)
    await call.session.delete(snippet)
    await call.session.flush()
    return sl.Deleted(id=snippet.id, outcome="deleted")


PATH = "/v1/brands/{brand_id}/snippets"
ONE = PATH + "/{snippet_id}"

ENDPOINTS = [
    Endpoint(
        name="list_snippets", method="GET", path=PATH, toolset="snippets", handler=list_snippets,
        request=ListSnippetsRequest, response=sl.Snippet, list_shape="older", scopes=("snippets:read",),
        title="List snippets",
        summary="List a brand's reusable text snippets in the older page/limit shape, newest first.",
        guidance="Read-only. Paste a snippet's text into a draft's copy yourself; snippets are never inserted "
                 "automatically.",
    ),
    Endpoint(
        name="create_snippet", method="POST", path=PATH, toolset="snippets", handler=create_snippet,
        request=sl.CreateSnippetRequest, response=sl.Snippet, scopes=("snippets:write",), status=201,
        title="Create snippet",
        summary="Create a reusable text snippet with an optional name, text and labels of the brand.",
        guidance="Changes no content item.",
    ),
    Endpoint(
        name="update_snippet", method="PATCH", path=ONE, toolset="snippets", handler=update_snippet,
        request=sl.UpdateSnippetRequest, response=sl.Snippet, scopes=("snippets:write",), title="Update snippet",
        summary="Change a snippet's name, text or labels; only the given fields change and null clears a text field.",
        guidance="Never changes drafts that used the snippet's text: they keep their own copy.",
    ),
    Endpoint(
        name="delete_snippet", method="DELETE", path=ONE, toolset="snippets", handler=delete_snippet,
        request=sl.SnippetPath, response=sl.Deleted, scopes=("snippets:write",), destructive=True,
        title="Delete snippet",
        summary="Delete a snippet; drafts that used its text keep their own copy.",
        guidance="Never changes a draft: it deletes only the snippet.",
    ),
]
