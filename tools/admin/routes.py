"""Admin marketing: prospect brands, website scans, the content pipeline, the sample pack and claim links.

Every route needs an owner with an admin role (ADMIN_ROLES) and the admin scope (admin:read for reads,
admin:marketing for writes), and acts only on prospect brands (brands created by create_prospect_brand):
any other brand answers 404, as a brand outside the key's restriction does. Once a prospect is claimed,
writes answer 409. The flow, every choice and every limit: docs/admin.md.
"""

from __future__ import annotations

from sqlmodel import func, select

from schemas import admin as out
from schemas.admin import (
    BrandPath,
    ClaimLinkRequest,
    CreateProspectRequest,
    SamplePackRequest,
    StartScanRequest,
    UpdateProspectRequest,
)
from schemas.errors import ApiError, Issues
from schemas.scopes import ADMIN_ROLES
from schemas.time import iso
from storage.tables.admin import AdminProspect
from tools.admin import claim as admin_claim
from tools.admin import pipeline as admin_pipeline
from tools.admin import scan as admin_scan
from tools.admin.prospects import (
    admin_set,
    advance,
    default_posting,
    find_prospect,
    posting,
    prospect_brand,
    prospect_links,
    refuse_if_claimed,
)
from tools.endpoint import Call, Endpoint, Reply
from tools.links import link
from tools.operator import actions as operator
from tools.services import fetch

READ = {"roles": ADMIN_ROLES, "scopes": ("admin:read",), "toolset": "admin"}
WRITE = {"roles": ADMIN_ROLES, "scopes": ("admin:marketing",), "toolset": "admin"}
NEVER = "Never publishes, schedules nothing and calls no social network."


# -- requests ---------------------------------------------------------------------------------------------------


# -- helpers ----------------------------------------------------------------------------------------------------


def _url_issue(issues: Issues, path: str, url: str) -> None:
    """Syntax, scheme, credentials and IP spelling (no DNS): the fetcher's own URL rules."""
    try:
        fetch.parse_url(url)
    except fetch.FetchError as exc:
        issues.add(path, exc.code, exc.message)


# -- prospects --------------------------------------------------------------------------------------------------

async def create_prospect_brand(call: Call, req: CreateProspectRequest) -> Reply[out.ProspectBrand]:
    caller = call.caller
    assert caller is not None
    if caller.brand_ids is not None:
        raise ApiError("BRAND_ACCESS_DENIED", "A key restricted to some brands could not reach the brand it creates; "
                                              "use an admin key with access to every brand.")
    count = (await call.session.exec(select(func.count()).select_from(AdminProspect).where(
        AdminProspect.workspace_id == caller.workspace_id))).one()
    if count >= out.PROSPECTS_PER_WORKSPACE_MAX:
        raise ApiError("DOMAIN_VALIDATION_FAILED", f"This workspace already has {out.PROSPECTS_PER_WORKSPACE_MAX} "
                                                   "prospect brands, the most it may hold.",
                       details={"max": out.PROSPECTS_PER_WORKSPACE_MAX, "used": count})
    workspace = await operator.default_workspace(call.session, caller.workspace_id)
    brand = await operator.create_brand(call.session, call.now, workspace, req.name.strip(),
                                        description=req.description or None)
    prospect = AdminProspect(brand_id=brand.id, workspace_id=brand.workspace_id, created_by=caller.user_id,
                             image_posting=default_posting(), video_posting=default_posting(), scanned_fields=[],
                             created_at=call.now, updated_at=call.now)
    call.session.add(prospect)
    await call.session.flush()
    return Reply(status=201, data=prospect_brand(brand, prospect))


async def update_prospect_brand(call: Call, req: UpdateProspectRequest) -> out.ProspectBrand:
    brand = call.brand
    assert brand is not None
    prospect = await find_prospect(call.session, brand, lock=True)
    refuse_if_claimed(prospect)
    issues = Issues()
    if req.onboarding_step == "claimed":
        issues.add("$.onboarding_step", "NOT_ALLOWED", "Only claiming (the claim link) sets `claimed`.")
    cfg = req.config
    cfg_given = cfg.model_fields_set if cfg is not None else set()
    if cfg is not None and cfg.website is not None:
        _url_issue(issues, "$.config.website", cfg.website)
    issues.raise_if_any("MALFORMED_REQUEST")

    now = call.now
    if req.onboarding_step is not None and req.onboarding_step != prospect.onboarding_step:
        prospect.onboarding_step = req.onboarding_step
    if cfg is not None:
        if "mode" in cfg_given:
            prospect.mode = cfg.mode
        if "website" in cfg_given:
            brand.website = cfg.website
            if cfg.website:
                advance(prospect, "website_added", now)
        if "business_category" in cfg_given:
            brand.category = cfg.business_category.strip() if cfg.business_category else None
            admin_set(prospect, "category")
        if "timezone" in cfg_given:
            brand.timezone = cfg.timezone
        for name in ("image_posting", "video_posting"):
            part = getattr(cfg, name)
            if part is not None:
                setattr(prospect, name, {**posting(getattr(prospect, name)),
                                         **{k: getattr(part, k) for k in part.model_fields_set}})
    prospect.updated_at = brand.updated_at = now
    call.session.add_all([prospect, brand])
    await call.session.flush()
    return prospect_brand(brand, prospect)


# -- website scans ----------------------------------------------------------------------------------------------

async def start_website_scan(call: Call, req: StartScanRequest) -> Reply[out.WebsiteScan]:
    brand = call.brand
    assert brand is not None
    prospect = await find_prospect(call.session, brand, lock=True)
    refuse_if_claimed(prospect)
    url = req.website_url or brand.website
    if not url:
        raise ApiError("DOMAIN_VALIDATION_FAILED", "There is no website to scan: send website_url, or set "
                                                   "config.website with update_prospect_brand.",
                       issues=[{"code": "REQUIRED", "field_path": "$.website_url",
                                "message": "Send a public http(s) URL."}])
    running = await admin_scan.latest_scan(call.session, brand)
    if running is not None and running.status in ("queued", "running"):
        if not admin_scan.is_stale(running, call.now):
            raise ApiError("CONFLICT", "A website scan of this brand is already under way; poll get_website_scan "
                                       "until it is done, then start another if needed.",
                           next_action="get_website_scan", details={"scan_id": running.id})
        admin_scan.fail_remaining(running, call.now, "STALLED", "The scan stopped making progress and was "
                                                                "replaced by a new scan.")
    await admin_scan.check_site_url(call.rt.settings, url)
    brand.website, brand.updated_at = url, call.now
    advance(prospect, "website_added", call.now)
    scan = await admin_scan.create_scan(call.session, call.now, brand, url)
    call.wake_worker_after_commit()
    return Reply(status=201, data=await admin_scan.scan_out(call.session, call.rt.settings, scan))


async def get_website_scan(call: Call, req: BrandPath) -> out.WebsiteScan:
    brand = call.brand
    assert brand is not None
    await find_prospect(call.session, brand)
    scan = await admin_scan.latest_scan(call.session, brand)
    if scan is None:
        raise ApiError("NOT_FOUND", "This prospect brand has no website scan yet; start one with start_website_scan.",
                       next_action="start_website_scan")
    return await admin_scan.scan_out(call.session, call.rt.settings, scan)


# -- status -----------------------------------------------------------------------------------------------------

async def get_prospect_status(call: Call, req: BrandPath) -> out.ProspectStatus:
    brand = call.brand
    assert brand is not None
    session = call.session
    prospect = await find_prospect(session, brand)
    scan = await admin_scan.latest_scan(session, brand)
    run = await admin_pipeline.latest_run(session, brand)
    checks = await admin_pipeline.check_samples(session, call.rt.settings, brand)
    claim = await admin_claim.latest_link(session, brand)
    return out.ProspectStatus.model_validate({
        "brand_id": brand.id, "name": brand.name, "prospect": True, "onboarding_step": prospect.onboarding_step,
        "mode": prospect.mode,
        "website_scan": await admin_scan.scan_out(session, call.rt.settings, scan) if scan else None,
        "generation": {"status": run.status if run else "not_started",
                       "run": admin_pipeline.run_out(run) if run else None},
        "automation": {
            "pipeline_runs": await admin_pipeline.run_count(session, brand),
            "last_pipeline_run_at": iso(run.created_at) if run else None,
            "sample_content_items": len(checks), "usable_samples": sum(c.usable for c in checks),
            "samples_max": out.SAMPLES_PER_BRAND_MAX,
            "completed_media": await admin_pipeline.completed_media_count(session, brand),
        },
        "claim": {
            "status": "claimed" if prospect.claimed_at else "unclaimed", "claimed_at": iso(prospect.claimed_at),
            "link": None if claim is None else {
                "status": admin_claim.link_state(claim, call.now), "token_hint": claim.token_hint,
                "expires_at": iso(claim.expires_at), "created_at": iso(claim.created_at),
                "used_at": iso(claim.used_at)},
        },
        "links": prospect_links(brand.id),
    })


# -- content pipeline -------------------------------------------------------------------------------------------

async def start_content_pipeline(call: Call, req: BrandPath) -> Reply[out.PipelineResult]:
    brand = call.brand
    assert brand is not None and call.caller is not None
    session = call.session
    prospect = await find_prospect(session, brand, lock=True)
    refuse_if_claimed(prospect)
    if prospect.mode != "automatic":
        raise ApiError("DOMAIN_VALIDATION_FAILED", "The content pipeline runs only for brands in automatic mode. Set "
                                                   "config.mode to `automatic` with update_prospect_brand, then call "
                                                   "this again.",
                       issues=[{"code": "MODE_MANUAL", "field_path": "$.config.mode",
                                "message": "The brand's mode is `manual`."}],
                       next_action="update_prospect_brand")
    links = {"status": link("get_prospect_status", brand_id=brand.id),
             "sample_pack": link("get_marketing_sample_pack", brand_id=brand.id)}
    current = await admin_pipeline.latest_run(session, brand)
    if current is not None and current.status in admin_pipeline.ACTIVE:
        return Reply(status=200, data=out.PipelineResult.model_validate({
            "queued": False, "reason": f"A run is already {current.status}; no new run was queued. Read "
                                       "get_prospect_status until it finishes.",
            "run": admin_pipeline.run_out(current), "links": links}))
    scan = await admin_scan.latest_scan(session, brand)
    if scan is None:
        raise ApiError("DOMAIN_VALIDATION_FAILED", "Scan the brand's website first (start_website_scan): samples are "
                                                   "written from what the scan finds and use the images it imports.",
                       next_action="start_website_scan")
    if scan.status not in admin_scan.SETTLED:
        raise ApiError("CONFLICT", "The website scan is still running; poll get_website_scan until it is done, "
                                   "then start the pipeline.", next_action="get_website_scan",
                       details={"scan_id": scan.id})
    if await admin_pipeline.sample_count(session, brand) >= out.SAMPLES_PER_BRAND_MAX:
        raise ApiError("DOMAIN_VALIDATION_FAILED", f"This brand already has {out.SAMPLES_PER_BRAND_MAX} samples, the "
                                                   "most it may hold; delete some drafts to make room.",
                       details={"max": out.SAMPLES_PER_BRAND_MAX})
    run = await admin_pipeline.create_run(session, call.now, brand, call.caller)
    call.wake_worker_after_commit()
    return Reply(status=201, data=out.PipelineResult.model_validate({
        "queued": True, "reason": f"A run was queued; it writes up to {out.SAMPLES_PER_RUN} sample drafts.",
        "run": admin_pipeline.run_out(run), "links": links}))


# -- sample pack ------------------------------------------------------------------------------------------------

async def _not_ready_reason(call: Call, prospect: AdminProspect, checks: list[admin_pipeline.SampleCheck],
                            limit: int) -> str:
    brand = call.brand
    assert brand is not None
    usable = sum(c.usable for c in checks)
    if checks:
        no_caption = sum(not c.has_caption for c in checks)
        no_media = sum(not c.downloadable for c in checks)
        parts = [f"{n} {what}" for n, what in ((no_caption, "without a caption"),
                                               (no_media, "without downloadable media")) if n]
        detail = f" ({', '.join(parts)})" if parts else ""
        return (f"Only {usable} of the {limit} samples asked for are usable{detail}. Start the content pipeline "
                "again to add samples, or ask for fewer with `limit`.")
    run = await admin_pipeline.latest_run(call.session, brand)
    if run is not None and run.status in admin_pipeline.ACTIVE:
        return "No samples yet: the content pipeline is running; read this again when get_prospect_status says " \
               "it finished."
    if run is not None and run.status == "failed":
        return f"No samples: the last pipeline run failed: {run.error_message}"
    scan = await admin_scan.latest_scan(call.session, brand)
    if scan is None:
        return "No samples yet: scan the brand's website (start_website_scan), then start the content pipeline."
    if scan.status not in admin_scan.SETTLED:
        return "No samples yet: the website scan is running; then start the content pipeline."
    if prospect.mode != "automatic":
        return "No samples yet: set config.mode to automatic (update_prospect_brand), then start the content " \
               "pipeline."
    return "No samples yet: start the content pipeline (start_content_pipeline)."


async def get_marketing_sample_pack(call: Call, req: SamplePackRequest) -> out.SamplePack:
    brand = call.brand
    assert brand is not None
    prospect = await find_prospect(call.session, brand)
    checks = await admin_pipeline.check_samples(call.session, call.rt.settings, brand)
    usable = [c.sample for c in checks if c.usable]
    ready = len(usable) >= req.limit
    reason = (f"{req.limit} usable samples with captions and downloadable media are ready." if ready
              else await _not_ready_reason(call, prospect, checks, req.limit))
    return out.SamplePack.model_validate({
        "ready": ready, "reason": reason, "limit": req.limit,
        "brand": {"id": brand.id, "name": brand.name, "website": brand.website},
        "samples": usable[: req.limit],
        "links": {"status": link("get_prospect_status", brand_id=brand.id),
                  "content_pipeline": link("start_content_pipeline", brand_id=brand.id)}})


# -- claim links ------------------------------------------------------------------------------------------------

async def create_claim_link(call: Call, req: ClaimLinkRequest) -> Reply[out.ClaimLink]:
    brand = call.brand
    assert brand is not None and call.caller is not None
    prospect = await find_prospect(call.session, brand, lock=True)
    refuse_if_claimed(prospect)
    row, token = await admin_claim.create_link(call.session, call.now, brand, call.caller.user_id, req.ttl_hours)
    advance(prospect, "claim_link_sent", call.now)
    return Reply(status=201, data=out.ClaimLink.model_validate({
        "claim_url": admin_claim.claim_url(call.rt.settings.public_url, token), "token_hint": row.token_hint,
        "expires_at": iso(row.expires_at), "created_at": iso(row.created_at), "single_use": True,
        "links": {"status": link("get_prospect_status", brand_id=brand.id)}}))


ENDPOINTS = [
    Endpoint(
        name="create_prospect_brand", method="POST", path="/v1/admin/brands", handler=create_prospect_brand,
        request=CreateProspectRequest, response=out.ProspectBrand, status=201, idempotency="optional",
        title="Create prospect brand", **WRITE,
        summary="Create a prospect brand in this key's workspace (onboarding step `created`, manual mode) for "
                "marketing tooling.",
        guidance="Needs an admin owner and admin:marketing, and a key not restricted to brands. Next: "
                 f"update_prospect_brand (website, automatic mode), then start_website_scan. {NEVER}",
    ),
    Endpoint(
        name="update_prospect_brand", method="PATCH", path="/v1/admin/brands/{brand_id}",
        handler=update_prospect_brand, request=UpdateProspectRequest, response=out.ProspectBrand,
        title="Update prospect brand", **WRITE,
        summary="Set a prospect brand's onboarding step or configuration: mode, website, business category, "
                "time zone and image and video cross-posting.",
        guidance="Only fields sent change. Ordinary brands are 404; claimed prospects 409. Setting the website "
                 f"fetches nothing: start_website_scan does. {NEVER}",
    ),
    Endpoint(
        name="start_website_scan", method="POST", path="/v1/admin/brands/{brand_id}/website-scan",
        handler=start_website_scan, request=StartScanRequest, response=out.WebsiteScan, status=201,
        idempotency="optional", open_world=True, title="Start website scan", **WRITE,
        summary="Store the prospect's website URL and start a background scan that extracts its title, "
                "description, logo, colours and category into the brand and imports its images as media.",
        guidance="Private, loopback and metadata addresses are refused before anything is stored. One scan at a "
                 f"time (409 while one runs). Next: get_website_scan until done is true. {NEVER}",
    ),
    Endpoint(
        name="get_website_scan", method="GET", path="/v1/admin/brands/{brand_id}/website-scan",
        handler=get_website_scan, request=BrandPath, response=out.WebsiteScan, title="Get website scan", **READ,
        summary="Read the latest website scan of a prospect brand with each step's progress and what it found.",
        guidance="Read-only. Poll until done is true: every step completed, or one failed (its error says why).",
    ),
    Endpoint(
        name="get_prospect_status", method="GET", path="/v1/admin/brands/{brand_id}/status",
        handler=get_prospect_status, request=BrandPath, response=out.ProspectStatus, title="Get prospect status",
        **READ,
        summary="Read a prospect brand's onboarding step, mode, website scan progress, content generation status, "
                "automation counts and claim state.",
        guidance="Read-only; never shows a claim token.",
    ),
    Endpoint(
        name="start_content_pipeline", method="POST", path="/v1/admin/brands/{brand_id}/content-pipeline",
        handler=start_content_pipeline, request=BrandPath, response=out.PipelineResult, status=201,
        idempotency="optional", title="Start content pipeline", **WRITE,
        summary="Queue a content pipeline run that writes sample drafts from the website scan, each with a "
                "completed media item of the brand; says whether a new run was queued.",
        guidance="Automatic mode only (else 422); needs a finished website scan. When a run is already queued or "
                 "running it is returned with queued false. Drafts only: "
                 f"{NEVER} Next: get_marketing_sample_pack.",
    ),
    Endpoint(
        name="get_marketing_sample_pack", method="GET", path="/v1/admin/brands/{brand_id}/marketing-sample-pack",
        handler=get_marketing_sample_pack, request=SamplePackRequest, response=out.SamplePack,
        title="Get marketing sample pack", **READ,
        summary="Read a prospect's marketing sample pack: up to `limit` usable sample drafts with captions, "
                "hashtags, titles and downloadable media, and whether the pack is ready.",
        guidance="Read-only. ready is true only with `limit` usable samples; reason says what is missing.",
    ),
    Endpoint(
        name="create_claim_link", method="POST", path="/v1/admin/brands/{brand_id}/claim-link",
        handler=create_claim_link, request=ClaimLinkRequest, response=out.ClaimLink, status=201,
        title="Create claim link", **WRITE,
        summary="Create a single-use link the prospect opens to claim the brand, expiring after ttl_hours or "
                "never; earlier unused links stop working.",
        guidance="The token is shown once (only its hash is kept), so this route takes no idempotency key: "
                 f"each call makes a new link. {NEVER}",
    ),
]
