"""Labels: the older paged routes (labels:*); the discovery list (posts:read, content toolset) is
tools/content/labels.py over `brand_labels`.

Deleting a label removes it from content items and snippets; the content itself stays.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import library as sl
from schemas.errors import ApiError, issue, not_found
from schemas.ids import new_id
from schemas.library import ListLabelsOlderRequest
from schemas.time import iso
from storage.pagination import older_page, sort_order
from storage.tables.content import ContentItemLabel
from storage.tables.library import Label, Snippet
from tools.endpoint import Call, Endpoint, Reply


def label_out(label: Label) -> sl.Label:
    return sl.Label(id=label.id, name=label.name, color=label.color, created_at=iso(label.created_at),
                    updated_at=iso(label.updated_at))


def _sort_key(label: Label) -> tuple[str, str, str]:
    # Sorted here, not by the database: collations differ between SQLite and PostgreSQL.
    return (label.name.casefold(), label.name, label.id)


async def brand_labels(session: AsyncSession, brand_id: str) -> list[Label]:
    """Service for other areas (the content toolset's discovery list): every label of a brand, by name."""
    rows = (await session.exec(select(Label).where(Label.brand_id == brand_id)
                               .limit(sl.LABELS_PER_BRAND_MAX))).all()
    return sorted(rows, key=_sort_key)


async def list_labels_older(call: Call, req: ListLabelsOlderRequest) -> Reply[list[sl.Label]]:
    rows, pagination = await older_page(
        call.session, select(Label).where(Label.brand_id == call.brand_id).order_by(
            *sort_order(Label.created_at, Label.id, "desc")), req.page, req.limit)
    return Reply(data=[label_out(r) for r in rows], pagination=pagination)


async def load_label(call: Call, label_id: str) -> Label:
    label = (await call.session.exec(select(Label).where(Label.id == label_id,
                                                         Label.brand_id == call.brand_id))).first()
    if label is None:
        raise not_found("Label")
    return label


async def _refuse_duplicate(call: Call, name: str, except_id: str | None = None) -> None:
    # Compared here with casefold(): SQL lower() folds only ASCII on SQLite.
    rows = (await call.session.exec(select(Label.id, Label.name).where(Label.brand_id == call.brand_id))).all()
    existing = next((i for i, n in rows if n.casefold() == name.casefold() and i != except_id), None)
    if existing is not None:
        raise ApiError("DOMAIN_VALIDATION_FAILED", "This brand already has a label with that name.",
                       issues=[issue("$.name", "DUPLICATE", "Use the existing label, or choose another name.")],
                       details={"existing_label_id": existing})


async def create_label(call: Call, req: sl.CreateLabelRequest) -> sl.Label:
    assert call.brand is not None
    name = req.name.strip()
    await _refuse_duplicate(call, name)
    count = (await call.session.exec(select(func.count()).select_from(Label).where(
        Label.brand_id == call.brand_id))).one()
    if count >= sl.LABELS_PER_BRAND_MAX:
        raise ApiError("DOMAIN_VALIDATION_FAILED", f"A brand has at most {sl.LABELS_PER_BRAND_MAX} labels.",
                       issues=[issue("$.name", "LIMIT_REACHED", "Delete an unused label first.")])
    label = Label(id=new_id("lbl"), workspace_id=call.brand.workspace_id, brand_id=call.brand_id, name=name,
                  color=req.color, created_at=call.now, updated_at=call.now)
    call.session.add(label)
    await call.session.flush()
    return label_out(label)


async def update_label(call: Call, req: sl.UpdateLabelRequest) -> sl.Label:
    provided = req.model_fields_set & {"name", "color"}
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send name, color or both.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send name and/or color.")])
    label = await load_label(call, req.label_id)
    if "name" in provided:
        await _refuse_duplicate(call, req.name.strip(), except_id=label.id)
        label.name = req.name.strip()
    if "color" in provided:
        label.color = req.color
    label.updated_at = call.now
    call.session.add(label)
    await call.session.flush()
    return label_out(label)


async def delete_label(call: Call, req: sl.LabelPath) -> sl.Deleted:
    label = await load_label(call, req.label_id)
    await call.session.exec(delete(ContentItemLabel).where(col(ContentItemLabel.label_id) == label.id))
    # Snippets keep label IDs in a JSON list: rewrite the (few) that carry this one.
    snippets = (await call.session.exec(select(Snippet).where(Snippet.brand_id == call.brand_id))).all()
    for snippet in snippets:
        if label.id in snippet.label_ids:
            snippet.label_ids = [i for i in snippet.label_ids if i != label.id]
            call.session.add(snippet)
    await call.session.delete(label)
    await call.session.flush()
    return sl.Deleted(id=label.id, outcome="deleted")


LABELS_PATH = "/v1/brands/{brand_id}/labels"  # shared with the discovery list (tools/content/labels.py)
ONE_LABEL = LABELS_PATH + "/{label_id}"

ENDPOINTS = [
    Endpoint(
        name="list_labels_older", method="GET", path=LABELS_PATH, variant="older", toolset="labels",
        handler=list_labels_older, request=ListLabelsOlderRequest, response=sl.Label, list_shape="older",
        scopes=("labels:read",), title="List labels (older)",
        summary="List a brand's labels with timestamps in the older page/limit shape, newest first.",
        guidance="Read-only. REST: GET ...?variant=older. list_labels returns every label sorted by name.",
    ),
    Endpoint(
        name="create_label", method="POST", path=LABELS_PATH, toolset="labels", handler=create_label,
        request=sl.CreateLabelRequest, response=sl.Label, scopes=("labels:write",), status=201,
        title="Create label",
        summary="Create a label for a brand with a name (unique in the brand) and an optional hex colour.",
        guidance="Changes no content. Attach it with create_content_item or update_content_item label_ids.",
    ),
    Endpoint(
        name="update_label", method="PATCH", path=ONE_LABEL, toolset="labels", handler=update_label,
        request=sl.UpdateLabelRequest, response=sl.Label, scopes=("labels:write",), title="Update label",
        summary="Rename a label or change its colour; only the given fields change.",
        guidance="Never removes the label from content items: only its name or colour changes.",
    ),
    Endpoint(
        name="delete_label", method="DELETE", path=ONE_LABEL, toolset="labels", handler=delete_label,
        request=sl.LabelPath, response=sl.Deleted, scopes=("labels:write",), destructive=True,
        title="Delete label",
        summary="Delete a label and remove it from the brand's content items and snippets, which stay.",
        guidance="Deletes no content item, snippet or media.",
    ),
]


async def seed_demo_labels(session: Any, now: Any, workspace: Any, brands: list[Any]) -> dict[str, Any]:
    """Demo data: a few labels for each demo brand."""
    labels = []
    for brand in brands:
        for name, color in (("Promotion", "#C8A27A"), ("Behind the scenes", "#3B2F2F"), ("Tips", "#1F4E5F")):
            label = Label(id=new_id("lbl"), workspace_id=workspace.id, brand_id=brand.id, name=name, color=color,
                          created_at=now, updated_at=now)
            session.add(label)
            labels.append(label)
    await session.flush()
    return {"labels": labels}

