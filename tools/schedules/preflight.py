"""`POST .../content-items/{content_item_id}/preflight`: the write-free readiness check.

`run_preflight` loads the facts (content item, the brand's integrations and media, the plan) in the caller's
transaction, runs the pure rules engine and builds the spec's Preflight result with a fingerprint of the
state it checked. The Schedule routes call the same function and refuse blocked requests with
422 PREFLIGHT_BLOCKED. Preflight creates nothing, enqueues nothing, calls no provider, changes no updated_at.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.errors import ApiError
from schemas.media import MEDIA_KINDS
from schemas.platforms import VALIDATION_VERSION
from schemas.preflight import (
    ContentFacts,
    EngineResult,
    IntegrationFacts,
    MediaFacts,
    PlanFacts,
    PreflightFacts,
    PreflightRequest,
    PreflightResult,
)
from schemas.scopes import PUBLISH_SCOPE
from schemas.states import APPROVAL_STATUSES
from schemas.time import iso, parse_timestamp
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.media import Media
from tools.content.rules import label_ids_of, load_item, media_ids, released
from tools.content.service import checked_item
from tools.context import plans
from tools.endpoint import Call, Endpoint
from tools.links import link
from tools.schedules.rules_engine import evaluate


@dataclass
class Preflight:
    """What a preflight found: the API payload and the engine result behind it."""

    payload: PreflightResult
    result: EngineResult

    @property
    def can_schedule(self) -> bool:
        return self.result.can_schedule

    def blocked_error(self) -> ApiError:
        """422 PREFLIGHT_BLOCKED with the same issues a preflight call returns."""
        return ApiError("PREFLIGHT_BLOCKED", f"Preflight found {len(self.result.blockers)} blocker(s); nothing was "
                                             "scheduled.",
                        issues=[i.to_dict() for i in self.result.blockers],
                        details={"fingerprint": self.payload.fingerprint,
                                 "validation_version": self.payload.validation_version})


def _normalised_time(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return iso(parse_timestamp(text))
    except ValueError:
        return None


def _fingerprint(state: dict[str, Any]) -> str:
    canonical = json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def text_max_of(i: Integration) -> int | None:
    """The account's own text limit, stored by its adapter at connect time (Mastodon's max_characters)."""
    found = (i.provider_state or {}).get("max_characters") if i.provider != "sandbox" else None
    return found if isinstance(found, int) and 0 < found <= 100_000 else None


def media_facts(m: Media) -> MediaFacts:
    kind = m.kind if m.kind in MEDIA_KINDS else None  # the column holds image, video or null
    return MediaFacts(id=m.id, status=m.status, kind=kind, content_type=m.content_type, width=m.width,
                      height=m.height, duration=m.duration, size=m.size, sha256=m.sha256)


async def run_preflight(session: AsyncSession, *, brand: Brand, content_item_id: str, integration_ids: list[str],
                        scheduled_at: str | datetime | None, approval_status: str | None, scopes: frozenset[str],
                        now: datetime, upgrade_url: str, unsaved: tuple[Any, list[str]] | None = None) -> Preflight:
    """`unsaved`: (item, label IDs) of a composition checked as a create would check it but not stored
    (tools.content.service.checked_item), judged in place of the stored item; everything else is the same."""
    if unsaved is None:
        item = await load_item(session, brand.id, content_item_id)
        labels = (await label_ids_of(session, [item.id]))[item.id]
    else:
        item, labels = unsaved
    item_json = released(item, labels).model_dump(mode="json")
    content = ContentFacts.from_content_item(item_json)

    integrations = (await session.exec(select(Integration).where(
        Integration.brand_id == brand.id, col(Integration.id).in_(integration_ids)))).all() if integration_ids else []
    referenced = media_ids(item)
    if item.thumbnail_media_id and item.thumbnail_media_id not in referenced:
        referenced.append(item.thumbnail_media_id)
    media = (await session.exec(select(Media).where(
        Media.brand_id == brand.id, col(Media.id).in_(referenced)))).all() if referenced else []
    connected = (await session.exec(select(Integration.platform).where(
        Integration.brand_id == brand.id).distinct())).all()
    plan = await plans.plan_of(session, brand)

    when = iso(scheduled_at) if isinstance(scheduled_at, datetime) else scheduled_at
    if approval_status is not None and approval_status not in APPROVAL_STATUSES:
        raise ValueError(f"unknown approval_status {approval_status}")  # stored values are these; a bug otherwise
    facts = PreflightFacts(
        content=content,
        integration_ids=tuple(integration_ids),
        integrations={i.id: IntegrationFacts(id=i.id, platform=i.platform, status=i.status,
                                             display_name=i.display_name, text_max=text_max_of(i))
                      for i in integrations},
        media={m.id: media_facts(m) for m in media},
        now=now, scheduled_at=when, approval_status=approval_status, scopes=scopes,
        plan=PlanFacts(plan_id=plan.id, max_networks_per_brand=plan.limits["networks_per_brand"],
                       connected_networks=tuple(sorted(connected)), upgrade_url=upgrade_url),
    )
    result = evaluate(facts)

    request = {"integration_ids": list(integration_ids), "scheduled_at": _normalised_time(when),
               "approval_status": approval_status}
    # Everything the verdict depends on, and the verdict itself (which captures time-dependent rules such
    # as "scheduled in the past" without making the fingerprint change every millisecond).
    state = {
        "validation_version": result.validation_version,
        "content_item": item_json,
        "integrations": [facts.integrations[i].model_dump(mode="json") if i in facts.integrations else None
                         for i in integration_ids],
        "media": sorted((f.model_dump(mode="json") for f in facts.media.values()), key=lambda m: m["id"]),
        "request": request,
        "publish_authority": PUBLISH_SCOPE in scopes,
        "plan": facts.plan.model_dump(mode="json") if facts.plan else None,
        "verdict": sorted((i.code, i.integration_id or "", i.field_path) for i in result.issues),
    }
    links: dict[str, Any] = {
        "self": link("preflight_content", brand_id=brand.id, content_item_id=item.id),
        "targets": link("list_targets", brand_id=brand.id),
    }
    if result.can_schedule:
        extra = (PUBLISH_SCOPE,) if approval_status == "approved" else ()
        links["create_schedule"] = link("create_schedule", extra_scopes=extra, brand_id=brand.id)
    payload = PreflightResult.model_validate({
        "validation_version": result.validation_version,
        "fingerprint": _fingerprint(state),
        "content_item": {"id": item.id, "brand_id": item.brand_id, "updated_at": iso(item.updated_at)},
        "request": request,
        "policy": {"scheduling_allowed": result.scheduling_allowed},
        "can_schedule": result.can_schedule,
        "target_count": len(integration_ids),
        "targets": [t.model_dump(mode="json", exclude={"issues_omitted"}) for t in result.targets],
        "issues": [i.to_dict() for i in result.issues],
        "blockers": [i.to_dict() for i in result.blockers],
        "warnings": [i.to_dict() for i in result.warnings],
        "next_actions": result.next_actions,
        "links": links,
    })
    return Preflight(payload, result)


async def preflight_unsaved(session: AsyncSession, *, caller: Any, brand: Brand, draft_request: Any,
                            integration_ids: list[str], scheduled_at: str | None, approval_status: str | None,
                            now: datetime, upgrade_url: str, content_item_id: str | None = None) -> Preflight:
    """Preflight of a composition that is not stored (the console's live check as the user types): the create
    request (`CreateContentItemRequest`, validated) is checked as `create_content_item` checks it, then judged
    by the same `run_preflight` as a stored item. Writes nothing. `content_item_id`: the draft being edited."""
    item, draft = await checked_item(session, caller, brand.id, draft_request, now, item_id=content_item_id)
    return await run_preflight(session, brand=brand, content_item_id=item.id, integration_ids=integration_ids,
                               scheduled_at=scheduled_at, approval_status=approval_status, scopes=caller.scopes,
                               now=now, upgrade_url=upgrade_url, unsaved=(item, draft.label_ids))


async def require_schedulable(call: Call, *, content_item_id: str, integration_ids: list[str],
                              scheduled_at: str | datetime, approval_status: str,
                              scopes: frozenset[str] | None = None) -> Preflight:
    """The Schedule admission rule (create, approve, reschedule, publish runs): 422 PREFLIGHT_BLOCKED unless
    preflight finds the request schedulable. `scopes` defaults to the caller's."""
    assert call.brand is not None
    found = await run_preflight(
        call.session, brand=call.brand, content_item_id=content_item_id, integration_ids=integration_ids,
        scheduled_at=scheduled_at, approval_status=approval_status,
        scopes=call.scopes if scopes is None else scopes, now=call.now, upgrade_url=call.rt.settings.upgrade_url)
    if not found.can_schedule:
        raise found.blocked_error()
    return found


async def preflight_content(call: Call, req: PreflightRequest) -> PreflightResult:
    assert call.brand is not None
    found = await run_preflight(
        call.session, brand=call.brand, content_item_id=req.content_item_id, integration_ids=req.integration_ids,
        scheduled_at=req.scheduled_at, approval_status=req.approval_status, scopes=call.scopes, now=call.now,
        upgrade_url=call.rt.settings.upgrade_url)
    return found.payload


assert VALIDATION_VERSION  # the version preflight reports is the registry's

ENDPOINTS = [
    Endpoint(
        name="preflight_content", method="POST", path="/v1/brands/{brand_id}/content-items/{content_item_id}/preflight",
        toolset="schedules", handler=preflight_content, scopes=("schedule:write",), request=PreflightRequest,
        response=PreflightResult, write_free=True, title="Preflight a content item",
        summary="Check whether a draft can be scheduled to the given targets at the given time, "
                "each problem with a field path and a repair.",
        guidance="Write-free: creates nothing. can_schedule false: apply each blocker's "
                 "repair_action, preflight again; true: follow links.create_schedule.",
    ),
]
