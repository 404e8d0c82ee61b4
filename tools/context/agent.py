"""Agent context: `GET /v1/context`, who this key is and the brands it may act on, each with links."""

from __future__ import annotations

from sqlalchemy import bindparam
from sqlmodel import col, select

from schemas import brands as out
from schemas.brands import GetContextRequest
from schemas.scopes import DEFAULT_UNDISCLOSED, disclosed
from storage.statements import Query
from storage.tables.brands import Brand
from tools.endpoint import Call, Endpoint
from tools.links import link, links_to_each


def _context_brands(restricted: bool):
    query = select(Brand.id, Brand.name).where(Brand.workspace_id == bindparam("workspace_id"))
    if restricted:
        query = query.where(col(Brand.id).in_(bindparam("brand_ids", expanding=True)))
    return Query(query.order_by(col(Brand.created_at), Brand.id).limit(out.CONTEXT_BRANDS_MAX + 1))


# A context brand's links: list targets, import media, create a content item.
BRAND_LINKS = ("list_targets", "import_media", "create_content_item")

# Built once, for keys with every brand and keys restricted to some: building costs more than running it.
_CONTEXT_BRANDS = {restricted: _context_brands(restricted) for restricted in (False, True)}


async def get_context(call: Call, req: GetContextRequest) -> out.AgentContext:
    caller = call.caller
    assert caller is not None
    params: dict = {"workspace_id": caller.workspace_id}
    if caller.brand_ids is not None:
        params["brand_ids"] = sorted(caller.brand_ids)
    rows = await _CONTEXT_BRANDS[caller.brand_ids is not None].rows_alone(call.session, params)
    has_more = len(rows) > out.CONTEXT_BRANDS_MAX
    targets, media_imports, content_items = links_to_each(BRAND_LINKS, "brand_id")
    brands = [{"id": brand_id, "name": name, "links": {"targets": targets(brand_id), "media_imports": media_imports(brand_id),
                                                      "content_items": content_items(brand_id)}}
              for brand_id, name in rows[:out.CONTEXT_BRANDS_MAX]]
    # One validation of the whole payload (pydantic-core builds the nested models from plain values).
    return out.AgentContext.model_validate({
        "actor": {"user_id": caller.user_id},
        "workspace": {"id": caller.workspace_id, "name": caller.workspace_name},
        "api_key": {
            "id": caller.key_id, "name": caller.key_name,
            "scopes": disclosed(caller.scopes, effective=req.scope_disclosure == "effective"),
            "brand_access": "restricted" if caller.brand_ids is not None else "all",
            "brand_ids": sorted(caller.brand_ids) if caller.brand_ids is not None else [],
        },
        "brands": brands,
        "brands_has_more": has_more,
        "links": {"platform_capabilities": link("get_platform_capabilities"),
                  "list_brands": link("list_brands") if has_more else None},
    })


ENDPOINTS = [
    Endpoint(
        name="get_context", handler=get_context, method="GET", path="/v1/context", toolset="context",
        summary="Read this key's authority (actor, workspace, scopes) and the brands it may act "
                "on, each with links.",
        guidance=f"Call this first; changes nothing. Then follow a brand's links. The default scopes omit "
                 f"{' and '.join(DEFAULT_UNDISCLOSED)} even when held: before taking a link's required_scopes as "
                 "missing, read again with scope_disclosure=effective.",
        request=GetContextRequest, response=out.AgentContext, title="Get agent context", any_key=True,
    ),
]
