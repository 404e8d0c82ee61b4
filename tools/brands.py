"""Agent context, brand context and the older brand routes."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import bindparam
from sqlmodel import col, select

from schemas import brands as out
from schemas.brands import BrandPath, GetContextRequest, ListBrandsRequest
from schemas.scopes import DEFAULT_UNDISCLOSED, disclosed
from schemas.time import iso
from storage.pagination import older_page
from storage.statements import Query
from storage.tables.brands import Brand
from tools import catalogue
from tools.endpoint import Call, Endpoint, Reply
from tools.links import link, links_to


def _context_brands(restricted: bool):
    query = select(Brand.id, Brand.name).where(Brand.workspace_id == bindparam("workspace_id"))
    if restricted:
        query = query.where(col(Brand.id).in_(bindparam("brand_ids", expanding=True)))
    return Query(query.order_by(col(Brand.created_at), Brand.id).limit(out.CONTEXT_BRANDS_MAX + 1))


# Built once, for keys with every brand and keys restricted to some: building costs more than running it.
_CONTEXT_BRANDS = {restricted: _context_brands(restricted) for restricted in (False, True)}


def _brand_links() -> tuple[Callable[[str], dict], ...]:
    """A context brand's three links as `link(...)` builds them, from paths formatted once (`links_to`) per
    catalogue (found by identity, as tools/catalogue.py's `by_name`): each call lists up to 50 brands."""
    found = catalogue.endpoints()
    last = _BRAND_LINKS[0]
    if last is None or last[0] is not found:
        last = _BRAND_LINKS[0] = (found, tuple(links_to(name, "brand_id") for name in
                                               ("list_targets", "import_media", "create_content_item")))
    return last[1]


_BRAND_LINKS: list[tuple[tuple, tuple[Callable[[str], dict], ...]] | None] = [None]


async def get_context(call: Call, req: GetContextRequest) -> Reply:
    caller = call.caller
    assert caller is not None
    params: dict = {"workspace_id": caller.workspace_id}
    if caller.brand_ids is not None:
        params["brand_ids"] = sorted(caller.brand_ids)
    rows = await _CONTEXT_BRANDS[caller.brand_ids is not None].rows_alone(call.session, params)
    has_more = len(rows) > out.CONTEXT_BRANDS_MAX
    targets, media_imports, content_items = _brand_links()
    brands = [{"id": brand_id, "name": name, "links": {"targets": targets(brand_id), "media_imports": media_imports(brand_id),
                                                      "content_items": content_items(brand_id)}}
              for brand_id, name in rows[:out.CONTEXT_BRANDS_MAX]]
    # Built as out.AgentContext dumps it (field order, `method` only off GET): the hot route skips the model's
    # validate-and-dump round trip; the tests check the payload against the response schema.
    return Reply(plain=True, data={
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


def brand_context(brand: Brand, public_base: str | None = None) -> dict:
    published = brand.link_in_bio_status == "published" and brand.link_in_bio_handle
    links = {"self": link("get_brand_context", brand_id=brand.id),
             "labels": link("list_labels", brand_id=brand.id),
             "targets": link("list_targets", brand_id=brand.id)}
    return {
        "brand": {"id": brand.id, "name": brand.name, "description": brand.description, "website": brand.website,
                  "category": brand.category, "timezone": brand.timezone},
        "identity": {"logo_url": brand.logo_url, "logo_light_url": brand.logo_light_url,
                     "logo_dark_url": brand.logo_dark_url, "colors": brand.colors or None,
                     "title_font": brand.title_font, "body_font": brand.body_font},
        "voice": {
            "custom_instructions": brand.voice_instructions, "profile": brand.voice_profile,
            "strategy": brand.voice_strategy,
            "default_call_to_action": ({"text": brand.default_cta_text, "url": brand.default_cta_url}
                                       if brand.default_cta_text or brand.default_cta_url else None),
        },
        "link_in_bio": {
            "status": brand.link_in_bio_status, "handle": brand.link_in_bio_handle,
            "url": f"{(public_base or '').rstrip('/')}/@{brand.link_in_bio_handle}" if published else None,
            "published_at": iso(brand.link_in_bio_published_at),
        },
        "links": links,
    }


async def get_brand_context(call: Call, req: BrandPath) -> out.BrandContext:
    assert call.brand is not None
    return out.BrandContext.model_validate(brand_context(call.brand, call.rt.settings.public_url))


def older_brand(brand: Brand) -> dict:
    return {
        "id": brand.id, "name": brand.name, "description": brand.description, "logo_url": brand.logo_url,
        "logo_light_url": brand.logo_light_url, "logo_dark_url": brand.logo_dark_url, "timezone": brand.timezone,
        "website": brand.website, "business_category": brand.category, "brand_kit": brand.brand_kit,
        "content_preferences": brand.content_preferences, "image_posting": brand.image_posting,
        "video_posting": brand.video_posting, "created_at": iso(brand.created_at), "updated_at": iso(brand.updated_at),
    }


async def list_brands(call: Call, req: ListBrandsRequest) -> Reply:
    caller = call.caller
    assert caller is not None
    query = select(Brand).where(Brand.workspace_id == caller.workspace_id)
    if caller.brand_ids is not None:
        query = query.where(col(Brand.id).in_(sorted(caller.brand_ids)))
    rows, pagination = await older_page(call.session, query.order_by(col(Brand.created_at), Brand.id), req.page, req.limit)
    return Reply(data=[older_brand(b) for b in rows], pagination=pagination)


async def get_brand(call: Call, req: BrandPath) -> dict:
    assert call.brand is not None
    return older_brand(call.brand)


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
    Endpoint(
        name="get_brand_context", handler=get_brand_context, method="GET", path="/v1/brands/{brand_id}/context", toolset="brands",
        scopes=("posts:read",), request=BrandPath, response=out.BrandContext, title="Get brand context",
        summary="Read a brand's voice and identity: description, timezone, colours, fonts, voice "
                "profile, strategy and call to action.",
        guidance="Read-only. Write drafts in this voice.",
    ),
    Endpoint(
        name="list_brands", handler=list_brands, method="GET", path="/v1/brands", toolset="brands", scopes=("brands:read",),
        request=ListBrandsRequest, response=out.Brand, list_shape="older", title="List brands",
        summary="List the brands this key may access (older page/limit shape, oldest first).",
        guidance="Read-only. get_context lists the same brands with links.",
    ),
    Endpoint(
        name="get_brand", handler=get_brand, method="GET", path="/v1/brands/{brand_id}", toolset="brands", scopes=("brands:read",),
        request=BrandPath, response=out.Brand, title="Get brand",
        summary="Read one brand in the older brand shape (brand kit, content preferences, posting cadence).",
        guidance="Read-only. For voice and identity use get_brand_context.",
    ),
]
