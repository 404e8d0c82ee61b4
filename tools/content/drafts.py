"""Drafts: the unused content items of a brand, with a small edit (name, shared caption) and delete.

"Unused" means no usage probe (`tools.content.usage`) reports the item scheduled, queued, publishing or
published. Edits and deletes need `confirm_draft_id` equal to the path ID and an idempotency key.
"""

from __future__ import annotations

from sqlalchemy import or_
from sqlmodel import col, select

from schemas import content as sc
from schemas.content import ListDraftsRequest
from schemas.errors import ApiError, issue
from schemas.time import iso
from storage.tables.content import ContentItem, ContentItemLabel
from storage.tables.library import Label
from tools.content.routes import delete_item
from tools.content.rules import caption_preview, load_item, media_ids
from tools.content.usage import require_unused, usage
from tools.endpoint import Call, Endpoint
from tools.links import link

SCAN_BATCH = 200  # drafts are read newest first in batches until 50 unused ones are found


def draft_item(item: ContentItem) -> sc.DraftItem:
    attached = media_ids(item)
    return sc.DraftItem.model_validate({
        "id": item.id, "name": item.name, "caption_preview": caption_preview(item), "media_count": len(attached),
        "thumbnail_media_id": item.thumbnail_media_id or (attached[0] if attached else None),
        "intended_integration_ids": item.intended_integration_ids,
        "updated_at": iso(item.updated_at),
        "links": {"self": link("get_content_item", brand_id=item.brand_id, content_item_id=item.id)},
    })


async def list_drafts(call: Call, req: ListDraftsRequest) -> sc.DraftList:
    session = call.session
    query = select(ContentItem).where(ContentItem.brand_id == call.brand_id)
    if req.label is not None:
        exists = (await session.exec(select(Label.id).where(Label.id == req.label,
                                                            Label.brand_id == call.brand_id))).first()
        if exists is None:
            raise ApiError("DOMAIN_VALIDATION_FAILED", "No label of this brand has this ID.",
                           issues=[issue("$.label", "NOT_FOUND", "Use an id from list_labels.")])
        query = query.join(ContentItemLabel, col(ContentItemLabel.content_item_id) == ContentItem.id).where(
            ContentItemLabel.label_id == req.label)
    found: list[ContentItem] = []
    last: ContentItem | None = None
    while len(found) <= sc.DRAFTS_MAX:
        page = query
        if last is not None:
            page = page.where(ContentItem.updated_at <= last.updated_at,
                              or_(col(ContentItem.updated_at) < last.updated_at, col(ContentItem.id) < last.id))
        rows = list((await session.exec(page.order_by(col(ContentItem.updated_at).desc(), col(ContentItem.id).desc())
                                        .limit(SCAN_BATCH))).all())
        if not rows:
            break
        used = await usage(session, call.brand_id, [r.id for r in rows])
        found.extend(r for r in rows if r.id not in used)
        last = rows[-1]
        if len(rows) < SCAN_BATCH:
            break
    return sc.DraftList(items=[draft_item(r) for r in found[: sc.DRAFTS_MAX]], has_more=len(found) > sc.DRAFTS_MAX)


def _confirm(draft_id: str, confirm: str) -> None:
    if confirm != draft_id:
        raise ApiError("DOMAIN_VALIDATION_FAILED", "confirm_draft_id differs from the draft ID in the path; nothing "
                                                   "was changed.",
                       issues=[issue("$.confirm_draft_id", "MISMATCH", "Send the same ID as the path's draft_id.")])


async def update_draft(call: Call, req: sc.UpdateDraftRequest) -> sc.DraftWrite:
    provided = req.model_fields_set & {"name", "caption"}
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send name, caption or both.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send name and/or caption.")])
    _confirm(req.draft_id, req.confirm_draft_id)
    item = await load_item(call.session, call.brand_id, req.draft_id)
    if "caption" in provided and item.copy_mode != "single":
        raise ApiError("DOMAIN_VALIDATION_FAILED", "This draft has per-platform copy; a caption edit needs a single "
                                                   "shared caption. Use update_content_item to edit platform_copy.",
                       issues=[issue("$.caption", "PER_PLATFORM_COPY",
                                     "The draft's copy_mode is per_platform: edit platform_copy instead.")])
    await require_unused(call.session, call.brand_id, item.id, action="edited")
    if "name" in provided:
        item.name = req.name.strip()
    if "caption" in provided:
        copy = dict(item.single_copy or {"caption": "", "hashtags": [], "title": None})
        copy["caption"] = req.caption
        item.single_copy = copy
    item.updated_at = call.now
    call.session.add(item)
    await call.session.flush()
    return sc.DraftWrite(id=item.id, outcome="updated")


async def delete_draft(call: Call, req: sc.DeleteDraftRequest) -> sc.DraftWrite:
    _confirm(req.draft_id, req.confirm_draft_id)
    item = await load_item(call.session, call.brand_id, req.draft_id)
    await require_unused(call.session, call.brand_id, item.id, action="deleted")
    await delete_item(call, item)
    return sc.DraftWrite(id=item.id, outcome="deleted")


DRAFT_PATH = "/v1/brands/{brand_id}/drafts/{draft_id}"

ENDPOINTS = [
    Endpoint(
        name="list_drafts", method="GET", path="/v1/brands/{brand_id}/drafts", toolset="content",
        handler=list_drafts, request=ListDraftsRequest, response=sc.DraftList, scopes=("posts:read",),
        title="List drafts",
        summary="List up to 50 unused drafts of a brand, newest first, with caption preview, "
                "media and intended accounts.",
        guidance="Read-only; scheduled or published content is not listed.",
    ),
    Endpoint(
        name="update_draft", method="PATCH", path=DRAFT_PATH, toolset="content", handler=update_draft,
        request=sc.UpdateDraftRequest, response=sc.DraftWrite, scopes=("posts:write",), idempotency="required",
        title="Update draft",
        summary="Rename an unused draft and/or replace its single shared caption (an empty caption clears it).",
        guidance="Media and settings are unchanged; used content is refused (409). Calls no "
                 "provider.",
    ),
    Endpoint(
        name="delete_draft", method="DELETE", path=DRAFT_PATH, toolset="content", handler=delete_draft,
        request=sc.DeleteDraftRequest, response=sc.DraftWrite, scopes=("posts:write",), idempotency="required",
        destructive=True, title="Delete draft",
        summary="Delete an unused draft; its media stay in the media library.",
        guidance="Used content is refused (409); never removes a post from a social account.",
    ),
]
