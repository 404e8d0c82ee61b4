"""Prospect brands: lookup, onboarding steps, the scan-written brand fields, and the prospect's public shape."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import admin as out
from schemas.errors import ApiError
from schemas.time import iso
from storage.tables.admin import AdminProspect
from storage.tables.brands import Brand
from tools.brands import older_brand
from tools.links import link

# Brand columns a website scan may write (see `write_scanned`).
SCANNED_FIELDS = ("description", "category", "logo_url", "colors")


def default_posting() -> dict[str, Any]:
    return {"cross_post": False, "cross_posts_per_week": 0}


async def find_prospect(session: AsyncSession, brand: Brand, *, lock: bool = False) -> AdminProspect:
    """The prospect row of a brand, or 404: admin marketing routes act on prospect brands only."""
    query = select(AdminProspect).where(AdminProspect.brand_id == brand.id,
                                        AdminProspect.workspace_id == brand.workspace_id)
    if lock:
        # One writer per prospect at a time (PostgreSQL; SQLite writers are serial already): "is a scan or a
        # run already under way" and the write that starts one cannot interleave.
        query = query.with_for_update()
    prospect = (await session.exec(query)).first()
    if prospect is None:
        raise ApiError("NOT_FOUND", "This brand is not a prospect brand; admin marketing routes act only on brands "
                                    "created with create_prospect_brand.", next_action="create_prospect_brand")
    return prospect


def refuse_if_claimed(prospect: AdminProspect) -> None:
    if prospect.claimed_at is not None:
        raise ApiError("CONFLICT", "This prospect brand was claimed; its onboarding is over and admin marketing "
                                   "writes no longer apply. Read it with get_prospect_status.",
                       next_action="get_prospect_status")


def advance(prospect: AdminProspect, step: str, now: datetime) -> None:
    """Move the onboarding step forward to `step` (never back)."""
    if out.ONBOARDING_STEPS.index(step) > out.ONBOARDING_STEPS.index(prospect.onboarding_step):
        prospect.onboarding_step = step
        prospect.updated_at = now


def admin_set(prospect: AdminProspect, field: str) -> None:
    """An admin set this brand field: later scans keep it."""
    if field in prospect.scanned_fields:
        prospect.scanned_fields = [f for f in prospect.scanned_fields if f != field]


def write_scanned(brand: Brand, prospect: AdminProspect, field: str, value: Any, now: datetime) -> bool:
    """Write a fact found by a website scan, unless an admin set the field: a scan fills an empty field or
    replaces what an earlier scan wrote. Returns whether it was written."""
    assert field in SCANNED_FIELDS
    current = getattr(brand, field)
    if current and field not in prospect.scanned_fields:
        return False
    if current != value:
        setattr(brand, field, value)
        brand.updated_at = now
    if field not in prospect.scanned_fields:
        prospect.scanned_fields = [*prospect.scanned_fields, field]
    return True


def posting(value: dict[str, Any] | None) -> dict[str, Any]:
    return {**default_posting(), **(value or {})}


def config(brand: Brand, prospect: AdminProspect) -> dict[str, Any]:
    return {"mode": prospect.mode, "website": brand.website, "business_category": brand.category,
            "timezone": brand.timezone, "image_posting": posting(prospect.image_posting),
            "video_posting": posting(prospect.video_posting)}


def prospect_links(brand_id: str) -> dict[str, Any]:
    return {"status": link("get_prospect_status", brand_id=brand_id),
            "update": link("update_prospect_brand", brand_id=brand_id),
            "website_scan": link("start_website_scan", brand_id=brand_id),
            "content_pipeline": link("start_content_pipeline", brand_id=brand_id),
            "sample_pack": link("get_marketing_sample_pack", brand_id=brand_id),
            "claim_link": link("create_claim_link", brand_id=brand_id)}


def prospect_brand(brand: Brand, prospect: AdminProspect) -> out.ProspectBrand:
    return out.ProspectBrand.model_validate({
        **older_brand(brand), "prospect": True, "onboarding_step": prospect.onboarding_step,
        "config": config(brand, prospect), "colors": list(brand.colors or []),
        "claimed_at": iso(prospect.claimed_at), "links": prospect_links(brand.id)})
