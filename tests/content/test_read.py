"""Reading content items: get, the released keyset list, the older page list, and variant selection."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.ids import new_id
from storage.tables.content import ContentItem
from tests.content.conftest import Content, full_body

pytestmark = pytest.mark.anyio


async def test_get_returns_the_created_shape_and_links(content: Content) -> None:
    env, c = content.env, content
    created = await c.created(full_body(c))
    resp = await c.get(created["id"])
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["content_item"] == created
    assert data["links"]["self"] == {"href": c.url(f"/{created['id']}"), "required_scopes": ["posts:read"]}
    assert data["links"]["preflight"]["method"] == "POST"
    # without intended integrations there is no preflight link
    plain = await c.created({"name": "plain"})
    links = (await c.get(plain["id"])).json()["data"]["links"]
    assert "preflight" not in links and "self" in links
    # reading changes nothing
    before = await env.row_counts()
    await c.get(created["id"])
    assert await env.row_counts() == before


async def test_get_missing_or_foreign_item_is_404(content: Content) -> None:
    env, c = content.env, content
    created = await c.created({"name": "mine"})
    resp = await c.get(new_id("ci"))
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "CONTENT_ITEM_NOT_FOUND"
    # an item of brand A read through brand B's path is missing too
    b_url = f"/v1/brands/{c.world.brand_b.id}/content-items/{created['id']}"
    resp = await env.rest.get(b_url, headers=c.headers())
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "CONTENT_ITEM_NOT_FOUND"
    # a key restricted to brand B does not see brand A at all
    resp = await env.rest.get(c.url(f"/{created['id']}"), headers=env.auth(c.world.key_b_only))
    assert resp.status_code == 404


async def _make(c: Content, n: int) -> list[str]:
    ids = []
    for k in range(n):
        c.env.clock.advance(seconds=1)
        ids.append((await c.created({"name": f"item {k}", "single_copy": {"caption": f"caption {k}"}}))["id"])
    return ids


async def test_released_list_pages_by_update_time(content: Content) -> None:
    env, c = content.env, content
    ids = await _make(c, 7)
    # touching an item moves it to the front
    env.clock.advance(seconds=1)
    resp = await env.rest.patch(c.url(f"/{ids[2]}"), json={"name": "touched"}, headers=c.headers())
    assert resp.status_code == 200
    expected = [ids[2]] + [i for i in reversed(ids) if i != ids[2]]
    seen, cursor = [], None
    while True:
        q = "?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = (await env.rest.get(c.url(q), headers=c.headers())).json()["data"]
        seen += [i["id"] for i in page["items"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        assert page["next_cursor"] == page["items"][-1]["id"]
        cursor = page["next_cursor"]
    assert seen == expected
    asc = (await env.rest.get(c.url("?order_direction=asc&limit=50"), headers=c.headers())).json()["data"]
    assert [i["id"] for i in asc["items"]] == expected[::-1]
    default = (await env.rest.get(c.url(), headers=c.headers())).json()["data"]
    assert len(default["items"]) == 7 and default["has_more"] is False


async def test_summary_fields(content: Content) -> None:
    env, c = content.env, content
    body = full_body(c)
    body["platform_copy"]["instagram"]["caption"] = "x" * 400
    created = await c.created(body)
    item = (await env.rest.get(c.url(), headers=c.headers())).json()["data"]["items"][0]
    m = c.media
    assert item == {
        "id": created["id"], "brand_id": c.brand_id, "name": "Autumn launch",
        "caption_preview": "x" * 279 + "…", "copy_mode": "per_platform",
        "platforms": ["instagram", "tiktok", "facebook", "youtube", "linkedin", "x", "bluesky", "mastodon", "telegram",
                      "discord", "tumblr", "pinterest", "threads", "google_business"],
        "media_ids": [m["img1"], m["img2"], m["vid"], m["img3"]],
        "intended_integration_ids": body["intended_integration_ids"], "label_ids": c.labels,
        "created_at": created["created_at"], "updated_at": created["updated_at"],
        "links": {"self": {"href": c.url(f"/{created['id']}"), "required_scopes": ["posts:read"]}},
    }


@pytest.mark.parametrize("query", ["limit=0", "limit=51", "limit=x", "order_direction=newest", "page=2"])
async def test_released_list_refuses_bad_queries(content: Content, query: str) -> None:
    resp = await content.env.rest.get(content.url(f"?{query}"), headers=content.headers())
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY"


async def test_unknown_or_foreign_cursor_is_invalid(content: Content) -> None:
    env, c = content.env, content
    await _make(c, 2)
    b_item = await env.rest.post(f"/v1/brands/{c.world.brand_b.id}/content-items", json={"name": "b"},
                                 headers=c.headers())
    for cursor in (new_id("ci"), b_item.json()["data"]["content_item"]["id"], "not-an-id", " ci_x"):
        resp = await env.rest.get(c.url(), params={"cursor": cursor}, headers=c.headers())
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == "INVALID_CURSOR", cursor
        assert err["issues"][0]["field_path"] == "$.cursor"


async def test_older_list(content: Content) -> None:
    env, c = content.env, content
    ids = await _make(c, 5)
    resp = await env.rest.get(c.url("?variant=older&limit=2&page=2"), headers=c.headers())
    body = resp.json()
    assert resp.status_code == 200
    assert body["pagination"] == {"page": 2, "limit": 2, "has_more": True}
    assert [i["id"] for i in body["data"]] == [ids[2], ids[1]]  # created_at desc by default
    item = body["data"][0]
    assert item["created_by"] and "intended_integration_ids" not in item and "thumbnail_media_id" not in item
    assert item["single_copy"] == {"caption": "caption 2", "hashtags": []}  # no title in the older shape
    by_name = (await env.rest.get(c.url("?variant=older&sort_by=name&sort_dir=asc"),
                                  headers=c.headers())).json()
    assert [i["name"] for i in by_name["data"]] == [f"item {k}" for k in range(5)]
    assert by_name["pagination"] == {"page": 1, "limit": 50, "has_more": False}
    for bad in ("sort_by=caption", "limit=101", "page=0", "cursor=x"):
        resp = await env.rest.get(c.url(f"?variant=older&{bad}"), headers=c.headers())
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY", bad
    resp = await env.rest.get(c.url("?variant=newest"), headers=c.headers())
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == "$.variant"


async def test_older_create_variant(content: Content) -> None:
    env, c = content.env, content
    body = {"name": " Older ", "single_copy": {"caption": "hi", "hashtags": ["a"]}, "label_ids": c.labels,
            "instagram_settings": {"media_ids": [c.media["img1"]]}}
    resp = await c.create(body, variant="older")
    assert resp.status_code == 201
    item = resp.json()["data"]
    assert item["name"] == "Older"
    assert item["single_copy"] == {"caption": "hi", "hashtags": ["a"]}
    assert item["created_by"] == env.key_row(c.secret).user_id and item["label_ids"] == c.labels
    # the released read shows the same item, with a null title
    released = (await c.get(item["id"])).json()["data"]["content_item"]
    assert released["single_copy"] == {"caption": "hi", "hashtags": ["a"], "title": None}
    # no idempotency key, no released-only fields, no title
    for extra, path in ((({"idempotency_key": "k"}), "$.idempotency_key"),
                        ({"intended_integration_ids": []}, "$.intended_integration_ids"),
                        ({"thumbnail_media_id": c.media["img1"]}, "$.thumbnail_media_id"),
                        ({"single_copy": {"caption": "x", "title": "t"}}, "$.single_copy.title")):
        before = await env.row_counts()
        resp = await c.create({**body, **extra}, variant="older")
        assert resp.status_code == 400, extra
        assert path in {i["field_path"] for i in resp.json()["error"]["issues"]}
        assert await env.row_counts() == before
    resp = await c.create(body, variant="older", key="k")
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_HEADER"
    resp = await c.create({**body, "label_ids": [f"lbl_01J{n:023d}" for n in range(51)]}, variant="older")
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["code"] == "TOO_MANY_ITEMS"


async def test_released_list_pages_items_with_fractional_update_times(content: Content) -> None:
    """A cursor's position is bound as the stored time text: a time with a fraction of a second once went to
    SQLite as `...+00:00` text, which sorts after the stored value, so a descending page repeated its cursor's
    item (storage/statements.py)."""
    env, c = content.env, content
    ids = []
    for k in range(5):
        env.clock.advance(seconds=0.0125)
        ids.append((await c.created({"name": f"item {k}", "single_copy": {"caption": f"caption {k}"}}))["id"])
    for direction, expected in (("desc", ids[::-1]), ("asc", ids)):
        seen, cursor = [], None
        while True:
            q = f"?limit=2&order_direction={direction}" + (f"&cursor={cursor}" if cursor else "")
            page = (await env.rest.get(c.url(q), headers=c.headers())).json()["data"]
            seen += [i["id"] for i in page["items"]]
            if not page["has_more"]:
                break
            cursor = page["next_cursor"]
        assert seen == expected, direction


async def test_released_list_times_are_the_items_times(content: Content) -> None:
    """The list spells its times from the stored text on SQLite (storage/statements.py) and from
    datetimes elsewhere: the same text as `iso()` and as reading one item, for fractions of a second, whole
    seconds and the ends of the calendar."""
    from datetime import UTC, datetime

    from sqlalchemy import update

    from schemas.time import iso

    env, c = content.env, content
    times = [datetime(2026, 11, 24, 6, 0, 0, tzinfo=UTC), datetime(2026, 11, 24, 6, 0, 0, 999999, tzinfo=UTC),
             datetime(2026, 11, 24, 6, 0, 0, 123456, tzinfo=UTC), datetime(2026, 11, 24, 6, 0, 0, 1000, tzinfo=UTC),
             datetime(2026, 11, 24, 6, 0, 0, 999, tzinfo=UTC), datetime(1000, 1, 1, tzinfo=UTC),
             datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), datetime(2028, 2, 29, 12, 30, 1, 500, tzinfo=UTC)]
    ids = [(await c.created({"name": f"item {k}", "single_copy": {"caption": "x"}}))["id"] for k in range(len(times))]
    async with env.db.session(write=True) as s:
        for k, (item_id, at) in enumerate(zip(ids, times, strict=True)):
            created = times[(k + 1) % len(times)]
            await s.exec(update(ContentItem).where(ContentItem.id == item_id).values(created_at=created, updated_at=at))
    items = (await env.rest.get(c.url("?limit=50"), headers=c.headers())).json()["data"]["items"]
    listed = {i["id"]: (i["created_at"], i["updated_at"]) for i in items}
    for k, (item_id, at) in enumerate(zip(ids, times, strict=True)):
        expected = (iso(times[(k + 1) % len(times)]), iso(at))
        assert listed[item_id] == expected
        one = (await c.get(item_id)).json()["data"]["content_item"]
        assert (one["created_at"], one["updated_at"]) == expected


def unsaved(settings: dict[str, Any], platform_copy: dict[str, Any] | None) -> ContentItem:
    """An unsaved content row with these settings and copy (the only fields `platforms` and `media_ids` read)."""
    return ContentItem(id="cnt_x", workspace_id="ws_x", brand_id="brd_x", created_by="usr_x", name="x",
                       settings=settings, platform_copy=platform_copy)


def test_summary_platforms_and_media_ids_keep_registry_order() -> None:
    """`platforms` and `media_ids` walk only the item's own keys, sorted by the registry: the same lists as a walk
    over every registry key (the former code, kept here), whatever order the stored keys come in."""
    import random

    from schemas.platforms import PLATFORM_KEYS, SETTINGS_KEYS
    from tools.content.rules import PLATFORM_OF_SETTINGS, media_ids, platforms

    def media_ids_walk(item):
        seen: dict[str, None] = {}
        for key in SETTINGS_KEYS:
            s = item.settings.get(key)
            if not s:
                continue
            seen.update(dict.fromkeys(s.get("media_ids") or []))
            for part in s.get("thread_parts") or []:
                seen.update(dict.fromkeys(part.get("media_ids") or []))
        return list(seen)

    def platforms_walk(item):
        have = {PLATFORM_OF_SETTINGS[k] for k in item.settings} | set(item.platform_copy or {})
        return [k for k in PLATFORM_KEYS if k in have]

    rng = random.Random(18)
    media = [f"med_{n}" for n in range(6)]
    for _ in range(3000):
        keys = rng.sample(SETTINGS_KEYS, rng.randrange(len(SETTINGS_KEYS) + 1))
        settings = {k: rng.choice([None, {}, {"media_ids": rng.sample(media, rng.randrange(4))},
                                   {"thread_parts": [{"media_ids": rng.sample(media, 2)}, {}]}]) for k in keys}
        copy = {k: {"caption": "x"} for k in rng.sample([*PLATFORM_KEYS, "unknown"], rng.randrange(4))}
        item = unsaved(settings, rng.choice([None, copy]))
        assert media_ids(item) == media_ids_walk(item)
        assert platforms(item) == platforms_walk(item)


def test_summary_platforms_and_media_ids_remembered_by_key_set() -> None:
    """What the keys decide is remembered by key set: each call still gets a list of its own, media IDs still come
    from the item's own values, and a settings key of no platform still fails every time."""
    from tools.content import rules

    item = unsaved({"x_settings": {"media_ids": ["med_1"]}, "tiktok_settings": None}, {"instagram": {"caption": "c"}})
    first = rules.platforms(item)
    first.append("changed")
    assert rules.platforms(item) == [p for p in first if p != "changed"]
    assert rules.media_ids(item) == ["med_1"]
    other = unsaved({"x_settings": {"media_ids": ["med_2"]}, "tiktok_settings": None}, None)
    assert rules.media_ids(other) == ["med_2"]
    for _ in range(2):
        with pytest.raises(KeyError):
            rules.platforms(unsaved({"nonsense": {}}, None))
    for n in range(rules._REMEMBERED * 2):  # bounded
        rules.platforms(unsaved({}, {f"p{n}": {}}))
    assert len(rules._PLATFORMS_OF) <= rules._REMEMBERED
