"""Content items (drafts): create, read, list (released and older shapes), update, delete, TikTok privacy.

Creating or editing a draft never creates a Schedule, a run or a job, never calls a provider and never
publishes; only the TikTok privacy update reads the provider (a live check of the target's options).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, delete, exists
from sqlalchemy import select as core_select
from sqlmodel import col, select

from providers.base import ProviderError
from schemas import content as sc
from schemas.content import ListContentItemsRequest
from schemas.errors import ApiError, Issues, issue
from storage import keyset
from storage.statements import as_api_time, as_json
from storage.tables.brands import Brand
from storage.tables.content import ContentItem, ContentItemLabel
from storage.tables.integrations import Integration
from tools.content.rules import (
    LABEL_IDS_COLUMN,
    Draft,
    check,
    check_data,
    label_ids_of,
    labels_of_column,
    load_item,
    released,
    set_labels,
    summary,
)
from tools.content.service import insert_item
from tools.content.usage import require_unused
from tools.endpoint import Call, Endpoint
from tools.links import link, links_to
from tools.services.accounts import account_of, outbound, provider_error

# Endpoints of other areas this one links to.
LIST_TARGETS = "list_targets"
PREFLIGHT = "preflight_content"
DYNAMIC_OPTIONS = "get_target_dynamic_options"


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


# -- create ---------------------------------------------------------------------------------------------------

async def create_content_item(call: Call, req: Any) -> sc.CreatedContentItem:
    assert call.caller is not None
    item, draft = await insert_item(call.session, workspace_id=call.caller.workspace_id, user_id=call.caller.user_id,
                                    brand_id=call.brand_id, now=call.now, req=req)
    ids = list(item.intended_integration_ids)
    # The item is validated once, by `released`; pydantic takes the model instance as it is for the field.
    return sc.CreatedContentItem.model_validate({
        "content_item": released(item, draft.label_ids), "outcome": "created",
        "intended_integration_ids": ids, "next_actions": [{"action": "preflight_content", "integration_ids": list(ids)}],
        "links": _drop_none({"targets": link(LIST_TARGETS, brand_id=item.brand_id),
                             "preflight": link(PREFLIGHT, brand_id=item.brand_id,
                                                        content_item_id=item.id)}),
    })


# -- read and lists ------------------------------------------------------------------------------------------

async def get_content_item(call: Call, req: sc.ContentItemPath) -> sc.ContentItemRead:
    item = await load_item(call.session, call.brand_id, req.content_item_id)
    labels = (await label_ids_of(call.session, [item.id]))[item.id]
    links = {"self": link("get_content_item", brand_id=item.brand_id, content_item_id=item.id),
             "targets": link(LIST_TARGETS, brand_id=item.brand_id)}
    if item.intended_integration_ids:
        links["preflight"] = link(PREFLIGHT, brand_id=item.brand_id, content_item_id=item.id)
    return sc.ContentItemRead.model_validate({"content_item": released(item, labels), "links": _drop_none(links)})


# What `summary` reads: rows of these columns, not ContentItem objects (no identity map on the hot list), with
# the item's label IDs in the same row; the JSON values decoded and the two times as the API's text by one
# function per value (storage/statements.py `as_json`, `as_api_time`).
SUMMARY_COLUMNS = (col(ContentItem.id), col(ContentItem.brand_id), col(ContentItem.name), col(ContentItem.copy_mode),
                   as_json(ContentItem.single_copy), as_json(ContentItem.platform_copy),
                   as_json(ContentItem.settings), as_json(ContentItem.intended_integration_ids),
                   as_api_time(ContentItem.created_at), as_api_time(ContentItem.updated_at), LABEL_IDS_COLUMN)


# Built once (tools/content/rules.py `summary` reads these columns: rows, not ContentItem objects).
# SQLAlchemy's own `select`: it types eleven columns, sqlmodel's stops at four.
# The page proves the brand visible to the key (the endpoint's `brand_proved_by_handler`): it selects only while
# the brand is in the key's workspace, a subquery SQLite and PostgreSQL evaluate once.
_BRAND_VISIBLE = exists(select(Brand.id).where(col(Brand.id) == bindparam("brand_id"),
                                               col(Brand.workspace_id) == bindparam("workspace_id")))
_LIST = keyset.PageQuery(core_select(*SUMMARY_COLUMNS).where(col(ContentItem.brand_id) == bindparam("brand_id"),
                                                             _BRAND_VISIBLE),
                         ContentItem.updated_at, ContentItem.id)


async def list_content_items(call: Call, req: ListContentItemsRequest) -> sc.ContentItemPage:
    """Keyset pages on (updated_at, id) using ix_content_items_brand_updated: the cost of a page does not grow
    with the number of items. The cursor is the last item's ID, as the spec fixes it."""
    assert call.caller is not None
    mine = {"brand_id": call.brand_id, "workspace_id": call.caller.workspace_id}
    position = None
    if req.cursor is not None:
        await call.require_brand()  # an unknown cursor is 400 only for a brand the key sees
        position = await _LIST.position_of_id(call.session, mine, req.cursor)
        if position is None:
            raise keyset.invalid_cursor("The cursor is not the ID of a content item of this brand; read the list "
                                        "again without cursor.")
    # Without a cursor the page (its labels in the same row, the brand's visibility in its WHERE) is the one
    # read: a statement on its own, no transaction; after a cursor's position it runs in the position's
    # transaction (one snapshot).
    rows, has_more = await _LIST.page(call.session, mine, desc=req.order_direction == "desc", limit=req.limit,
                                      position=position, alone=True)
    if not rows:
        await call.require_brand()  # no item, or no brand this key sees: only the brand check tells
    self_link = links_to("get_content_item", "content_item_id", brand_id=call.brand_id)  # every row's brand
    return sc.ContentItemPage.model_validate({
        "items": [summary(r, labels_of_column(r.label_ids), self_link) for r in rows], "has_more": has_more,
        "next_cursor": rows[-1].id if has_more else None})


# -- update and delete (older routes) --------------------------------------------------------------------------

PATH_FIELDS = {"brand_id", "content_item_id"}


async def update_content_item(call: Call, req: Any) -> sc.ContentItem:  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model (fields spread from a table)
    item = await load_item(call.session, call.brand_id, req.content_item_id)
    provided = set(req.model_fields_set) - PATH_FIELDS
    if not provided:
        raise ApiError("MALFORMED_REQUEST", "Send at least one field to change.",
                       issues=[issue("$", "EMPTY_UPDATE", "Send at least one field of the content item to change.")])
    labels = (await label_ids_of(call.session, [item.id]))[item.id]
    draft = Draft.from_request(req, Draft.from_row(item, labels))
    check(draft)
    await require_unused(call.session, call.brand_id, item.id, action="edited")
    await check_data(call.session, call.brand_id, draft, provided)
    if "name" in provided:
        item.name = req.name.strip()
    draft.apply(item)
    item.updated_at = call.now
    call.session.add(item)
    if "label_ids" in provided:
        await set_labels(call.session, item, draft.label_ids)
    await call.session.flush()
    return released(item, draft.label_ids)


async def delete_item(call: Call, item: ContentItem) -> None:
    """Delete a draft and its label links; media and everything else stay."""
    await call.session.exec(delete(ContentItemLabel).where(col(ContentItemLabel.content_item_id) == item.id))
    await call.session.delete(item)
    await call.session.flush()


async def delete_content_item(call: Call, req: sc.ContentItemPath) -> sc.DeletedContentItem:
    item = await load_item(call.session, call.brand_id, req.content_item_id)
    await require_unused(call.session, call.brand_id, item.id, action="deleted")
    await delete_item(call, item)
    return sc.DeletedContentItem(id=item.id, outcome="deleted")


# -- TikTok privacy ----------------------------------------------------------------------------------------------

PROVIDER_MESSAGES = {
    "reauth_required": "The TikTok account must be reconnected before its privacy options can be read.",
    "malformed": "TikTok returned privacy options that cannot be trusted; nothing was changed.",
    "rejected": "TikTok refused to list privacy options; nothing was changed.",
    "rate_limited": "TikTok is rate limiting this account; nothing was changed.",
}


def _provider_error(exc: ProviderError) -> ApiError:
    code, action = provider_error(exc.kind)
    message = PROVIDER_MESSAGES.get(
        exc.kind, "TikTok could not be reached to check the privacy options; nothing was changed.")
    headers = {"Retry-After": str(max(1, int(exc.retry_after or 1)))} if exc.retryable else {}
    issues = [issue("$.integration_id", "REAUTH_REQUIRED", message)] if exc.kind == "reauth_required" else []
    return ApiError(code, message, issues=issues, next_action=action, headers=headers,
                    retryable=exc.retryable if code == "DEPENDENCY_UNAVAILABLE" else None)


async def update_tiktok_privacy(call: Call, req: sc.UpdateTikTokPrivacyRequest) -> sc.TikTokPrivacyResult:
    item = await load_item(call.session, call.brand_id, req.content_item_id)
    integration = (await call.session.exec(select(Integration).where(
        Integration.id == req.integration_id, Integration.brand_id == call.brand_id))).first()
    issues = Issues()
    if integration is None:
        issues.add("$.integration_id", "NOT_FOUND", "No integration of this brand has this ID.")
    elif integration.platform != "tiktok":
        issues.add("$.integration_id", "NOT_TIKTOK", f"This integration is a {integration.platform} account; "
                                                     "send the draft's TikTok integration.")
    elif req.integration_id not in item.intended_integration_ids:
        issues.add("$.integration_id", "NOT_INTENDED_TARGET", "This TikTok integration is not among the draft's "
                   "intended_integration_ids; add it with update_content_item first.")
    if "tiktok_settings" not in item.settings:
        issues.add("$.content_item_id", "NO_TIKTOK_SETTINGS", "The draft has no tiktok_settings; add them with "
                   "update_content_item first.")
    issues.raise_if_any()
    assert integration is not None
    await require_unused(call.session, call.brand_id, item.id, action="changed")

    # The fresh, target-specific check, immediately before the write: never a cached or stale choice.
    account = account_of(integration, call.rt.settings)
    try:
        with outbound(call.rt.settings):
            options = await call.rt.provider(integration.provider).dynamic_options(
                account, kind="creator_privacy_levels", refresh=False)
    except ProviderError as exc:
        raise _provider_error(exc) from None
    offered = [o.get("value") for o in options.options if isinstance(o, dict)]
    if req.privacy_level not in offered:
        raise ApiError(
            "DOMAIN_VALIDATION_FAILED", "This privacy level is not offered by the TikTok account right now; the "
            "draft is unchanged. Read the target's dynamic options and send one of them.",
            issues=[issue("$.privacy_level", "STALE_OPTION", "Not among the account's current privacy options.")],
            details={"allowed_values": [v for v in offered if isinstance(v, str)][:20]},
            next_action="get_target_dynamic_options")

    settings = dict(item.settings["tiktok_settings"])
    outcome = "unchanged"
    if settings.get("privacy_level") != req.privacy_level:
        settings["privacy_level"] = req.privacy_level
        item.settings = {**item.settings, "tiktok_settings": settings}
        item.updated_at = call.now
        call.session.add(item)
        await call.session.flush()
        outcome = "updated"
    brand_id = item.brand_id
    return sc.TikTokPrivacyResult.model_validate({
        "content_item_id": item.id, "brand_id": item.brand_id, "integration_id": integration.id,
        "privacy_level": req.privacy_level, "outcome": outcome, "next_action": {"action": "preflight_content"},
        "links": _drop_none({
            "self": link("update_tiktok_privacy", content_item_id=item.id, brand_id=brand_id),
            "preflight": link(PREFLIGHT, content_item_id=item.id, brand_id=brand_id),
            "dynamic_options": link(DYNAMIC_OPTIONS, integration_id=integration.id, brand_id=brand_id),
        }),
    })


CONTENT_ITEM_PATH = "/v1/brands/{brand_id}/content-items"
ONE_ITEM_PATH = CONTENT_ITEM_PATH + "/{content_item_id}"

ENDPOINTS = [
    Endpoint(
        name="create_content_item", method="POST", path=CONTENT_ITEM_PATH, toolset="content",
        handler=create_content_item, request=sc.CreateContentItemRequest, response=sc.CreatedContentItem,
        scopes=("posts:write",), idempotency="optional", status=201, brand_row=False,
        title="Create content item (draft)",
        summary="Create a draft: name, copy, platform settings, intended integrations, labels and "
                "ready media.",
        guidance="Strict body: unknown keys, unsorted or duplicate IDs are refused, never "
                 "corrected. Publishes nothing. Next: preflight_content.",
    ),
    Endpoint(
        name="get_content_item", method="GET", path=ONE_ITEM_PATH, toolset="content", handler=get_content_item,
        request=sc.ContentItemPath, response=sc.ContentItemRead, scopes=("posts:read",), title="Get content item",
        summary="Read one content item in the shape creation returns, with links to its targets and to preflight.",
        guidance="Read-only: never changes the item. links.preflight appears when it has intended "
                 "integrations.",
    ),
    Endpoint(
        name="list_content_items", method="GET", path=CONTENT_ITEM_PATH, toolset="content",
        handler=list_content_items, request=ListContentItemsRequest, response=sc.ContentItemPage,
        scopes=("posts:read",), brand_row=False, brand_proved_by_handler=True, title="List content items",
        summary="List a brand's content items as summaries, most recently updated first, in "
                "cursor pages.",
        guidance="Read-only; does not say whether an item is scheduled (list_drafts lists unused "
                 "ones).",
    ),
    Endpoint(
        name="update_content_item", method="PATCH", path=ONE_ITEM_PATH, toolset="content",
        handler=update_content_item, request=sc.UpdateContentItemRequest, response=sc.ContentItem,
        scopes=("posts:write",), title="Update content item",
        summary="Change only the given fields of an unused draft; null clears a nullable field.",
        guidance="Validated as on creation; publishes nothing. Scheduled or published: 409. "
                 "Preflight again after.",
    ),
    Endpoint(
        name="delete_content_item", method="DELETE", path=ONE_ITEM_PATH, toolset="content",
        handler=delete_content_item, request=sc.ContentItemPath, response=sc.DeletedContentItem,
        scopes=("posts:write",), destructive=True, title="Delete content item",
        summary="Delete an unused content item; its media stay in the media library.",
        guidance="Refused (409) once the item is scheduled, queued or published. Never removes a post from a "
                 "social account.",
    ),
    Endpoint(
        name="update_tiktok_privacy", method="PUT", path=ONE_ITEM_PATH + "/tiktok-privacy", toolset="content",
        handler=update_tiktok_privacy, request=sc.UpdateTikTokPrivacyRequest, response=sc.TikTokPrivacyResult,
        scopes=("posts:write",), open_world=True, title="Update TikTok privacy",
        summary="Set a draft's tiktok_settings.privacy_level after a live check of the target's "
                "options.",
        guidance="Changes nothing else; a stale value fails. The same value again: outcome "
                 "unchanged. Next: preflight_content.",
    ),
]
