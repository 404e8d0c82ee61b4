"""Brand context and the older brand routes."""

from __future__ import annotations

from sqlmodel import col, select

from schemas import brands as out
from schemas.brands import BrandPath, ListBrandsRequest
from schemas.time import iso
from storage.pagination import older_page
from storage.tables.brands import Brand
from tools.endpoint import Call, Endpoint, Reply
from tools.links import link


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


async def list_brands(call: Call, req: ListBrandsRequest) -> Reply[list[out.Brand]]:
    caller = call.caller
    assert caller is not None
    query = select(Brand).where(Brand.workspace_id == caller.workspace_id)
    if caller.brand_ids is not None:
        query = query.where(col(Brand.id).in_(sorted(caller.brand_ids)))
    rows, pagination = await older_page(call.session, query.order_by(col(Brand.created_at), Brand.id), req.page, req.limit)
    return Reply(data=[out.Brand.model_validate(older_brand(b)) for b in rows], pagination=pagination)


async def get_brand(call: Call, req: BrandPath) -> out.Brand:
    assert call.brand is not None
    return out.Brand.model_validate(older_brand(call.brand))


ENDPOINTS = [
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
