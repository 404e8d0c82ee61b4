"""GET .../media: newest first, bounded limit, the default shape kept, and opt-in cursors bound to the brand
that keep advancing even over pages with nothing to show."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.ids import new_id
from storage.tables.media import Media
from tools.media.items import new_asset_id

pytestmark = pytest.mark.anyio


async def seed(env, brand, n: int, *, status: str = "completed", seconds: int = 0, same_time: bool = False,
               expired_session: bool = False) -> list[str]:
    """Insert media rows directly; returns IDs newest first."""
    ids = []
    async with env.db.session(write=True) as s:
        for i in range(n):
            at = env.clock.now() + timedelta(seconds=seconds + (0 if same_time else i))
            m = Media(id=new_id("med"), workspace_id=brand.workspace_id, brand_id=brand.id, file_name=f"f{i}.png",
                      content_type="image/png", size=10, status=status, source="upload", asset_id=new_asset_id(),
                      label_ids=[], created_at=at, updated_at=at)
            if expired_session:
                m.status, m.upload_expires_at = "pending_upload", at + timedelta(minutes=15)
            s.add(m)
            ids.append(m.id)
    return list(reversed(ids))


def url(brand_id: str, query: str = "") -> str:
    return f"/v1/brands/{brand_id}/media" + (f"?{query}" if query else "")


async def get(env, secret, brand_id, query=""):
    return await env.rest.get(url(brand_id, query), headers=env.auth(secret))


async def test_default_shape_and_limits(world) -> None:
    env, brand = world.env, world.brand_a
    ids = await seed(env, brand, 30)
    data = (await get(env, world.full_key, brand.id)).json()["data"]
    assert set(data) == {"items", "has_more"}  # the kept default: no next_cursor
    assert [i["id"] for i in data["items"]] == ids[:12] and data["has_more"] is True
    data = (await get(env, world.full_key, brand.id, "limit=24")).json()["data"]
    assert [i["id"] for i in data["items"]] == ids[:24]
    data = (await get(env, world.full_key, brand.id, "limit=1")).json()["data"]
    assert len(data["items"]) == 1
    item = data["items"][0]
    assert set(item) == {"id", "file_name", "content_type", "size", "duration", "status", "label_ids", "folder_id",
                         "download_url", "thumbnail_large_url", "thumbnail_small_url", "source", "description",
                         "last_used_at", "created_at", "updated_at", "readiness", "links"}
    for query, code in (("limit=0", "OUT_OF_RANGE"), ("limit=25", "OUT_OF_RANGE"), ("limit=x", "INVALID_TYPE"),
                        ("pagination=offset", "NOT_ALLOWED"), ("page=2", "UNKNOWN_FIELD")):
        resp = await get(env, world.full_key, brand.id, query)
        assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY", query
        assert resp.json()["error"]["issues"][0]["code"] == code, query


async def test_cursor_pagination_walks_everything_once(world) -> None:
    env, brand = world.env, world.brand_a
    older = await seed(env, brand, 7, same_time=True)  # ties on created_at: ordered by ID
    newer = await seed(env, brand, 20, seconds=100)
    expected = newer + older
    seen, cursor, pages = [], None, 0
    while True:
        query = "pagination=cursor&limit=5" + (f"&cursor={cursor}" if cursor else "")
        data = (await get(env, world.full_key, brand.id, query)).json()["data"]
        seen += [i["id"] for i in data["items"]]
        pages += 1
        if not data["has_more"]:
            assert data["next_cursor"] is None
            break
        cursor = data["next_cursor"]
        assert cursor
    assert seen == expected and pages == 6


async def test_cursor_refusals(world) -> None:
    env = world.env
    await seed(env, world.brand_a, 15)
    await seed(env, world.brand_b, 15)
    cursor_a = (await get(env, world.full_key, world.brand_a.id, "pagination=cursor")).json()["data"]["next_cursor"]
    resp = await get(env, world.full_key, world.brand_a.id, f"cursor={cursor_a}")  # needs pagination=cursor
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY"
    body, sig = cursor_a.split(".")
    for bad in ("garbage", "", f"{body}.", f"{body}.{'A' * len(sig)}", f"{body[:-2]}xx.{sig}", "x" * 201):
        resp = await get(env, world.full_key, world.brand_a.id, f"pagination=cursor&cursor={bad}")
        assert resp.status_code == 400, bad
        assert resp.json()["error"]["code"] in ("INVALID_CURSOR", "INVALID_QUERY"), bad
    # a cursor of brand A is refused on brand B
    resp = await get(env, world.full_key, world.brand_b.id, f"pagination=cursor&cursor={cursor_a}")
    assert (resp.status_code, resp.json()["error"]["code"]) == (400, "INVALID_CURSOR")
    assert resp.json()["error"]["next_action"] == "restart_list"


async def test_an_empty_page_still_advances(world) -> None:
    env, brand = world.env, world.brand_a
    visible = await seed(env, brand, 3)
    await seed(env, brand, 150, seconds=100, expired_session=True)  # newer, hidden: expired empty upload sessions
    env.clock.advance(hours=1)
    items, cursor, pages = [], None, 0
    while True:
        query = "pagination=cursor&limit=24" + (f"&cursor={cursor}" if cursor else "")
        data = (await get(env, world.full_key, brand.id, query)).json()["data"]
        pages += 1
        items += [i["id"] for i in data["items"]]
        if pages == 1:
            assert data["items"] == [] and data["has_more"] is True and data["next_cursor"]
        if not data["has_more"]:
            break
        cursor = data["next_cursor"]
        assert pages < 10, "the scan stalled"
    assert items == visible and pages == 2


async def test_pending_sessions_are_listed_until_they_expire(world) -> None:
    env, brand = world.env, world.brand_a
    [pending] = await seed(env, brand, 1, expired_session=True)
    data = (await get(env, world.full_key, brand.id)).json()["data"]
    assert [i["id"] for i in data["items"]] == [pending]
    assert data["items"][0]["readiness"]["next_actions"][0]["action"] == "upload_media_bytes"
    env.clock.advance(minutes=16)
    assert (await get(env, world.full_key, brand.id)).json()["data"]["items"] == []
    # still readable by ID, with the reason
    item = (await env.rest.get(f"/v1/brands/{brand.id}/media/{pending}", headers=env.auth(world.full_key))).json()
    assert item["data"]["readiness"]["next_actions"][0]["reason_code"] == "UPLOAD_EXPIRED"


async def test_get_missing_media(world) -> None:
    env, brand = world.env, world.brand_a
    for media_id in (new_id("med"), "med_bad", new_id("zzz")):
        resp = await env.rest.get(f"/v1/brands/{brand.id}/media/{media_id}", headers=env.auth(world.full_key))
        assert (resp.status_code, resp.json()["error"]["code"]) == (404, "NOT_FOUND")
