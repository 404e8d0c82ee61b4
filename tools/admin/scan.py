"""Website scans of prospect brands: the steps, the worker jobs, and the scan's public shape.

Steps, in order (each pending -> running -> completed | failed, with a safe error when failed):
  fetch_site        GET the page with the SSRF-safe fetcher (tools.services.fetch; every redirect re-checked)
  extract_identity  title and description (tools.admin.site)
  extract_colors    theme colour and inline CSS colours
  categorise        the keyword classifier
  import_logo       the logo imported as a media item (the media import path: fetched, probed, served)
  import_images     up to IMAGES_MAX page images imported the same way (sample content needs media)

Jobs: `admin.website_scan` runs the first four steps in one pass and creates one media item per image to
import, each with an `admin.scan_import` job. That job runs the media processing of the media area
(`tools.media.processing.process_media`, the very handler of media imports) for its item, then settles the
scan's import steps under a row lock. The scan ends `completed` when every step completed, `failed` when
one failed; facts found before a failure are kept.
"""

from __future__ import annotations

import logging
from contextlib import aclosing
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import admin as out
from schemas.errors import ApiError
from schemas.ids import new_id
from schemas.time import iso
from storage import queue
from storage.queue import RetryLater
from storage.tables.admin import AdminProspect, AdminWebsiteScan
from storage.tables.brands import Brand
from storage.tables.jobs import Job
from storage.tables.media import READY_STATUSES, Media
from tools.admin import site as admin_site
from tools.admin.prospects import advance, write_scanned
from tools.links import link
from tools.media import processing as media_processing
from tools.media.items import (
    asset_url,
    check_media_quota,
    content_type_from_name,
    filename_from_url,
    import_policy,
    new_asset_id,
)
from tools.runtime import Runtime
from tools.services import fetch

log = logging.getLogger("socialpub.admin")

SCAN_JOB = "admin.website_scan"
IMPORT_JOB = "admin.scan_import"
SCAN_ATTEMPTS = 3
IMPORT_ATTEMPTS = 5
IMAGES_MAX = 3
SITE_MAX_BYTES = 5 * 1024 * 1024  # a page announcing more is refused; only PARSE_MAX_BYTES are read
SITE_TOTAL_SECONDS = 30.0
SITE_MAX_REDIRECTS = 5
# A scan still queued or running this long after its last change is considered abandoned (a worker died on
# its last attempt): a new scan may start, and the old one is marked failed.
SCAN_STALE_AFTER = timedelta(minutes=30)
SETTLED = ("completed", "failed")
USER_AGENT = "socialpub-fetch/1 (+website scan)"


def site_policy(settings: Any) -> fetch.FetchPolicy:
    return fetch.FetchPolicy.from_settings(
        settings, max_bytes=SITE_MAX_BYTES, allowed_content_types=frozenset({"text/html", "application/xhtml+xml"}),
        require_content_length=False, total_timeout=SITE_TOTAL_SECONDS, max_redirects=SITE_MAX_REDIRECTS,
        headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml"})


# -- steps ------------------------------------------------------------------------------------------------------

def new_steps() -> list[dict[str, Any]]:
    return [{"name": name, "status": "pending", "summary": None, "error": None, "started_at": None,
             "finished_at": None} for name in out.SCAN_STEPS]


def _set(scan: AdminWebsiteScan, name: str, status: str, now: datetime, *, summary: str | None = None,
         error: tuple[str, str] | None = None) -> None:
    steps = [dict(s) for s in scan.steps]  # a new list, so the JSON column is seen as changed
    for step in steps:
        if step["name"] == name:
            step["status"] = status
            if status == "running" or step["started_at"] is None:
                step["started_at"] = step["started_at"] or iso(now)
            if status in SETTLED:
                step["finished_at"] = iso(now)
                step["summary"] = summary
                step["error"] = {"code": error[0], "message": error[1][:500]} if error else None
    scan.steps = steps
    scan.updated_at = now


def _status(scan: AdminWebsiteScan, name: str) -> str:
    return next(s["status"] for s in scan.steps if s["name"] == name)


def _finish_if_done(scan: AdminWebsiteScan, prospect: AdminProspect | None, now: datetime) -> None:
    statuses = [s["status"] for s in scan.steps]
    if any(s in ("pending", "running") for s in statuses):
        return
    scan.status = "failed" if "failed" in statuses else "completed"
    scan.finished_at = scan.updated_at = now
    if scan.status == "completed" and prospect is not None:
        advance(prospect, "website_scanned", now)


def fail_remaining(scan: AdminWebsiteScan, now: datetime, code: str, message: str) -> None:
    """The first unfinished step fails with (code, message); the steps after it fail as not run."""
    first = True
    for step in list(scan.steps):
        if step["status"] in SETTLED:
            continue
        if first:
            _set(scan, step["name"], "failed", now, error=(code, message))
            first = False
        else:
            _set(scan, step["name"], "failed", now, error=("NOT_RUN", "Not run: an earlier step failed."))
    scan.status = "failed"
    scan.finished_at = scan.updated_at = now


def is_stale(scan: AdminWebsiteScan, now: datetime) -> bool:
    return scan.status in ("queued", "running") and now - scan.updated_at >= SCAN_STALE_AFTER


# -- reading ----------------------------------------------------------------------------------------------------

async def latest_scan(session: AsyncSession, brand: Brand) -> AdminWebsiteScan | None:
    return (await session.exec(select(AdminWebsiteScan).where(
        AdminWebsiteScan.brand_id == brand.id, AdminWebsiteScan.workspace_id == brand.workspace_id)
        .order_by(col(AdminWebsiteScan.created_at).desc(), col(AdminWebsiteScan.id).desc()).limit(1))).first()


def scan_media_ids(scan: AdminWebsiteScan) -> list[str]:
    return ([scan.logo_media_id] if scan.logo_media_id else []) + list(scan.image_media_ids)


async def scan_out(session: AsyncSession, settings: Any, scan: AdminWebsiteScan) -> out.WebsiteScan:
    logo_url = None
    if scan.logo_media_id:
        logo = await session.get(Media, scan.logo_media_id)
        if logo is not None and logo.brand_id == scan.brand_id and logo.status in READY_STATUSES:
            logo_url = asset_url(settings, logo.asset_id)
    found = scan.found or {}
    return out.WebsiteScan.model_validate({
        "id": scan.id, "brand_id": scan.brand_id, "status": scan.status, "done": scan.status in SETTLED,
        "website_url": scan.website_url, "steps": scan.steps,
        "found": {"title": found.get("title"), "description": found.get("description"),
                  "category": found.get("category"), "colors": list(found.get("colors") or []),
                  "logo_media_id": scan.logo_media_id, "logo_url": logo_url, "media_ids": scan_media_ids(scan)},
        "created_at": iso(scan.created_at), "updated_at": iso(scan.updated_at), "started_at": iso(scan.started_at),
        "finished_at": iso(scan.finished_at),
        "links": {"self": link("get_website_scan", brand_id=scan.brand_id),
                  "status": link("get_prospect_status", brand_id=scan.brand_id)},
    })


# -- starting ---------------------------------------------------------------------------------------------------

async def check_site_url(settings: Any, url: str) -> None:
    """The synchronous SSRF check of the scan URL (before anything is stored)."""
    try:
        await fetch.check_url(url, site_policy(settings))
    except fetch.FetchError as exc:
        if exc.retryable:
            raise ApiError("DEPENDENCY_UNAVAILABLE", exc.message, headers={"Retry-After": "5"}) from None
        raise ApiError("DOMAIN_VALIDATION_FAILED", "The website URL was refused; nothing was stored or fetched. "
                                                   "See `issues`.",
                       issues=[{"code": exc.code, "field_path": "$.website_url", "message": exc.message}]) from None


async def create_scan(session: AsyncSession, now: datetime, brand: Brand, url: str) -> AdminWebsiteScan:
    scan = AdminWebsiteScan(id=new_id("scn"), workspace_id=brand.workspace_id, brand_id=brand.id, status="queued",
                            website_url=url, steps=new_steps(), found={}, image_media_ids=[], created_at=now,
                            updated_at=now)
    session.add(scan)
    await session.flush()
    await queue.enqueue(session, now, SCAN_JOB, {"scan_id": scan.id}, dedupe_key=f"admin-scan:{scan.id}",
                        max_attempts=SCAN_ATTEMPTS)
    return scan


# -- the scan job -----------------------------------------------------------------------------------------------

async def _load(session: AsyncSession, scan_id: str, *, lock: bool = True) -> AdminWebsiteScan | None:
    query = select(AdminWebsiteScan).where(AdminWebsiteScan.id == scan_id)
    if lock:
        query = query.with_for_update()
    return (await session.exec(query)).first()


async def _fetch_page(url: str, settings: Any) -> tuple[bytes, str]:
    data = bytearray()
    async with fetch.open_url(url, site_policy(settings)) as response:
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                data += chunk
                if len(data) >= admin_site.PARSE_MAX_BYTES:
                    break
        return bytes(data[: admin_site.PARSE_MAX_BYTES]), response.url


async def _importable(urls: list[str], settings: Any) -> tuple[list[str], fetch.FetchError | None]:
    """Candidates that pass the SSRF check now (a refused one would only make a failed media item), and the
    first refusal."""
    policy = import_policy(settings)
    ok: list[str] = []
    refused: fetch.FetchError | None = None
    for url in urls:
        try:
            await fetch.check_url(url, policy)
        except fetch.FetchError as exc:
            refused = refused or exc
            continue
        ok.append(url)
    return ok, refused


async def run_scan(rt: Runtime, job_id: str, payload: dict[str, Any]) -> None:
    scan_id = str(payload.get("scan_id", ""))
    async with rt.db.session(write=True) as session:
        scan = await _load(session, scan_id)
        if scan is None or scan.status not in ("queued", "running") or _status(scan, "fetch_site") in SETTLED:
            return  # settled, or past this job's part (a rerun after a lost lease)
        job = await session.get(Job, job_id)
        last_attempt = job is None or job.attempts >= job.max_attempts
        now = rt.clock.now()
        scan.status, scan.started_at = "running", scan.started_at or now
        _set(scan, "fetch_site", "running", now)
        url = scan.website_url
    try:
        html, final_url = await _fetch_page(url, rt.settings)
    except fetch.FetchError as exc:
        if exc.retryable and not last_attempt:
            raise RetryLater(exc.code) from None
        await _fail(rt, scan_id, exc.code, f"The website could not be fetched: {exc.message}")
        return
    try:
        page = admin_site.parse(html, final_url)
        found = admin_site.facts(page, IMAGES_MAX)
    except Exception:
        log.exception("parsing the page of scan %s failed", scan_id)
        await _fail(rt, scan_id, "PARSE_FAILED", "The page could not be read as HTML.", size=len(html))
        return
    logos = await _importable([found.logo_url] if found.logo_url else [], rt.settings)
    images = await _importable(list(found.image_urls), rt.settings)
    async with rt.db.session(write=True) as session:
        scan = await _load(session, scan_id)
        if scan is None or scan.status != "running" or _status(scan, "fetch_site") != "running":
            return
        await _record(rt, session, scan, found, len(html), logos, images)
    rt.wake_worker()


async def _fail(rt: Runtime, scan_id: str, code: str, message: str, *, size: int | None = None) -> None:
    async with rt.db.session(write=True) as session:
        scan = await _load(session, scan_id)
        if scan is None or scan.status in SETTLED:
            return
        now = rt.clock.now()
        if size is not None:
            _set(scan, "fetch_site", "completed", now, summary=f"Fetched {size} bytes of HTML.")
        fail_remaining(scan, now, code, message)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


Candidates = tuple[list[str], fetch.FetchError | None]


def _refused(exc: fetch.FetchError, what: str) -> tuple[str, str]:
    return exc.code, f"{what} was not imported: {exc.message}"


async def _record(rt: Runtime, session: AsyncSession, scan: AdminWebsiteScan, found: admin_site.Facts, size: int,
                  logos: Candidates, images_found: Candidates) -> None:
    now = rt.clock.now()
    brand = await session.get(Brand, scan.brand_id)
    prospect = await session.get(AdminProspect, scan.brand_id)
    assert brand is not None and prospect is not None
    _set(scan, "fetch_site", "completed", now, summary=f"Fetched {size} bytes of HTML.")

    named = [n for n, v in (("title", found.title), ("description", found.description)) if v]
    _set(scan, "extract_identity", "completed", now,
         summary=f"Found {' and '.join(named)}." if named else "The page has no title or description.")
    if found.description:
        write_scanned(brand, prospect, "description", found.description, now)

    _set(scan, "extract_colors", "completed", now,
         summary=f"Found {_plural(len(found.colors), 'colour')}." if found.colors else "No brand colours found.")
    if found.colors:
        write_scanned(brand, prospect, "colors", list(found.colors), now)

    _set(scan, "categorise", "completed", now, summary=f"Category: {found.category}.")
    write_scanned(brand, prospect, "category", found.category, now)
    scan.found = {"title": found.title, "description": found.description, "category": found.category,
                  "colors": list(found.colors), "keywords": list(found.keywords)}

    # Imports: an image this brand already holds (completed, same URL) is reused rather than fetched again.
    logo: Media | None = None
    logo_urls, logo_refused = logos
    if logo_urls:
        try:
            logo = await _import(rt, session, brand, scan, logo_urls[0], "logo", now)
        except ApiError as exc:
            _set(scan, "import_logo", "failed", now, error=(exc.code, exc.message or "The logo was not imported."))
    elif logo_refused is not None:
        _set(scan, "import_logo", "failed", now, error=_refused(logo_refused, "The logo"))
    else:
        _set(scan, "import_logo", "completed", now, summary="No logo found on the page.")
    if logo is not None:
        scan.logo_media_id = logo.id
        _set(scan, "import_logo", "running", now)

    images: list[Media] = []
    image_urls, image_refused = images_found
    refusal: ApiError | None = None
    for url in image_urls:
        try:
            images.append(await _import(rt, session, brand, scan, url, "image", now))
        except ApiError as exc:
            refusal = exc
            break  # the plan's media cap: the next ones would be refused too
    scan.image_media_ids = [m.id for m in images]
    if images:
        _set(scan, "import_images", "running", now)
    elif refusal is not None:
        _set(scan, "import_images", "failed", now, error=(refusal.code, refusal.message or "Not imported."))
    elif image_refused is not None:
        _set(scan, "import_images", "failed", now, error=_refused(image_refused, "No image"))
    else:
        _set(scan, "import_images", "completed", now, summary="No images found on the page.")
    await session.flush()
    await settle(rt, session, scan)


async def _import(rt: Runtime, session: AsyncSession, brand: Brand, scan: AdminWebsiteScan, url: str, role: str,
                  now: datetime) -> Media:
    """A media item for `url`: the brand's completed import of the same URL, or a new remote import with its
    processing job (the per-brand media caps of the plan apply: 422 PLAN_LIMIT_REACHED)."""
    existing = (await session.exec(select(Media).where(
        Media.brand_id == brand.id, Media.workspace_id == brand.workspace_id, Media.source_url == url,
        col(Media.status).in_(READY_STATUSES)).limit(1))).first()
    if existing is not None:
        return existing
    await check_media_quota(session, brand, None, rt.settings.upgrade_url)
    parsed, _, _ = fetch.parse_url(url)
    name = filename_from_url(parsed.path)
    media = Media(id=new_id("med"), workspace_id=brand.workspace_id, brand_id=brand.id, file_name=name,
                  content_type=content_type_from_name(name) or "application/octet-stream", status="processing",
                  source="remote_import", source_url=url, asset_id=new_asset_id(), label_ids=[],
                  description=f"Imported by website scan {scan.id} ({role}).", created_at=now, updated_at=now)
    session.add(media)
    await session.flush()
    await queue.enqueue(session, now, IMPORT_JOB, {"scan_id": scan.id, "media_id": media.id},
                        dedupe_key=f"admin-scan-import:{media.id}", max_attempts=IMPORT_ATTEMPTS)
    return media


# -- the import job and settling --------------------------------------------------------------------------------

async def run_import(rt: Runtime, job_id: str, payload: dict[str, Any]) -> None:
    """Process one scanned image with the media area's import processing, then settle the scan."""
    await media_processing.process_media(rt, job_id, {"media_id": str(payload.get("media_id", ""))})
    async with rt.db.session(write=True) as session:
        scan = await _load(session, str(payload.get("scan_id", "")))
        if scan is not None and scan.status == "running":
            await settle(rt, session, scan)


def _failure(media: Media) -> tuple[str, str]:
    return (media.failure_code or "PROCESSING_FAILED",
            f"{media.file_name}: {media.failure_reason or 'the file could not be imported.'}")


async def settle(rt: Runtime, session: AsyncSession, scan: AdminWebsiteScan) -> None:
    """Settle import steps whose media items have all settled; finish the scan when every step has."""
    now = rt.clock.now()
    wanted = scan_media_ids(scan)
    rows = (await session.exec(select(Media).where(col(Media.id).in_(wanted), Media.brand_id == scan.brand_id))).all() \
        if wanted else []
    media = {m.id: m for m in rows}
    brand = await session.get(Brand, scan.brand_id)
    prospect = await session.get(AdminProspect, scan.brand_id)
    assert brand is not None and prospect is not None

    if _status(scan, "import_logo") == "running" and scan.logo_media_id:
        logo = media.get(scan.logo_media_id)
        if logo is None:
            _set(scan, "import_logo", "failed", now, error=("MEDIA_MISSING", "The imported logo no longer exists."))
        elif logo.status in READY_STATUSES:
            write_scanned(brand, prospect, "logo_url", asset_url(rt.settings, logo.asset_id), now)
            _set(scan, "import_logo", "completed", now,
                 summary=f"Imported the logo ({logo.content_type}, {logo.size} bytes).")
        elif logo.status == "failed":
            _set(scan, "import_logo", "failed", now, error=_failure(logo))

    if _status(scan, "import_images") == "running":
        items = [media.get(i) for i in scan.image_media_ids]
        if all(m is None or m.status in SETTLED for m in items):
            done = [m for m in items if m is not None and m.status in READY_STATUSES]
            if done:
                _set(scan, "import_images", "completed", now,
                     summary=f"Imported {len(done)} of {_plural(len(items), 'image')}.")
            else:
                first = next((m for m in items if m is not None), None)
                _set(scan, "import_images", "failed", now,
                     error=_failure(first) if first else ("MEDIA_MISSING", "The imported images no longer exist."))
    _finish_if_done(scan, prospect, now)


JOBS = {SCAN_JOB: run_scan, IMPORT_JOB: run_import}
