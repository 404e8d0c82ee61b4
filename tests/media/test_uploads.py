"""Upload sessions: a signed, short-lived, single-use PUT capability; the PUT streams, checks size and hash,
keeps nothing it refuses, and starts processing that really probes the bytes."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.media.support import image_bytes, local, process, put_bytes, sha, start_upload, upload, video_bytes

pytestmark = pytest.mark.anyio


def stored_files(env) -> list[Path]:
    root = Path(env.rt.settings.home) / "media" / "blobs"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def sessions_url(brand_id: str) -> str:
    return f"/v1/brands/{brand_id}/media/upload-sessions"


async def get_item(env, secret, brand_id, media_id) -> dict:
    resp = await env.rest.get(f"/v1/brands/{brand_id}/media/{media_id}", headers=env.auth(secret))
    assert resp.status_code == 200, resp.json()
    return resp.json()["data"]


async def test_upload_session_happy_path(world) -> None:
    env, brand = world.env, world.brand_a
    data = image_bytes(1200, 800, "JPEG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/jpeg", filename=" beach.jpg ")
    assert session["status"] == "pending_upload"
    assert session["upload"]["method"] == "PUT"
    assert session["upload"]["headers"] == {"Content-Type": "image/jpeg", "Content-Length": str(len(data))}
    url = urlsplit(session["upload"]["url"])
    assert (url.scheme, url.netloc, url.path) == ("http", "testserver", f"/media/uploads/{session['id']}")
    assert set(parse_qs(url.query)) == {"expires", "signature"}
    assert session["upload"]["expires_at"] == "2026-03-02T09:15:00.000Z"  # 15 minutes
    assert session["download_url"].startswith("http://testserver/media/assets/")
    assert session["links"]["self"] == {"href": f"/v1/brands/{brand.id}/media/{session['id']}",
                                        "required_scopes": ["media:read"]}

    item = await get_item(env, world.full_key, brand.id, session["id"])
    assert item["readiness"]["ready_for_content"] is False
    assert [a["action"] for a in item["readiness"]["next_actions"]] == ["upload_media_bytes"]
    # the bytes are not public before upload and processing
    assert (await env.rest.get(local(session["download_url"]))).status_code == 404

    resp = await put_bytes(env, session, data)  # no API key
    assert resp.status_code == 200, resp.json()
    assert resp.json()["data"]["status"] == "processing"
    assert resp.json()["data"]["readiness"]["next_actions"][0]["action"] == "read_media_again"
    assert (await env.rest.get(local(session["download_url"]))).status_code == 404  # not verified yet

    assert await process(env) == 1
    item = await get_item(env, world.full_key, brand.id, session["id"])
    assert item["status"] == "completed"
    assert item["readiness"] == {"ready_for_content": True, "next_actions": []}
    assert (item["file_name"], item["content_type"], item["size"], item["duration"], item["source"]) == (
        "beach.jpg", "image/jpeg", len(data), None, "upload")
    assert item["thumbnail_large_url"] and item["thumbnail_small_url"]
    got = await env.rest.get(local(item["download_url"]))
    assert got.status_code == 200 and got.content == data and got.headers["content-type"] == "image/jpeg"
    assert str(Path(env.rt.settings.home)) not in got.text and "blobs" not in item["download_url"]


async def test_upload_probes_video_facts(world) -> None:
    env, brand = world.env, world.brand_a
    data = video_bytes(160, 90, seconds=2.0, fps=10, audio=True)
    item = await upload(env, world.full_key, brand.id, data, "video/mp4", "clip.mp4")
    assert item["status"] == "completed"
    assert item["duration"] == pytest.approx(2.0, abs=0.05)
    from storage.tables.media import Media

    async with env.db.session(write=False) as s:
        row = await s.get(Media, item["id"])
    assert (row.kind, row.width, row.height, row.codec, row.frame_rate, row.has_audio) == (
        "video", 160, 90, "h264", 10.0, True)
    thumb = await env.rest.get(local(item["thumbnail_small_url"]))
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg"


async def test_mismatched_bytes_fail_processing_and_are_never_served(world) -> None:
    env, brand = world.env, world.brand_a
    html = b"<html><body><script>alert(document.cookie)</script></body></html>"
    item = await upload(env, world.full_key, brand.id, html, "image/png", "x.png")
    assert item["status"] == "failed"
    assert item["readiness"]["ready_for_content"] is False
    [action] = item["readiness"]["next_actions"]
    assert action["action"] == "repair_media" and action["reason_code"] == "CONTENT_TYPE_MISMATCH"
    assert "image/png" in action["guidance"]
    assert (await env.rest.get(local(item["download_url"]))).status_code == 404
    assert stored_files(env) == []  # failed bytes are deleted

    png = image_bytes(20, 20, "PNG")
    item = await upload(env, world.full_key, brand.id, png, "image/jpeg", "y.jpg", key="k2")
    assert item["status"] == "failed"
    assert item["readiness"]["next_actions"][0]["reason_code"] == "CONTENT_TYPE_MISMATCH"


async def test_put_refusals_keep_nothing(world) -> None:
    env, brand = world.env, world.brand_a
    data = image_bytes(64, 64, "PNG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/png")
    before = await env.row_counts()

    async def refused(body: bytes, status: int, code: str, **headers: str) -> dict:
        resp = await put_bytes(env, session, body, **headers)
        assert resp.status_code == status, resp.json()
        err = resp.json()["error"]
        assert err["code"] == code and err["status"] == status
        assert stored_files(env) == []
        assert await env.row_counts() == before
        item = await get_item(env, world.full_key, brand.id, session["id"])
        assert item["status"] == "pending_upload"
        return err

    await refused(data + b"x", 413, "REQUEST_TOO_LARGE")  # declared Content-Length says too much
    await refused(data[:-1], 400, "MALFORMED_REQUEST")
    # a body that lies about its length: more bytes than declared, streamed without Content-Length

    async def stream(body: bytes):
        for i in range(0, len(body), 1000):
            yield body[i:i + 1000]

    for body, status, code in ((data + b"extra", 413, "REQUEST_TOO_LARGE"), (data[:-5], 400, "MALFORMED_REQUEST")):
        resp = await env.rest.put(local(session["upload"]["url"]), content=stream(body),
                                  headers={"Content-Type": "image/png"})
        assert (resp.status_code, resp.json()["error"]["code"]) == (status, code)
        assert stored_files(env) == []
    wrong = bytearray(data)
    wrong[-20] ^= 0xFF
    err = await refused(bytes(wrong), 422, "DOMAIN_VALIDATION_FAILED")
    assert err["issues"][0]["code"] == "HASH_MISMATCH"
    err = await refused(data, 400, "INVALID_HEADER", **{"Content-Type": "image/jpeg"})
    assert err["issues"][0]["field_path"] == "$.headers.content_type"

    # after refusals the capability still works (nothing was consumed), exactly once
    assert (await put_bytes(env, session, data)).status_code == 200
    again = await put_bytes(env, session, data)
    assert (again.status_code, again.json()["error"]["code"]) == (409, "CONFLICT")
    assert len(stored_files(env)) == 1


async def test_bad_signatures_and_tampered_links(world) -> None:
    env, brand = world.env, world.brand_a
    data = image_bytes(8, 8, "PNG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/png")
    url = urlsplit(local(session["upload"]["url"]))
    query = parse_qs(url.query)
    expires, signature = query["expires"][0], query["signature"][0]
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    other = (await start_upload(env, world.full_key, brand.id, data, "image/png", key="k2"))["id"]
    cases = [
        f"{url.path}?expires={expires}&signature={flipped}",
        f"{url.path}?expires={int(expires) + 3600}&signature={signature}",  # extended expiry
        f"{url.path}?expires={expires}",
        f"{url.path}",
        f"/media/uploads/{other}?expires={expires}&signature={signature}",  # another item's signature
        f"/media/uploads/not-an-id?expires={expires}&signature={signature}",
    ]
    for path in cases:
        resp = await env.rest.put(path, content=data, headers={"Content-Type": "image/png"})
        assert resp.status_code == 404, path
        err = resp.json()["error"]
        assert err["code"] == "NOT_FOUND" and err["next_action"] == "create_media_upload_session"
    assert stored_files(env) == []
    # a GET on an upload URL is refused with the envelope
    resp = await env.rest.get(local(session["upload"]["url"]))
    assert (resp.status_code, resp.json()["error"]["code"]) == (405, "METHOD_NOT_ALLOWED")


async def test_signature_binds_the_declared_size_and_hash(world) -> None:
    """Changing what the server recorded (size, hash) invalidates the link: they are part of the signature."""
    env, brand = world.env, world.brand_a
    data = image_bytes(8, 8, "PNG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/png")
    from storage.tables.media import Media

    async with env.db.session(write=True) as s:
        row = await s.get(Media, session["id"])
        row.size = len(data) + 1
    resp = await put_bytes(env, session, data + b"x", **{"Content-Length": str(len(data) + 1)})
    assert resp.status_code == 404
    async with env.db.session(write=True) as s:
        row = await s.get(Media, session["id"])
        row.size, row.sha256 = len(data), sha(b"other")
    assert (await put_bytes(env, session, data)).status_code == 404


async def test_expired_capability(world) -> None:
    env, brand = world.env, world.brand_a
    data = image_bytes(8, 8, "PNG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/png")
    env.clock.advance(minutes=15)
    resp = await put_bytes(env, session, data)
    assert resp.status_code == 410
    err = resp.json()["error"]
    assert err["code"] == "UPLOAD_LINK_EXPIRED" and err["retryable"] is False
    assert err["next_action"] == "create_media_upload_session"
    assert stored_files(env) == []
    item = await get_item(env, world.full_key, brand.id, session["id"])
    assert item["readiness"]["next_actions"][0]["reason_code"] == "UPLOAD_EXPIRED"


async def test_create_session_refusals_write_nothing(world) -> None:
    env, brand = world.env, world.brand_a
    good = {"filename": "a.png", "content_type": "image/png", "size": 10, "sha256": "a" * 64}
    before = await env.row_counts()
    cases = [
        ({**good, "content_type": "image/svg+xml"}, 400, "$.content_type", "NOT_ALLOWED"),
        ({**good, "content_type": "text/html"}, 400, "$.content_type", "NOT_ALLOWED"),
        ({**good, "size": 0}, 400, "$.size", "OUT_OF_RANGE"),
        ({**good, "size": 2 * 1024 ** 3}, 400, "$.size", "OUT_OF_RANGE"),
        ({**good, "size": "10"}, 400, "$.size", "INVALID_VALUE"),
        ({**good, "size": 51 * 1024 ** 2}, 422, "$.size", "TOO_LARGE"),  # images are capped at 50 MiB
        ({**good, "sha256": "A" * 64}, 400, "$.sha256", "INVALID_FORMAT"),
        ({**good, "sha256": "a" * 63}, 400, "$.sha256", "INVALID_FORMAT"),
        ({**good, "filename": "../etc/passwd"}, 400, "$.filename", "INVALID_FORMAT"),
        ({**good, "filename": "x" * 501}, 400, "$.filename", "TOO_LONG"),
        ({**good, "filename": "   "}, 422, "$.filename", "TOO_SHORT"),
        ({**good, "folder_id": "mfd_01HZZZZZZZZZZZZZZZZZZZZZZZ"}, 422, "$.folder_id", "NOT_FOUND"),
        ({**good, "fileName": "a.png"}, 400, "$.fileName", "UNKNOWN_FIELD"),
        ({k: v for k, v in good.items() if k != "sha256"}, 400, "$.sha256", "REQUIRED"),
    ]
    for i, (body, status, path, code) in enumerate(cases):
        resp = await env.rest.post(sessions_url(brand.id), json=body,
                                   headers=env.auth(world.full_key, Idempotency_Key=f"bad-{i}"))
        assert resp.status_code == status, (body, resp.json())
        issues = resp.json()["error"]["issues"]
        assert any(x["field_path"] == path and x["code"] == code for x in issues), (body, issues)
    resp = await env.rest.post(sessions_url(brand.id), json=good, headers=env.auth(world.full_key))
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == "$.idempotency_key"
    assert await env.row_counts() == before


async def test_required_idempotency_key_is_checked_after_authority(world) -> None:
    """Core fix: a route that requires a key still answers 401 / 403 first."""
    env, brand = world.env, world.brand_a
    body = {"filename": "a.png", "content_type": "image/png", "size": 10, "sha256": "a" * 64}
    resp = await env.rest.post(sessions_url(brand.id), json=body)
    assert (resp.status_code, resp.json()["error"]["code"]) == (401, "UNAUTHORIZED")
    reader = await env.key(world.ws, scopes=["media:read"], name="reader")
    resp = await env.rest.post(sessions_url(brand.id), json=body, headers=env.auth(reader))
    assert (resp.status_code, resp.json()["error"]["code"]) == (403, "INSUFFICIENT_SCOPE")


async def test_session_idempotency(world) -> None:
    env, brand = world.env, world.brand_a
    body = {"filename": "a.png", "content_type": "image/png", "size": 10, "sha256": "a" * 64}
    first = await env.rest.post(sessions_url(brand.id), json=body, headers=env.auth(world.full_key, Idempotency_Key="s1"))
    counts = await env.row_counts()
    again = await env.rest.post(sessions_url(brand.id), json=body, headers=env.auth(world.full_key, Idempotency_Key="s1"))
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["idempotency-replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]
    assert await env.row_counts() == counts
    changed = await env.rest.post(sessions_url(brand.id), json={**body, "size": 11},
                                  headers=env.auth(world.full_key, Idempotency_Key="s1"))
    assert (changed.status_code, changed.json()["error"]["code"]) == (409, "IDEMPOTENCY_KEY_CONFLICT")


async def test_mcp_style_call_matches_rest(world) -> None:
    env, brand = world.env, world.brand_a
    item = await upload(env, world.full_key, brand.id, image_bytes(30, 20, "PNG"), "image/png", "p.png")
    outcome = await env.call("get_media", world.full_key, brand_id=brand.id, media_id=item["id"])
    assert outcome.status == 200 and outcome.body["data"] == item


async def test_other_brands_media_is_not_disclosed(world) -> None:
    env = world.env
    item = await upload(env, world.full_key, world.brand_a.id, image_bytes(8, 8, "PNG"), "image/png")
    for path in (f"/v1/brands/{world.brand_b.id}/media/{item['id']}", f"/v1/brands/{world.brand_a.id}/media/{item['id']}"):
        resp = await env.rest.get(path, headers=env.auth(world.key_b_only))
        assert (resp.status_code, resp.json()["error"]["code"]) == (404, "NOT_FOUND")
    listed = await env.rest.get(f"/v1/brands/{world.brand_b.id}/media", headers=env.auth(world.key_b_only))
    assert listed.json()["data"]["items"] == []


async def test_interrupted_upload_keeps_nothing(world) -> None:
    from urllib.parse import parse_qs, urlsplit

    from tools.media.uploads import receive_upload

    env, brand = world.env, world.brand_a
    data = image_bytes(300, 300, "PNG")
    session = await start_upload(env, world.full_key, brand.id, data, "image/png")
    query = parse_qs(urlsplit(session["upload"]["url"]).query)

    async def broken():
        yield data[:1000]
        raise ConnectionResetError("client went away")

    with pytest.raises(ConnectionResetError):
        await receive_upload(env.rt, session["id"], expires=query["expires"][0], signature=query["signature"][0],
                             content_type="image/png", content_length=None, chunks=broken())
    assert stored_files(env) == []
    assert (await get_item(env, world.full_key, brand.id, session["id"]))["status"] == "pending_upload"
    assert (await put_bytes(env, session, data)).status_code == 200  # the link still works
