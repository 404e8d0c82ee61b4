"""The publishing toolset's older routes over other areas' records: the legacy media upload URL, content items in
the older shape (create and page/limit list) and the publication records list. Each handler here is this
toolset's; what it does to media, content items and publications goes through those areas' services."""

from __future__ import annotations

from typing import Any, cast

from sqlmodel import select

from schemas import content as sc
from schemas import history as history_out
from schemas import media as media_out
from schemas.content import ListContentItemsOlderRequest
from schemas.history import ListPublicationsRequest
from schemas.media import RequestUploadUrlRequest
from storage.pagination import older_page, older_page_of_ids, sort_order
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication
from tools.content.routes import CONTENT_ITEM_PATH
from tools.content.rules import LABEL_IDS_COLUMN, labels_of_column, older
from tools.content.service import insert_item
from tools.endpoint import Call, Endpoint, Reply
from tools.history import publication_out, publication_targets
from tools.media.routes import legacy_upload_url

NO_SIDE_EFFECTS = "Creates no Schedule, run or job, calls no provider and publishes nothing."
NEVER = "Never publishes and changes no content."


async def request_media_upload_url(call: Call, req: RequestUploadUrlRequest) -> Reply[media_out.UploadUrl]:
    return await legacy_upload_url(call, req)


async def create_content_item_older(call: Call, req: Any) -> sc.OlderContentItem:  # pyright: ignore[reportInvalidTypeForm]  # a model made by create_model
    assert call.caller is not None
    item, draft = await insert_item(call.session, workspace_id=call.caller.workspace_id, user_id=call.caller.user_id,
                                    brand_id=call.brand_id, now=call.now, req=req)
    return older(cast(ContentItem, item), draft.label_ids)  # a SimpleNamespace with ContentItem's attributes


async def list_content_items_older(call: Call, req: ListContentItemsOlderRequest) -> Reply[list[sc.OlderContentItem]]:  # pyright: ignore[reportInvalidTypeForm]  # a model made by create_model
    order = sort_order(getattr(ContentItem, req.sort_by), ContentItem.id, req.sort_dir)
    # Each item with its label IDs in the same row: one statement, one snapshot (tools/content/rules.py).
    rows, pagination = await older_page(
        call.session, select(ContentItem, LABEL_IDS_COLUMN).where(ContentItem.brand_id == call.brand_id)
        .order_by(*order), req.page, req.limit)
    return Reply(data=[older(item, labels_of_column(labels)) for item, labels in rows], pagination=pagination)


async def list_publications(call: Call, req: ListPublicationsRequest) -> Reply[list[history_out.Publication]]:
    order = sort_order(getattr(Publication, req.sort_by), Publication.id, req.sort_dir)
    rows, pagination = await older_page_of_ids(call.session, Publication, Publication.id,
                                               (Publication.brand_id == call.brand_id,), order, req.page, req.limit)
    targets = await publication_targets(call.session, call.brand_id, rows)
    return Reply(data=[history_out.Publication.model_validate(publication_out(r, targets.get(r.target_id)))
                       for r in rows], pagination=pagination)


ENDPOINTS = [
    Endpoint(
        name="request_media_upload_url", method="POST", path="/v1/brands/{brand_id}/media/upload-url",
        toolset="publishing", handler=request_media_upload_url, request=RequestUploadUrlRequest,
        response=media_out.UploadUrl, scopes=("media:write",), idempotency="optional", status=201,
        title="Request media upload URL (legacy)",
        summary="Legacy upload flow: get a media ID and a signed PUT upload_url for a file name and content type.",
        guidance="PUT the bytes to upload_url with the same Content-Type, then update_media with status "
                 "ready_for_processing, then get_media until status is completed. Prefer "
                 f"create_media_upload_session (size and hash checked). {NEVER}",
    ),
    Endpoint(
        name="create_content_item_older", method="POST", path=CONTENT_ITEM_PATH, variant="older",
        toolset="publishing", handler=create_content_item_older, request=sc.CreateContentItemOlderRequest,
        response=sc.OlderContentItem, scopes=("posts:write",), status=201, brand_row=False,
        title="Create content item (older)",
        summary="Create a draft content item in the older shape: no idempotency key, no intended integrations or "
                "thumbnail media, and the created item itself as data.",
        guidance=f"{NO_SIDE_EFFECTS} Prefer create_content_item. REST: POST ...?variant=older.",
    ),
    Endpoint(
        name="list_content_items_older", method="GET", path=CONTENT_ITEM_PATH, variant="older", toolset="publishing",
        handler=list_content_items_older, request=ListContentItemsOlderRequest, response=sc.OlderContentItem,
        list_shape="older", scopes=("posts:read",), title="List content items (older)",
        summary="List a brand's content items as full items in the older page/limit shape, sorted by creation, "
                "update time or name.",
        guidance="Read-only. Prefer list_content_items. REST: GET ...?variant=older.",
    ),
    Endpoint(
        name="list_publications", method="GET", path="/v1/brands/{brand_id}/publications", toolset="publishing",
        handler=list_publications, request=ListPublicationsRequest, response=history_out.Publication, list_shape="older",
        scopes=("publications:read",), title="List publications",
        summary="List a brand's publication records (one per target of each publish run) in the older page/limit "
                "shape, newest first by default.",
        guidance="Read-only; calls no provider. status is processing, published or failed; failure_reason is safe "
                 "text. For public post links use list_history; for one Schedule's latest run use "
                 "get_schedule_receipt.",
    ),
]
