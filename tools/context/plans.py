"""Plans and entitlements: `GET /v1/plans`, and the checks other areas call before they add something a plan
counts (`check_limit`) or use a paid feature (`require_feature`).

Plan limits fail with 422 PLAN_LIMIT_REACHED, `details` {limit, used, max, upgrade_url, plan_id,
upgrade_plans}; paid features with 403 ENTITLEMENT_REQUIRED, `details` {feature, plan_id, upgrade_url,
upgrade_plans}. See docs/engagement.md, "Plans and limits".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import distinct
from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import plans as catalogue_data
from schemas.errors import ApiError
from schemas.plans import BRAND_LIMITS, LIMIT_NAMES, PLANS, Plan, PlansCatalogue, get_plan, plan_out
from schemas.requests import NoInput
from schemas.settings import Settings
from storage.tables.accounts import Workspace
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.media import Media
from tools.endpoint import Call, Endpoint

# Handlers pass `call.rt.settings.upgrade_url`; operator commands and jobs without settings get its default.
DEFAULT_UPGRADE_URL: str = Settings.model_fields["upgrade_url"].default

_LIMIT_TEXT = {
    "social_accounts": "connected social accounts in this workspace",
    "networks_per_brand": "networks connected to this brand",
    "media_items_per_brand": "media items in this brand",
    "media_storage_bytes_per_brand": "bytes of media stored in this brand",
}


@dataclass(frozen=True)
class Usage:
    limit: str
    used: int
    max: int | None  # None: no limit

    @property
    def over(self) -> bool:
        return self.max is not None and self.used > self.max


async def _workspace_of(session: AsyncSession, target: Workspace | Brand, *, lock: bool) -> Workspace:
    workspace_id = target.id if isinstance(target, Workspace) else target.workspace_id
    query = select(Workspace).where(Workspace.id == workspace_id)
    if lock:
        # Serialises concurrent limit checks of one workspace on PostgreSQL (SQLite writers are serial already),
        # so two requests cannot both take the last free slot.
        query = query.with_for_update()
    ws = (await session.exec(query)).first()
    if ws is None:
        raise ApiError("NOT_FOUND", "Workspace not found.")
    return ws


async def plan_of(session: AsyncSession, target: Workspace | Brand) -> Plan:
    if isinstance(target, Workspace):
        return get_plan(target.plan_id)
    return get_plan((await _workspace_of(session, target, lock=False)).plan_id)


async def used(session: AsyncSession, target: Workspace | Brand, limit: str) -> int:
    """Current usage of one limit. Brand limits need a Brand."""
    if limit == "social_accounts":
        workspace_id = target.id if isinstance(target, Workspace) else target.workspace_id
        return (await session.exec(select(func.count()).select_from(Integration)
                                   .where(Integration.workspace_id == workspace_id))).one()
    if not isinstance(target, Brand):
        raise ValueError(f"limit {limit} applies within a brand: pass the Brand")
    if limit == "networks_per_brand":
        return (await session.exec(select(func.count(distinct(col(Integration.platform))))
                                   .where(Integration.brand_id == target.id))).one()
    live_media = (Media.brand_id == target.id, Media.status != "failed")
    if limit == "media_items_per_brand":
        return (await session.exec(select(func.count()).select_from(Media).where(*live_media))).one()
    if limit == "media_storage_bytes_per_brand":
        return int((await session.exec(select(func.coalesce(func.sum(Media.size), 0)).where(*live_media))).one() or 0)
    raise ValueError(f"unknown limit {limit}")


async def check_limit(session: AsyncSession, target: Workspace | Brand, limit: str, adding: int = 1,
                      *, upgrade_url: str | None = None) -> Usage:
    """Refuse (422 PLAN_LIMIT_REACHED) when adding `adding` units would exceed the workspace plan's `limit`.

    Call it in the same transaction, just before the write that adds the units. `target` is the Workspace
    for `social_accounts`, the Brand for the per-brand limits (a Brand also works for `social_accounts`).
    """
    if limit not in LIMIT_NAMES:
        raise ValueError(f"unknown limit {limit}; known: {', '.join(LIMIT_NAMES)}")
    if limit in BRAND_LIMITS and not isinstance(target, Brand):
        raise ValueError(f"limit {limit} applies within a brand: pass the Brand")
    ws = await _workspace_of(session, target, lock=True)
    plan = get_plan(ws.plan_id)
    maximum = plan.limits[limit]
    count = await used(session, target, limit)
    if adding > 0 and maximum is not None and count + adding > maximum:
        upgrades = [p for p in catalogue_data.upgrade_choices(limit, count + adding) if p != plan.id]
        where = "" if limit == "social_accounts" else f" (brand {target.id})"
        raise ApiError(
            "PLAN_LIMIT_REACHED",
            f"The {plan.name} plan allows {maximum} {_LIMIT_TEXT[limit]}{where}; {count} are used. "
            + ("Remove one, or upgrade the workspace plan." if upgrades else "Remove one to make room."),
            details={"limit": limit, "used": count, "max": maximum, "upgrade_url": upgrade_url or DEFAULT_UPGRADE_URL,
                     "plan_id": plan.id, "upgrade_plans": upgrades},
        )
    return Usage(limit, count, maximum)


async def require_feature(session: AsyncSession, target: Workspace | Brand, feature: str,
                          *, upgrade_url: str | None = None) -> Plan:
    """Refuse (403 ENTITLEMENT_REQUIRED) unless the workspace plan includes `feature` (e.g. "autopilot")."""
    if feature not in catalogue_data.FEATURE_NAMES:
        raise ValueError(f"unknown feature {feature}")
    plan = await plan_of(session, target)
    if not plan.features.get(feature):
        raise ApiError(
            "ENTITLEMENT_REQUIRED",
            f"The {plan.name} plan does not include {feature}; nothing was changed. Upgrade the workspace plan "
            "to use it.",
            details={"feature": feature, "plan_id": plan.id, "upgrade_url": upgrade_url or DEFAULT_UPGRADE_URL,
                     "upgrade_plans": catalogue_data.plans_with(feature)},
        )
    return plan


async def workspace_usage(session: AsyncSession, ws: Workspace, plan: Plan | None = None) -> list[Usage]:
    """Every limit of `plan` (default: the workspace's) against current use; per-brand limits report the
    brand that uses the most. Bounded by the workspace's brands (one grouped query per brand limit)."""
    plan = plan or get_plan(ws.plan_id)
    out = [Usage("social_accounts", await used(session, ws, "social_accounts"), plan.limits["social_accounts"])]
    networks = (await session.exec(
        select(func.count(distinct(col(Integration.platform)))).where(Integration.workspace_id == ws.id)
        .group_by(Integration.brand_id).order_by(func.count(distinct(col(Integration.platform))).desc()).limit(1))).first()
    out.append(Usage("networks_per_brand", int(networks or 0), plan.limits["networks_per_brand"]))
    media = (await session.exec(
        select(func.count(), func.coalesce(func.sum(Media.size), 0))
        .where(Media.workspace_id == ws.id, Media.status != "failed")
        .group_by(Media.brand_id).order_by(func.count().desc()).limit(1))).first()
    out.append(Usage("media_items_per_brand", int(media[0]) if media else 0, plan.limits["media_items_per_brand"]))
    biggest = (await session.exec(
        select(func.coalesce(func.sum(Media.size), 0)).where(Media.workspace_id == ws.id, Media.status != "failed")
        .group_by(Media.brand_id).order_by(func.coalesce(func.sum(Media.size), 0).desc()).limit(1))).first()
    out.append(Usage("media_storage_bytes_per_brand", int(biggest or 0), plan.limits["media_storage_bytes_per_brand"]))
    return out


async def list_plans(call: Call, req: NoInput) -> PlansCatalogue:
    return PlansCatalogue.model_validate({
        "plans": [plan_out(p) for p in PLANS], "currency": "USD",
        "default_plan_id": catalogue_data.DEFAULT_PLAN_ID, "upgrade_url": call.rt.settings.upgrade_url,
    })


ENDPOINTS = [
    Endpoint(
        name="list_plans", method="GET", path="/v1/plans", toolset="context", handler=list_plans, public=True,
        response=PlansCatalogue, title="List plans",
        summary="Read the public plans catalogue: prices, credits, limits and paid features.",
        guidance="Changes nothing. A PLAN_LIMIT_REACHED or ENTITLEMENT_REQUIRED error names what "
                 "to compare here.",
    ),
]


async def set_plan(session: AsyncSession, now: datetime, ws: Workspace, plan_id: str) -> tuple[str, list[Usage]]:
    """Move a workspace to another plan (the operator's billing action). Returns the previous plan ID and the
    limits the workspace now exceeds: existing accounts and media stay usable; new ones are refused until
    usage is back under the limit."""
    if plan_id not in catalogue_data.BY_ID:
        raise ValueError(f"plan must be one of {', '.join(catalogue_data.PLAN_IDS)}")
    previous = ws.plan_id
    if previous != plan_id:
        ws.plan_id = plan_id
        ws.updated_at = now
        await session.flush()
    over = [u for u in await workspace_usage(session, ws) if u.over]
    return previous, over
