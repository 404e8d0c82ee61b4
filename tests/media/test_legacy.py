"""The legacy upload flow: upload-url -> PUT bytes -> PATCH status ready_for_processing -> poll until completed;
and PATCH's other fields."""

from __future__ import annotations

import pytest

from schemas.media import MAX_BYTES
from tests.media.support import image_bytes, local, process, video_bytes
from tools.media.items import create_media_folder

pytestmark = pytest.mark.anyio


def base(brand_id: str) -> str:
    return f"/v1/brands/{brand_id}/media"


async def legacy_start(env, secret, brand_id, filename="a.png", content_type="image/png") -> dict:
    resp = await env.rest.post(f"{base(brand_id)}/upload-url", headers=env.auth(secret),
                               json={"filename": filename, "content_type": content_type})
    assert resp.status_code == 201, resp.json()
    return resp.json()["data"]


async def patch(env, secret, brand_id, media_id, **body):
    return await env.rest.patch(f"{base(brand_id)}/{media_id}", headers=env.auth(secret), json=body)


async def read(env, secret, brand_id, media_id) -> dict:
    return (await env.rest.get(f"{base(brand_id)}/{media_id}", headers=env.auth(secret))).json()["data"]


async def test_legacy_flow_end_to_end(world) -> None:
    env, brand, key = world.env, world.brand_a, world.full_key
    data = video_bytes(120, 68, seconds=1.0)
    started = await legacy_start(env, key, brand.id, "clip.mp4", "video/mp4")
    assert set(started) == {"id", "upload_url", "expires_at", "status", "links"}
    assert started["status"] == "pending_upload"
    media_id = started["id"]

    resp = await patch(env, key, brand.id, media_id, status="ready_for_processing")  # before the bytes
    assert (resp.status_code, resp.json()["error"]["code"]) == (409, "CONFLICT")
    assert resp.json()["error"]["next_action"] == "upload_media_bytes"

    resp = await env.rest.put(local(started["upload_url"]), content=data, headers={"Content-Type": "video/mp4"})
    assert resp.status_code == 200, resp.json()
    item = resp.json()["data"]
    assert (item["status"], item["size"]) == ("pending_upload", len(data))
    assert item["readiness"]["next_actions"][0]["action"] == "mark_ready_for_processing"
    again = await env.rest.put(local(started["upload_url"]), content=data, headers={"Content-Type": "video/mp4"})
    assert again.status_code == 409

    assert await process(env) == 0  # nothing starts before the PATCH
    resp = await patch(env, key, brand.id, media_id, status="ready_for_processing")
    assert resp.status_code == 200 and resp.json()["data"]["status"] == "ready_for_processing"
    counts = await env.row_counts()
    resp = await patch(env, key, brand.id, media_id, status="ready_for_processing")  # repeated: no second job
    assert resp.status_code == 200 and await env.row_counts() == counts

    assert (await read(env, key, brand.id, media_id))["readiness"]["next_actions"][0]["action"] == "read_media_again"
    assert await process(env) == 1
    item = await read(env, key, brand.id, media_id)
    assert item["status"] == "completed" and item["readiness"]["ready_for_content"] is True
    assert item["duration"] == pytest.approx(1.0, abs=0.05) and item["source"] == "legacy_upload"
    resp = await patch(env, key, brand.id, media_id, status="ready_for_processing")  # settled: unchanged
    assert resp.status_code == 200 and resp.json()["data"]["status"] == "completed"
    assert await process(env) == 0


async def test_legacy_put_refusals(world, monkeypatch) -> None:
    env, brand, key = world.env, world.brand_a, world.full_key
    started = await legacy_start(env, key, brand.id)
    path = local(started["upload_url"])
    png = image_bytes(40, 40, "PNG")
    resp = await env.rest.put(path, content=png, headers={"Content-Type": "image/jpeg"})
    assert (resp.status_code, resp.json()["error"]["code"]) == (400, "INVALID_HEADER")
    resp = await env.rest.put(path, content=b"", headers={"Content-Type": "image/png"})
    assert (resp.status_code, resp.json()["error"]["code"]) == (400, "MALFORMED_REQUEST")
    monkeypatch.setitem(MAX_BYTES, "image", 100)
    resp = await env.rest.put(path, content=png, headers={"Content-Type": "image/png"})
    assert (resp.status_code, resp.json()["error"]["code"]) == (413, "REQUEST_TOO_LARGE")

    async def stream():
        for _ in range(5):
            yield b"x" * 50

    resp = await env.rest.put(path, content=stream(), headers={"Content-Type": "image/png"})
    assert (resp.status_code, resp.json()["error"]["code"]) == (413, "REQUEST_TOO_LARGE")
    assert (await read(env, key, brand.id, started["id"]))["size"] is None
    env.clock.advance(minutes=15)
    resp = await env.rest.put(path, content=b"x", headers={"Content-Type": "image/png"})
    assert (resp.status_code, resp.json()["error"]["code"]) == (410, "UPLOAD_LINK_EXPIRED")


async def test_legacy_request_refusals(world) -> None:
    env, brand = world.env, world.brand_a
    before = await env.row_counts()
    for body, path in (({"filename": "a.png"}, "$.content_type"),
                       ({"filename": "a.png", "content_type": "application/pdf"}, "$.content_type"),
                       ({"content_type": "image/png"}, "$.filename")):
        resp = await env.rest.post(f"{base(brand.id)}/upload-url", headers=env.auth(world.full_key), json=body)
        assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == path
    assert await env.row_counts() == before


async def test_patch_fields(world) -> None:
    env, brand, key = world.env, world.brand_a, world.full_key
    async with env.db.session(write=True) as s:
        folder = await create_media_folder(s, env.clock.now(), brand, "Launch")
        foreign = await create_media_folder(s, env.clock.now(), world.brand_b, "Other")
    media_id = (await legacy_start(env, key, brand.id))["id"]
    env.clock.advance(seconds=5)
    resp = await patch(env, key, brand.id, media_id, description="Alt: a red square", folder_id=folder.id)
    item = resp.json()["data"]
    assert (item["description"], item["folder_id"]) == ("Alt: a red square", folder.id)
    assert item["updated_at"] == "2026-03-02T09:00:05.000Z"
    resp = await patch(env, key, brand.id, media_id, folder_id=None)  # only what is sent changes
    assert (resp.json()["data"]["folder_id"], resp.json()["data"]["description"]) == (None, "Alt: a red square")

    before = await env.row_counts()
    cases = [({"folder_id": foreign.id}, 422, "$.folder_id"), ({"status": "completed"}, 400, "$.status"),
             ({"status": None}, 422, "$.status"), ({"description": "x" * 10_001}, 400, "$.description"),
             ({"label_ids": []}, 400, "$.label_ids"), ({"file_name": "b.png"}, 400, "$.file_name")]
    for body, status, path in cases:
        resp = await patch(env, key, brand.id, media_id, **body)
        assert resp.status_code == status, (body, resp.json())
        assert resp.json()["error"]["issues"][0]["field_path"] == path
    assert await env.row_counts() == before
    resp = await patch(env, world.key_b_only, brand.id, media_id, description="x")
    assert resp.status_code == 404


async def test_patch_status_on_an_upload_session_item(world) -> None:
    env, brand, key = world.env, world.brand_a, world.full_key
    resp = await env.rest.post(f"{base(brand.id)}/upload-sessions", headers=env.auth(key, Idempotency_Key="u"),
                               json={"filename": "a.png", "content_type": "image/png", "size": 5, "sha256": "0" * 64})
    resp = await patch(env, key, brand.id, resp.json()["data"]["id"], status="ready_for_processing")
    assert (resp.status_code, resp.json()["error"]["code"]) == (409, "CONFLICT")
