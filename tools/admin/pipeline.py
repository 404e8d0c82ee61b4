"""The content pipeline of prospect brands: runs that write sample drafts, and the marketing sample pack.

A run creates up to `SAMPLES_PER_RUN` drafts (never beyond `SAMPLES_PER_BRAND_MAX` per brand), all in one
transaction, through the content area's create service (`tools.content.service.insert_item`, what
create_content_item runs), so every draft rule holds: the request model (strict copy, hashtags, IDs), cross-field rules, and the stored-data
rules (media of this brand, completed). Text is deterministic, built from the brand's facts (name,
description, category, website and the scan's keywords) by fixed templates: no external AI, no network.
Each draft attaches one completed media item of the brand, preferring the scan's imported images, then its
logo, then the brand's other completed media, in rotation. Instagram settings are always set (GRID_POST
for an image, REEL for a video); Facebook (FB_POST) too when cross-posting is on for that media kind.
A run creates no Schedule, calls no provider and publishes nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlmodel import col, func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import admin as out
from schemas import content as sc
from schemas.errors import ApiError
from schemas.ids import new_id
from schemas.platforms import PLATFORM_KEYS
from schemas.time import iso
from storage import queue
from storage.tables.admin import AdminPipelineRun, AdminProspect, AdminSample
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.media import READY_STATUSES, Media
from tools.admin import site as admin_site
from tools.admin.prospects import advance, posting
from tools.admin.scan import latest_scan, scan_media_ids
from tools.content.rules import media_ids
from tools.content.service import insert_item
from tools.media.items import asset_url
from tools.runtime import Runtime
from tools.services.auth import Caller

log = logging.getLogger("socialpub.admin")

PIPELINE_JOB = "admin.content_pipeline"
PIPELINE_ATTEMPTS = 3
OTHER_MEDIA_MAX = 20  # other completed media of the brand considered for samples
DESCRIPTION_USED_MAX = 1_000  # of the brand description, in captions (Instagram takes 2,200 in all)
TITLE_MAX = 100  # the shortest title limit of the platforms (Pinterest, YouTube)
HASHTAGS_MAX = 8
BRAND_TAG_MAX = 50
ACTIVE = ("queued", "running")


# -- text -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BrandFacts:
    name: str
    description: str
    first_sentence: str
    category: str | None
    website: str | None
    keywords: tuple[str, ...]

    @property
    def cta(self) -> str:
        return f"Learn more at {self.website}." if self.website else "Send us a message to learn more."

    @property
    def team(self) -> str:
        return f"the {self.category.lower()} team" if self.category and self.category != admin_site.OTHER.label \
            else "the team"


def _first_sentence(text: str) -> str:
    sentence = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]
    return sentence[:300]


def brand_facts(brand: Brand, found: dict[str, Any]) -> BrandFacts:
    description = (brand.description or found.get("description") or found.get("title")
                   or f"{brand.name} is glad to meet you.").strip()[:DESCRIPTION_USED_MAX]
    if description[-1:] not in ".!?":
        description += "."
    return BrandFacts(name=brand.name, description=description, first_sentence=_first_sentence(description),
                      category=brand.category, website=brand.website,
                      keywords=tuple(found.get("keywords") or ()))


@dataclass(frozen=True)
class Template:
    key: str
    title: Callable[[BrandFacts], str]
    caption: Callable[[BrandFacts], str]


# Ten angles, used in rotation: a brand's n-th sample uses TEMPLATES[n % 10].
TEMPLATES: tuple[Template, ...] = (
    Template("introduction", lambda f: f"Meet {f.name}", lambda f: f"Meet {f.name}. {f.description}\n\n{f.cta}"),
    Template("what_we_do", lambda f: "What we do",
             lambda f: f"What does {f.name} do? {f.first_sentence}\n\nWe would love to show you more. {f.cta}"),
    Template("behind_the_scenes", lambda f: f"Behind the scenes at {f.name}",
             lambda f: f"A look behind the scenes at {f.name}: the people and the care that go into everything we "
                       f"do.\n\n{f.cta}"),
    Template("why_us", lambda f: f"Why {f.name}",
             lambda f: f"Why people choose {f.name}: {f.first_sentence}\n\n{f.cta}"),
    Template("question", lambda f: "Tell us",
             lambda f: f"We would love to hear from you: what brings you to {f.name}? Tell us in the comments."
                       f"\n\n{f.cta}"),
    Template("weekend", lambda f: f"This weekend at {f.name}",
             lambda f: f"Plans for the weekend? Come and see what is new at {f.name}.\n\n{f.cta}"),
    Template("thanks", lambda f: "Thank you",
             lambda f: f"Thank you to everyone who supports {f.name}. You make what we do possible.\n\n{f.cta}"),
    Template("tip", lambda f: f"A tip from {f.name}",
             lambda f: f"A quick tip from {f.team} at {f.name}: small details make a big difference. Ask us "
                       f"anything.\n\n{f.cta}"),
    Template("new_here", lambda f: "New here?",
             lambda f: f"New to {f.name}? Here is the short version: {f.first_sentence}\n\n{f.cta}"),
    Template("visit", lambda f: f"Visit {f.name}",
             lambda f: f"{f.description}\n\nFind out more about {f.name} at {f.website}." if f.website
             else f"{f.description}\n\nGet in touch with {f.name} today."),
)


def _tag(text: str, limit: int) -> str:
    words = re.findall(r"[^\W_]+", text)
    return "".join(w[:1].upper() + w[1:] for w in words)[:limit]


def hashtags(facts: BrandFacts) -> list[str]:
    """Brand tag, the category's tags, then the scan's keywords: unique, at most HASHTAGS_MAX, no `#`."""
    category = admin_site.BY_LABEL.get(facts.category or "")
    tags = [_tag(facts.name, BRAND_TAG_MAX)]
    if category is not None:
        tags += list(category.hashtags)
    elif facts.category:
        tags.append(_tag(facts.category, BRAND_TAG_MAX).lower())
    tags += list(facts.keywords)
    seen: list[str] = []
    for tag in tags:
        if tag and tag.lower() not in {t.lower() for t in seen}:
            seen.append(tag)
    return seen[:HASHTAGS_MAX]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# -- runs -------------------------------------------------------------------------------------------------------

async def latest_run(session: AsyncSession, brand: Brand) -> AdminPipelineRun | None:
    return (await session.exec(select(AdminPipelineRun).where(
        AdminPipelineRun.brand_id == brand.id, AdminPipelineRun.workspace_id == brand.workspace_id)
        .order_by(col(AdminPipelineRun.created_at).desc(), col(AdminPipelineRun.id).desc()).limit(1))).first()


async def run_count(session: AsyncSession, brand: Brand) -> int:
    return (await session.exec(select(func.count()).select_from(AdminPipelineRun).where(
        AdminPipelineRun.brand_id == brand.id, AdminPipelineRun.workspace_id == brand.workspace_id))).one()


def run_out(run: AdminPipelineRun) -> out.PipelineRun:
    error = {"code": run.error_code, "message": run.error_message or ""} if run.error_code else None
    return out.PipelineRun.model_validate({
        "id": run.id, "status": run.status, "samples_created": run.samples_created, "error": error,
        "created_at": iso(run.created_at), "started_at": iso(run.started_at), "finished_at": iso(run.finished_at)})


async def create_run(session: AsyncSession, now: datetime, brand: Brand, caller: Caller) -> AdminPipelineRun:
    run = AdminPipelineRun(id=new_id("run"), workspace_id=brand.workspace_id, brand_id=brand.id, status="queued",
                           created_by=caller.user_id, key_id=caller.key_id, created_at=now, updated_at=now)
    session.add(run)
    await session.flush()
    await queue.enqueue(session, now, PIPELINE_JOB, {"run_id": run.id}, dedupe_key=f"admin-pipeline:{run.id}",
                        max_attempts=PIPELINE_ATTEMPTS)
    return run


async def _candidates(session: AsyncSession, brand: Brand) -> list[Media]:
    """Completed media for samples: the latest scan's images, then its logo, then the brand's other media."""
    scan = await latest_scan(session, brand)
    ordered = []
    if scan is not None:
        ordered = list(scan.image_media_ids) + ([scan.logo_media_id] if scan.logo_media_id else [])
    rows = (await session.exec(select(Media).where(
        Media.brand_id == brand.id, Media.workspace_id == brand.workspace_id,
        col(Media.status).in_(READY_STATUSES)).order_by(col(Media.created_at).desc(), col(Media.id).desc())
        .limit(OTHER_MEDIA_MAX + len(ordered)))).all()
    by_id = {m.id: m for m in rows}
    if scan is not None:
        missing = [i for i in scan_media_ids(scan) if i not in by_id]
        if missing:
            by_id.update({m.id: m for m in (await session.exec(select(Media).where(
                col(Media.id).in_(missing), Media.brand_id == brand.id, col(Media.status).in_(READY_STATUSES)))).all()})
    picked = [by_id[i] for i in ordered if i in by_id]
    picked += [m for m in rows if m not in picked]
    return [m for m in picked if (m.kind or m.content_type.split("/", 1)[0]) in ("image", "video")]


def _settings(media: Media, prospect: AdminProspect) -> dict[str, Any]:
    video = (media.kind or media.content_type.split("/", 1)[0]) == "video"
    out_ = {"instagram_settings": {"media_ids": [media.id], "post_type": "REEL" if video else "GRID_POST"}}
    if posting(prospect.video_posting if video else prospect.image_posting)["cross_post"]:
        out_["facebook_settings"] = {"media_ids": [media.id], "post_type": "FB_POST"}
    return out_


async def sample_count(session: AsyncSession, brand: Brand) -> int:
    """Samples whose draft still exists."""
    return (await session.exec(select(func.count()).select_from(AdminSample).join(
        ContentItem, col(ContentItem.id) == AdminSample.content_item_id).where(
        AdminSample.brand_id == brand.id, AdminSample.workspace_id == brand.workspace_id,
        ContentItem.brand_id == brand.id))).one()


async def run_pipeline(rt: Runtime, job_id: str, payload: dict[str, Any]) -> None:
    run_id = str(payload.get("run_id", ""))
    async with rt.db.session(write=True) as session:
        run = (await session.exec(select(AdminPipelineRun).where(AdminPipelineRun.id == run_id)
                                  .with_for_update())).first()
        if run is None or run.status not in ACTIVE:
            return
        now = rt.clock.now()
        run.status, run.started_at, run.updated_at = "running", run.started_at or now, now
    try:
        async with rt.db.session(write=True) as session:
            await _generate(rt, session, run_id)
    except ApiError as exc:  # a content rule refused a draft: nothing of this run was kept
        await _finish(rt, run_id, error=(exc.code, exc.message or "A sample draft was refused."))


async def _finish(rt: Runtime, run_id: str, *, error: tuple[str, str] | None = None, created: int = 0) -> None:
    async with rt.db.session(write=True) as session:
        run = await session.get(AdminPipelineRun, run_id)
        if run is None or run.status not in ACTIVE:
            return
        now = rt.clock.now()
        run.status = "failed" if error else "completed"
        run.error_code, run.error_message = (error[0][:60], error[1][:500]) if error else (None, None)
        run.samples_created, run.finished_at, run.updated_at = created, now, now


async def _generate(rt: Runtime, session: AsyncSession, run_id: str) -> None:
    run = (await session.exec(select(AdminPipelineRun).where(AdminPipelineRun.id == run_id)
                              .with_for_update())).first()
    if run is None or run.status != "running":
        return
    now = rt.clock.now()
    brand = await session.get(Brand, run.brand_id)
    prospect = await session.get(AdminProspect, run.brand_id)
    assert brand is not None and prospect is not None

    def fail(code: str, message: str) -> None:
        run.status, run.error_code, run.error_message = "failed", code, message
        run.finished_at = run.updated_at = now

    if prospect.mode != "automatic":
        return fail("MODE_MANUAL", "The brand was switched to manual mode before the run started; nothing was made.")
    existing = (await session.exec(select(func.count()).select_from(AdminSample).where(
        AdminSample.brand_id == brand.id))).one()
    room = out.SAMPLES_PER_BRAND_MAX - await sample_count(session, brand)
    if room <= 0:
        return fail("SAMPLE_LIMIT_REACHED", f"This brand already has {out.SAMPLES_PER_BRAND_MAX} samples.")
    media = await _candidates(session, brand)
    if not media:
        return fail("NO_MEDIA", "The brand has no completed media to attach: run a website scan that imports the "
                                "site's images (or upload media to the brand), then start the pipeline again.")
    scan = await latest_scan(session, brand)
    facts = brand_facts(brand, (scan.found if scan else None) or {})
    tags = hashtags(facts)
    count = min(out.SAMPLES_PER_RUN, room)
    for i in range(count):
        n = existing + i
        template = TEMPLATES[n % len(TEMPLATES)]
        item_media = media[n % len(media)]
        title = _clip(template.title(facts), TITLE_MAX)
        req = sc.CreateContentItemRequest.model_validate({
            "brand_id": brand.id, "name": _clip(f"Sample: {title}", sc.NAME_MAX),
            "single_copy": {"caption": _clip(template.caption(facts), sc.CAPTION_MAX), "hashtags": tags,
                            "title": title},
            **_settings(item_media, prospect),
        })
        # The content area's service, as create_content_item runs it, for the admin who started the run.
        item, _ = await insert_item(session, workspace_id=brand.workspace_id, user_id=run.created_by,
                                    brand_id=brand.id, now=now, req=req)
        session.add(AdminSample(id=new_id("smp"), workspace_id=brand.workspace_id, brand_id=brand.id, run_id=run.id,
                                content_item_id=item.id, template=template.key,
                                created_at=now, updated_at=now))
    await session.flush()
    run.status, run.samples_created, run.finished_at, run.updated_at = "completed", count, now, now
    advance(prospect, "content_generated", now)


# -- the sample pack --------------------------------------------------------------------------------------------

def _copy(item: ContentItem) -> dict[str, Any]:
    if item.copy_mode == "single":
        return item.single_copy or {}
    for key in PLATFORM_KEYS:
        copy = (item.platform_copy or {}).get(key)
        if copy and copy.get("caption"):
            return copy
    return {}


@dataclass
class SampleCheck:
    sample: dict[str, Any]
    has_caption: bool
    downloadable: bool

    @property
    def usable(self) -> bool:
        return self.has_caption and self.downloadable


async def check_samples(session: AsyncSession, settings: Any, brand: Brand) -> list[SampleCheck]:
    """Every sample whose draft exists (at most SAMPLES_PER_BRAND_MAX), newest first, with its usability:
    a caption, at least one media item, and every attached item completed (so its download_url serves)."""
    rows = (await session.exec(select(AdminSample, ContentItem).join(
        ContentItem, col(ContentItem.id) == AdminSample.content_item_id).where(
        AdminSample.brand_id == brand.id, AdminSample.workspace_id == brand.workspace_id,
        ContentItem.brand_id == brand.id).order_by(col(AdminSample.created_at).desc(), col(AdminSample.id).desc())
        .limit(out.SAMPLES_PER_BRAND_MAX))).all()
    wanted = sorted({m for _, item in rows for m in media_ids(item)})
    media = {m.id: m for m in (await session.exec(select(Media).where(
        col(Media.id).in_(wanted), Media.brand_id == brand.id))).all()} if wanted else {}
    checks = []
    for _sample, item in rows:
        copy = _copy(item)
        attached = [media.get(i) for i in media_ids(item)]
        downloadable = bool(attached) and all(m is not None and m.status in READY_STATUSES for m in attached)
        caption = (copy.get("caption") or "").strip()
        checks.append(SampleCheck(sample={
            "content_item_id": item.id, "name": item.name, "caption": copy.get("caption") or "",
            "hashtags": list(copy.get("hashtags") or []), "title": copy.get("title"),
            "media": [{"media_id": m.id, "download_url": asset_url(settings, m.asset_id), "content_type":
                       m.content_type, "file_name": m.file_name} for m in attached if m is not None],
            "created_at": iso(item.created_at),
        }, has_caption=bool(caption), downloadable=downloadable))
    return checks


async def completed_media_count(session: AsyncSession, brand: Brand) -> int:
    return (await session.exec(select(func.count()).select_from(Media).where(
        Media.brand_id == brand.id, Media.workspace_id == brand.workspace_id,
        col(Media.status).in_(READY_STATUSES)))).one()


JOBS = {PIPELINE_JOB: run_pipeline}
