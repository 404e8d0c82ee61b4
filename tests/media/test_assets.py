"""Serving assets by opaque capability ID: no API key, range requests, safe headers, never a storage path."""

from __future__ import annotations

import pytest

from tests.media.support import image_bytes, local, upload, video_bytes

pytestmark = pytest.mark.anyio


@pytest.fixture
async def video(world):
    data = video_bytes(64, 48, seconds=1.0)
    item = await upload(world.env, world.full_key, world.brand_a.id, data, "video/mp4", "v.mp4")
    assert item["status"] == "completed"
    return world.env, local(item["download_url"]), data, item


async def test_full_download_and_headers(video) -> None:
    env, path, data, _ = video
    resp = await env.rest.get(path)
    assert resp.status_code == 200 and resp.content == data
    h = resp.headers
    assert h["content-type"] == "video/mp4" and h["content-length"] == str(len(data))
    assert h["accept-ranges"] == "bytes" and h["x-content-type-options"] == "nosniff"
    assert "sandbox" in h["content-security-policy"] and "immutable" in h["cache-control"]
    assert "content-disposition" not in h


@pytest.mark.parametrize(("header", "start", "end"), [
    ("bytes=0-99", 0, 99), ("bytes=100-", 100, None), ("bytes=-50", -50, None), ("bytes=10-10", 10, 10),
    ("bytes=0-999999999", 0, None),
])
async def test_range_requests(video, header: str, start: int, end: int | None) -> None:
    env, path, data, _ = video
    resp = await env.rest.get(path, headers={"Range": header})
    assert resp.status_code == 206
    expected = data[start:] if end is None else data[start:end + 1]
    assert resp.content == expected
    first = start if start >= 0 else len(data) + start
    assert resp.headers["content-range"] == f"bytes {first}-{first + len(expected) - 1}/{len(data)}"
    assert resp.headers["content-length"] == str(len(expected))


async def test_unsatisfiable_and_ignored_ranges(video) -> None:
    env, path, data, _ = video
    resp = await env.rest.get(path, headers={"Range": f"bytes={len(data) + 5}-"})
    assert resp.status_code == 416 and resp.headers["content-range"] == f"bytes */{len(data)}"
    for header in ("bytes=0-1,5-6", "items=0-5", "bytes=abc"):
        resp = await env.rest.get(path, headers={"Range": header})
        assert resp.status_code == 200 and resp.content == data, header
    resp = await env.rest.get(path, headers={"Range": "bytes=0-9", "If-Range": '"stale"'})
    assert resp.status_code == 200 and resp.content == data


async def test_head_and_conditional(video) -> None:
    env, path, data, _ = video
    resp = await env.rest.head(path)
    assert resp.status_code == 200 and resp.content == b"" and resp.headers["content-length"] == str(len(data))
    etag = resp.headers["etag"]
    resp = await env.rest.get(path, headers={"If-None-Match": etag})
    assert resp.status_code == 304 and resp.content == b""


async def test_thumbnails_are_jpeg(video) -> None:
    env, _, _, item = video
    for key in ("thumbnail_large_url", "thumbnail_small_url"):
        resp = await env.rest.get(local(item[key]))
        assert resp.status_code == 200 and resp.headers["content-type"] == "image/jpeg"
        assert resp.content[:3] == b"\xff\xd8\xff"
    assert len({item["download_url"], item["thumbnail_large_url"], item["thumbnail_small_url"]}) == 3


async def test_unknown_and_malformed_ids(video) -> None:
    env, path, _, _ = video
    for bad in ("/media/assets/" + "A" * 32, "/media/assets/short", "/media/assets/" + "A" * 31 + "%00",
                "/media/assets/..%2F..%2Fsocialpub.db"):
        resp = await env.rest.get(bad)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND", bad
    resp = await env.rest.delete(path)
    assert (resp.status_code, resp.json()["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")
    assert (await env.rest.get(path)).status_code == 200


async def test_media_url_setting(env_factory) -> None:
    async with env_factory(media_url="https://cdn.example/m/") as env:
        ws = await env.workspace()
        brand = await env.brand(ws)
        secret = await env.key(ws)
        item = await upload(env, secret, brand.id, image_bytes(20, 20, "PNG"), "image/png")
        assert item["download_url"].startswith("https://cdn.example/m/assets/")
        # the CDN forwards {media_url}/assets/<id> to /media/assets/<id> here
        asset_id = item["download_url"].rsplit("/", 1)[1]
        assert (await env.rest.get(f"/media/assets/{asset_id}")).status_code == 200
