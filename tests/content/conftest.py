"""Fixtures of the content area's tests: a brand with ready, processing and failed media, and labels."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from schemas.ids import new_id
from storage.tables.library import Label
from storage.tables.media import Media
from tools import areas, catalogue


@pytest.fixture
def probes() -> Iterator[dict[str, set[str]]]:
    """Register a usage probe for the test: put `{content_item_id: {"scheduled"}}` into the returned dict."""
    states: dict[str, set[str]] = {}
    calls: list[tuple[str, list[str]]] = []

    async def probe(session: Any, brand_id: str, ids: list[str]) -> dict[str, set[str]]:
        calls.append((brand_id, ids))
        return {i: states[i] for i in ids if i in states}

    registered = areas.usage_probes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(areas, "usage_probes", lambda: (*registered, probe))
        yield states


@dataclass
class Content:
    env: Any
    world: Any
    secret: str
    brand_id: str
    media: dict[str, str] = field(default_factory=dict)  # name -> id
    labels: list[str] = field(default_factory=list)  # ascending
    other_brand: dict[str, str] = field(default_factory=dict)  # a label, media and integration of brand B

    @property
    def integrations(self) -> dict[str, Any]:
        return self.world.integrations

    def url(self, suffix: str = "") -> str:
        return f"/v1/brands/{self.brand_id}/content-items{suffix}"

    def headers(self, **extra: str) -> dict[str, str]:
        return self.env.auth(self.secret, **extra)

    async def create(self, body: dict[str, Any], key: str | None = None, variant: str | None = None) -> Any:
        headers = self.headers(**({"Idempotency-Key": key} if key else {}))
        url = self.url() + (f"?variant={variant}" if variant else "")
        return await self.env.rest.post(url, json=body, headers=headers)

    async def created(self, body: dict[str, Any]) -> dict[str, Any]:
        resp = await self.create(body)
        assert resp.status_code == 201, resp.json()
        return resp.json()["data"]["content_item"]

    async def get(self, item_id: str) -> Any:
        return await self.env.rest.get(self.url(f"/{item_id}"), headers=self.headers())


async def add_media(env: Any, brand: Any, name: str, status: str = "completed", kind: str = "image",
                    duration: float | None = None) -> str:
    async with env.db.session(write=True) as s:
        m = Media(id=new_id("med"), workspace_id=brand.workspace_id, brand_id=brand.id, file_name=f"{name}.bin",
                  content_type=f"{kind}/{'jpeg' if kind == 'image' else 'mp4'}", status=status, source="upload",
                  kind=kind, width=1080, height=1350, duration=duration, asset_id=new_id("ast"),
                  created_at=env.clock.now(), updated_at=env.clock.now())
        s.add(m)
    return m.id


async def add_label(env: Any, brand: Any, name: str) -> str:
    async with env.db.session(write=True) as s:
        label = Label(id=new_id("lbl"), workspace_id=brand.workspace_id, brand_id=brand.id, name=name,
                      created_at=env.clock.now(), updated_at=env.clock.now())
        s.add(label)
    return label.id


@pytest.fixture
async def content(world: Any) -> Content:
    env = world.env
    a, b = world.brand_a, world.brand_b
    c = Content(env, world, world.full_key, a.id)
    for name in ("img1", "img2", "img3", "img4", "img5", "img6"):
        c.media[name] = await add_media(env, a, name)
    c.media["vid"] = await add_media(env, a, "vid", kind="video", duration=12.5)
    c.media["vid2"] = await add_media(env, a, "vid2", kind="video", duration=3.0)
    c.media["processing"] = await add_media(env, a, "processing", status="processing")
    c.media["failed"] = await add_media(env, a, "failed", status="failed")
    c.labels = sorted([await add_label(env, a, "Promo"), await add_label(env, a, "Tips")])
    c.other_brand = {"label": await add_label(env, b, "B label"), "media": await add_media(env, b, "b-img"),
                     "integration": (await env.integration(b, "tiktok")).id}
    return c


def full_body(c: Content) -> dict[str, Any]:
    """A valid draft that uses every settings object and per-platform copy."""
    m, i = c.media, c.integrations
    return {
        "name": "  Autumn launch  ",
        "copy_mode": "per_platform",
        "platform_copy": {
            "instagram": {"caption": "New roast is here", "hashtags": ["coffee", "autumn"], "title": None},
            "threads": {"caption": "Fresh ☕ today " + "😀" * 10, "hashtags": ["coffee"]},
            "pinterest": {"caption": "p" * 800, "hashtags": [], "title": "Pin title"},
            "google_business": {"caption": "Open late this week"},
        },
        "instagram_settings": {"media_ids": [m["img1"], m["img2"]], "post_type": "GRID_POST",
                               "collaborators": ["friend_account"]},
        "tiktok_settings": {"media_ids": [m["vid"]], "post_type": "VIDEO", "privacy_level": "SELF_ONLY",
                            "is_commercial_content": True, "commercial_types": ["YOUR_BRAND"], "allow_comment": True},
        "facebook_settings": {"media_ids": [m["img1"]], "post_type": "FB_POST"},
        "youtube_settings": {"title": "Roasting", "description": "How we roast", "media_ids": [m["vid"]],
                             "tags": ["coffee"], "privacy_level": "UNLISTED"},
        "linkedin_settings": {"post_type": "LI_ARTICLE", "title": "Our story",
                              "original_url": "https://example.com/story"},
        "x_settings": {"media_ids": [m["img1"]], "thread_parts": [{"text": "part two", "media_ids": [m["img2"]]}]},
        "bluesky_settings": {"media_ids": [m["img1"]], "post_type": "BS_IMAGE", "alt_text": {m["img1"]: "beans"},
                             "thread_parts": [{"text": "more", "media_ids": [m["img3"]],
                                               "alt_text": {m["img3"]: "a cup"}}]},
        "mastodon_settings": {"media_ids": [m["img1"]], "visibility": "unlisted", "spoiler_text": "coffee talk",
                              "sensitive": True, "language": "en",
                              "thread_parts": [{"text": "more beans", "media_ids": []}]},
        "telegram_settings": {"disable_link_preview": True},
        "discord_settings": {"publish_to_followers": True},
        "tumblr_settings": {"title": "Roast", "link": "https://example.com", "tags": ["coffee"],
                            "media_ids": [m["img1"]], "alt_text": {m["img1"]: "beans"}},
        "pinterest_settings": {"media_ids": [m["img1"], m["img2"]], "post_type": "PIN_IMAGE",
                               "board_id": "board_recipes", "title": "Roast", "alt_text": "beans"},
        "threads_settings": {"media_ids": [m["img1"], m["vid"]], "post_type": "TH_CAROUSEL", "topic_tag": "coffee",
                             "thread_parts": [{"text": "and more"}], "follow_up_reply": {"text": "link in bio"}},
        "intended_integration_ids": sorted([i["instagram"].id, i["tiktok"].id, i["threads"].id]),
        "label_ids": list(c.labels),
        "thumbnail_media_id": m["img1"],
        "thumbnail_timestamp": 1.5,
    }


async def direct(env: Any, endpoint: str, secret: str, args: dict[str, Any]) -> Any:
    """Dispatch like the MCP adapter (env.call, with arguments as a dict: `name` is also a body field here)."""
    return await env.dispatcher.invoke(catalogue.get(endpoint), dict(args), token=secret)
