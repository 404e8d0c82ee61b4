"""Seeding for the publishing worker tests: content items, media and Schedules written directly in a session
(the schedule routes are another area; these tests must not depend on them)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlmodel import func, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from storage.db import Database
from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.media import Media
from storage.tables.notifications import Notification
from storage.tables.publishing import Publication, PublishTarget, Schedule
from tools.schedules.rows import new_schedule

SHA = "b" * 64


def media_row(brand: Brand, now: datetime, *, kind: str = "image") -> Media:
    return Media(id=new_id("med"), workspace_id=brand.workspace_id, brand_id=brand.id, file_name="f.bin",
                 content_type="image/jpeg" if kind == "image" else "video/mp4", status="completed",
                 source="upload", kind=kind, width=1080, height=1350 if kind == "image" else 1920,
                 duration=None if kind == "image" else 15.0, size=200_000, sha256=SHA, asset_id=new_id("ast"),
                 created_at=now, updated_at=now)


def item_row(brand: Brand, now: datetime, *, settings: dict[str, Any], name: str = "Spring launch",
             caption: str = "New roast", hashtags: list[str] | None = None, copy_mode: str = "single",
             platform_copy: dict[str, Any] | None = None) -> ContentItem:
    return ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id, created_by="usr_test",
                       name=name, copy_mode=copy_mode,
                       single_copy={"caption": caption, "hashtags": hashtags or ["coffee"], "title": None},
                       platform_copy=platform_copy, settings=settings, created_at=now, updated_at=now)


async def seed_post(db: Database, brand: Brand, now: datetime) -> tuple[str, str]:
    """A content item with Instagram (image), TikTok (video), Facebook and LinkedIn text settings.
    Returns (content_item_id, image_media_id)."""
    async with db.session(write=True) as s:
        image, video = media_row(brand, now), media_row(brand, now, kind="video")
        s.add_all([image, video])
        item = item_row(brand, now, settings={
            "instagram_settings": {"media_ids": [image.id], "post_type": "GRID_POST"},
            "tiktok_settings": {"media_ids": [video.id], "post_type": "VIDEO", "privacy_level": "SELF_ONLY",
                                "agreed_to_terms": True},
            "facebook_settings": {"media_ids": [], "post_type": "FB_TEXT"},
            "linkedin_settings": {"media_ids": [], "post_type": "LI_TEXT", "visibility": "PUBLIC"},
        })
        s.add(item)
    return item.id, image.id


async def seed_schedule(db: Database, brand: Brand, item_id: str, integration_ids: list[str], now: datetime, *,
                        at: datetime | None = None, approval_status: str = "approved", source: str = "api",
                        key_id: str | None = "key_test") -> str:
    async with db.session(write=True) as s:
        schedule = new_schedule(s, brand=brand, content_item_id=item_id, integration_ids=sorted(integration_ids),
                                scheduled_at=at or now + timedelta(minutes=5), approval_status=approval_status,
                                source=source, user_id="usr_test", key_id=key_id, now=now)
    return schedule.id


async def schedule_of(db: Database, schedule_id: str) -> Schedule:
    async with db.session(write=False) as s:
        found = await s.get(Schedule, schedule_id)
        assert found is not None
        return found


async def targets_of(db: Database, schedule_id: str) -> dict[str, PublishTarget]:
    """integration_id -> target of the schedule's latest run."""
    async with db.session(write=False) as s:
        rows = (await s.exec(select(PublishTarget).where(PublishTarget.schedule_id == schedule_id))).all()
    return {t.integration_id: t for t in rows}


async def publications_of(db: Database, schedule_id: str) -> dict[str, Publication]:
    async with db.session(write=False) as s:
        rows = (await s.exec(select(Publication).where(Publication.schedule_id == schedule_id))).all()
    return {p.integration_id: p for p in rows}


async def notification_types(db: Database, brand_id: str) -> dict[str, int]:
    async with db.session(write=False) as s:
        rows = (await s.exec(select(Notification.type, func.count()).where(Notification.brand_id == brand_id)
                             .group_by(Notification.type))).all()
    return dict(rows)


async def set_provider_state(s: AsyncSession, integration_id: str, state: dict[str, Any]) -> None:
    from storage.tables.integrations import Integration

    row = await s.get(Integration, integration_id)
    assert row is not None
    row.provider_state = state
