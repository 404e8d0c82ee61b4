"""Helpers of the schedule tests: a brand with ready media, a schedulable draft, Schedules seeded in any state."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlmodel import select

from schemas.ids import new_id
from schemas.time import parse_timestamp
from storage.tables.media import Media
from storage.tables.publishing import Publication, PublishExecution, PublishTarget, Schedule
from tools.schedules.rows import new_schedule

SHA = "a" * 64
WHEN = "2026-03-05T10:30:00+01:00"  # three days after tests.support.START
WHEN_UTC = "2026-03-05T09:30:00.000Z"
SCHEDULE_FIELDS = {"id", "brand_id", "content_item_id", "integration_ids", "scheduled_at", "approval_status", "status",
                   "blocking_reason", "latest_execution", "next_actions", "created_at", "updated_at", "links"}


def new_key() -> str:
    return f"test-{uuid.uuid4()}"


async def add_media(env: Any, brand: Any, *, kind: str = "image", width: int = 1080, height: int = 1350,
                    status: str = "completed", duration: float | None = None) -> str:
    async with env.db.session(write=True) as s:
        m = Media(id=new_id("med"), workspace_id=brand.workspace_id, brand_id=brand.id, file_name="f.bin",
                  content_type="image/jpeg" if kind == "image" else "video/mp4", status=status, source="upload",
                  kind=kind, width=width, height=height, duration=duration, size=200_000, sha256=SHA,
                  asset_id=new_id("ast"), created_at=env.clock.now(), updated_at=env.clock.now())
        s.add(m)
    return m.id


class Sched:
    """A brand (world.brand_a) with Instagram and TikTok targets and ready media."""

    def __init__(self, world: Any) -> None:
        self.world, self.env = world, world.env
        self.brand = world.brand_a
        self.ig, self.tt = world.integrations["instagram"].id, world.integrations["tiktok"].id
        self.targets = sorted([self.ig, self.tt])
        self.item_id = ""  # the draft the `sc` fixture makes (tests/schedules/conftest.py)

    async def setup(self) -> Sched:
        self.image = await add_media(self.env, self.brand)
        self.video = await add_media(self.env, self.brand, kind="video", width=1080, height=1920, duration=15.0)
        return self

    async def item(self, **overrides: Any) -> str:
        body = {"name": "Launch", "copy_mode": "single",
                "single_copy": {"caption": "New roast", "hashtags": ["coffee"], "title": None},
                "instagram_settings": {"media_ids": [self.image], "post_type": "GRID_POST"},
                "tiktok_settings": {"media_ids": [self.video], "post_type": "VIDEO",
                                    "privacy_level": "SELF_ONLY", "agreed_to_terms": True},
                **overrides}
        resp = await self.env.rest.post(f"/v1/brands/{self.brand.id}/content-items", json=body,
                                        headers=self.env.auth(self.world.full_key))
        assert resp.status_code == 201, resp.json()
        return resp.json()["data"]["content_item"]["id"]

    async def create(self, item_id: str, secret: str | None = None, key: str | None = None, **body: Any) -> Any:
        args = {"brand_id": self.brand.id, "content_item_id": item_id, "scheduled_at": WHEN,
                "integration_ids": self.targets, "approval_status": "pending_review", **body}
        return await self.env.call("create_schedule", secret or self.world.full_key,
                                   idempotency_key=key or new_key(), **args)

    async def key(self, *scopes: str, brands: list[str] | None = None) -> str:
        return await self.env.key(self.world.ws, scopes=list(scopes), brands=brands)

    async def seed(self, item_id: str, state: str, *, at: str | None = None) -> str:
        """A Schedule in `state`: held, rejected, scheduled, cancelled, or run (publishing, with an execution)."""
        env = self.env
        now = env.clock.now()
        when = parse_timestamp(at) if at else now + timedelta(days=3)
        approval = {"held": "pending_review", "rejected": "rejected", "cancelled": "pending_review"}.get(
            state, "approved")
        async with env.db.session(write=True) as s:
            row = new_schedule(s, brand=self.brand, content_item_id=item_id, integration_ids=self.targets,
                               scheduled_at=when, approval_status=approval, source="api", user_id="usr_test",
                               key_id=env.key_row(self.world.full_key).id, now=now)
            await s.flush()
            if state == "cancelled":
                row.status, row.cancelled_at, row.blocking_reason = "cancelled", now, None
            if state == "run":
                run = PublishExecution(id=new_id("run"), brand_id=self.brand.id, schedule_id=row.id,
                                       started_at=now, created_at=now, updated_at=now)
                s.add(run)
                await s.flush()
                for platform, iid in (("instagram", self.ig), ("tiktok", self.tt)):
                    s.add(PublishTarget(id=new_id("ptg"), execution_id=run.id, schedule_id=row.id,
                                        brand_id=self.brand.id, integration_id=iid, platform=platform,
                                        state="attempting", attempts=1, idempotency_token=new_id("tok"),
                                        publish_id="PROVIDER-SECRET-ID", permalink_url="https://example.com/p/1",
                                        error_kind="rate_limited", created_at=now, updated_at=now))
                row.status, row.latest_execution_id = "publishing", run.id
            s.add(row)
        return row.id

    async def row(self, schedule_id: str) -> dict[str, Any] | None:
        async with self.env.db.session(write=False) as s:
            row = (await s.exec(select(Schedule).where(Schedule.id == schedule_id))).first()
            return row.model_dump() if row else None

    async def publish(self, schedule_id: str, item_id: str) -> None:
        """A Publication record of the item (as the worker writes after a delivery)."""
        now = self.env.clock.now()
        async with self.env.db.session(write=True) as s:
            s.add(Publication(id=new_id("pub"), workspace_id=self.brand.workspace_id, brand_id=self.brand.id,
                              schedule_id=schedule_id, execution_id=new_id("run"), target_id=new_id("ptg"),
                              platform="instagram", integration_id=self.ig, post_id=item_id, status="published",
                              created_at=now, updated_at=now))
