"""Property: any valid draft reads back exactly as created, over REST and over direct dispatch (the MCP
adapter's path), and every field sent is the field stored (defaults filled in, the name trimmed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.content import SETTINGS_BY_KEY
from schemas.platforms import MAIN_SETTINGS_KEYS, PLATFORM_KEYS, SETTINGS_KEYS
from tests.content.conftest import add_label, add_media, direct
from tests.support import copy_template, make_env

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_é", min_size=1, max_size=12)
TEXT = st.text(alphabet="abc XYZ é😀☕❤️\n,!?", max_size=100)


def unique_subset(values: list[str], min_size: int = 0, max_size: int | None = None, ordered: bool = False):
    strategy = st.lists(st.sampled_from(values), min_size=min_size, max_size=max_size or len(values), unique=True)
    return strategy.map(sorted) if ordered else strategy


def copy_strategy():
    return st.fixed_dictionaries({"caption": TEXT}, optional={
        "hashtags": st.lists(WORDS, max_size=4, unique=True), "title": st.none() | TEXT})


def settings_strategies(w: dict[str, Any]) -> dict[str, Any]:
    images, vid = w["images"], w["video"]
    parts = st.lists(st.fixed_dictionaries({"text": TEXT.filter(bool)}, optional={
        "media_ids": unique_subset(images, max_size=2)}), min_size=1, max_size=3)

    def bluesky_part(media: list[str]):
        return st.fixed_dictionaries({"text": st.just("part"), "media_ids": st.just(media),
                                      "alt_text": st.dictionaries(st.sampled_from(media), TEXT, max_size=2)
                                      if media else st.just({})})

    return {
        "instagram_settings": st.fixed_dictionaries({}, optional={
            "media_ids": unique_subset(images, max_size=3), "post_type": st.sampled_from(["GRID_POST", "STORY", "REEL"]),
            "trial_reel": st.none() | st.booleans(), "collaborators": st.lists(WORDS, max_size=3, unique=True)}),
        "tiktok_settings": st.tuples(st.booleans(), st.sampled_from([["YOUR_BRAND"], ["BRANDED_CONTENT", "YOUR_BRAND"]]),
                                     st.sampled_from([None, "SELF_ONLY", "PUBLIC_TO_EVERYONE"]), st.booleans()).map(
            lambda t: {"media_ids": [vid], "is_commercial_content": t[0], "commercial_types": t[1] if t[0] else [],
                       "privacy_level": t[2], "is_aigc": t[3]}),
        "facebook_settings": st.fixed_dictionaries({"post_type": st.sampled_from(["FB_POST", "FB_TEXT", "FB_REEL"])}),
        "youtube_settings": st.fixed_dictionaries({}, optional={"title": st.none() | TEXT, "tags": st.lists(
            WORDS, max_size=3, unique=True), "made_for_kids": st.booleans(), "media_ids": st.just([vid])}),
        "linkedin_settings": st.fixed_dictionaries({}, optional={"visibility": st.sampled_from(["PUBLIC",
                                                                                              "CONNECTIONS"])}),
        "x_settings": st.fixed_dictionaries({}, optional={"media_ids": unique_subset(images, max_size=2),
                                                          "thread_parts": st.none() | parts}),
        "bluesky_settings": unique_subset(images, max_size=2).flatmap(lambda media: st.fixed_dictionaries({
            "media_ids": st.just(media), "alt_text": st.dictionaries(st.sampled_from(media), TEXT, max_size=2)
            if media else st.just({})}, optional={"thread_parts": st.none() | unique_subset(images, max_size=2).flatmap(
                lambda pm: st.lists(bluesky_part(pm), min_size=1, max_size=2))})),
        "mastodon_settings": st.fixed_dictionaries({}, optional={
            "media_ids": unique_subset(images, max_size=2), "visibility": st.sampled_from(["public", "unlisted"]),
            "spoiler_text": st.none() | TEXT, "thread_parts": st.none() | parts}),
        "telegram_settings": st.fixed_dictionaries({}, optional={"silent": st.booleans()}),
        "discord_settings": st.fixed_dictionaries({}, optional={"publish_to_followers": st.booleans()}),
        "tumblr_settings": st.fixed_dictionaries({}, optional={"tags": st.lists(WORDS, max_size=3, unique=True),
                                                               "title": st.none() | TEXT}),
        "pinterest_settings": st.fixed_dictionaries({"media_ids": unique_subset(images, min_size=1, max_size=3)},
                                                    optional={"board_id": WORDS, "alt_text": st.none() | TEXT}),
        "threads_settings": st.one_of(
            st.fixed_dictionaries({"post_type": st.just("TH_TEXT")}, optional={
                "thread_parts": st.none() | st.lists(st.fixed_dictionaries({"text": TEXT.filter(bool)}), min_size=1,
                                                     max_size=9),
                "topic_tag": WORDS, "follow_up_reply": st.fixed_dictionaries({"text": TEXT.filter(bool)})}),
            st.fixed_dictionaries({"post_type": st.just("TH_CAROUSEL"),
                                   "media_ids": unique_subset([*images, vid], min_size=2, max_size=3)})),
    }


def body_strategy(w: dict[str, Any]):
    per_settings = settings_strategies(w)

    @st.composite
    def body(draw) -> dict[str, Any]:
        out: dict[str, Any] = {"name": draw(st.text(alphabet="ab c😀", min_size=1, max_size=40).filter(str.strip))}
        mode = draw(st.sampled_from(["single", "per_platform", None]))
        if mode is not None:
            out["copy_mode"] = mode
        if mode == "per_platform":
            out["platform_copy"] = draw(st.dictionaries(st.sampled_from(PLATFORM_KEYS), copy_strategy(), max_size=4))
        elif draw(st.booleans()):
            out["single_copy"] = draw(copy_strategy())
        for key in draw(unique_subset(list(SETTINGS_KEYS), max_size=6)):
            out[key] = draw(per_settings[key])
        optional = {
            "intended_integration_ids": unique_subset(w["integrations"], ordered=True, max_size=4),
            "label_ids": unique_subset(w["labels"], ordered=True),
            "thumbnail_media_id": st.none() | st.sampled_from(w["images"]),
            "thumbnail_timestamp": st.floats(min_value=0, max_value=86_400, allow_nan=False) | st.integers(0, 600),
        }
        for key, strategy in optional.items():
            if draw(st.booleans()):
                out[key] = draw(strategy)
        return out

    return body()


def _expected_settings(key: str, sent: dict[str, Any]) -> dict[str, Any]:
    full = SETTINGS_BY_KEY[key].model_validate(sent).model_dump(mode="json")
    if full.get("thread_parts", ...) is None:
        del full["thread_parts"]
    return full


def check_stored(sent: dict[str, Any], item: dict[str, Any]) -> None:
    assert item["name"] == sent["name"].strip()
    assert item["copy_mode"] == sent.get("copy_mode", "single")
    blank = {"hashtags": [], "title": None}
    assert item["single_copy"] == ({**blank, **sent["single_copy"]} if sent.get("single_copy") is not None else None)
    if "platform_copy" in sent:
        assert item["platform_copy"] == {k: {**blank, **v} for k, v in sent["platform_copy"].items()}
    for key in SETTINGS_KEYS:
        if key in sent:
            assert item[key] == _expected_settings(key, sent[key]), key
        elif key in MAIN_SETTINGS_KEYS:
            assert item[key] is None
        else:
            assert key not in item
    assert item["intended_integration_ids"] == sent.get("intended_integration_ids", [])
    assert item["label_ids"] == sent.get("label_ids", [])
    assert item["thumbnail_media_id"] == sent.get("thumbnail_media_id")
    assert item["thumbnail_timestamp"] == sent.get("thumbnail_timestamp", 0)


@pytest.fixture(scope="module")
def world_db(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("roundtrip")
    url = copy_template(sqlite_template, tmp)

    async def seed() -> dict[str, Any]:
        env = await make_env(tmp, url, "sqlite")
        try:
            ws = await env.workspace()
            brand = await env.brand(ws, "Round trip")
            return {
                "tmp": tmp, "url": url, "brand_id": brand.id, "secret": await env.key(ws, name="rt"),
                "images": [await add_media(env, brand, f"i{n}") for n in range(4)],
                "video": await add_media(env, brand, "v", kind="video", duration=5.0),
                "labels": sorted([await add_label(env, brand, f"L{n}") for n in range(3)]),
                "integrations": [(await env.integration(brand, p)).id for p in ("instagram", "tiktok", "x", "threads",
                                                                                 "pinterest")],
            }
        finally:
            await env.rest.aclose()
            await env.rt.close()

    return anyio.run(seed)


def test_created_drafts_read_back_identically(world_db: dict[str, Any]) -> None:
    w = world_db

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(body=body_strategy(w), over_rest=st.booleans())
    def roundtrip(body: dict[str, Any], over_rest: bool) -> None:
        async def go() -> None:
            env = await make_env(w["tmp"], w["url"], "sqlite")
            try:
                if over_rest:
                    resp = await env.rest.post(f"/v1/brands/{w['brand_id']}/content-items", json=body,
                                               headers=env.auth(w["secret"]))
                    status, created = resp.status_code, resp.json()
                else:
                    out = await direct(env, "create_content_item", w["secret"], {"brand_id": w["brand_id"], **body})
                    status, created = out.status, out.body
                assert status == 201, (body, created)
                item = created["data"]["content_item"]
                check_stored(body, item)
                rest = await env.rest.get(f"/v1/brands/{w['brand_id']}/content-items/{item['id']}",
                                          headers=env.auth(w["secret"]))
                assert rest.json()["data"]["content_item"] == item
                mcp = await direct(env, "get_content_item", w["secret"], {"brand_id": w["brand_id"],
                                                                        "content_item_id": item["id"]})
                assert mcp.body["data"] == rest.json()["data"]
            finally:
                await env.rest.aclose()
                await env.rt.close()

        anyio.run(go)

    roundtrip()
