"""PATCH and DELETE of content items (older routes): partial updates validated as on create, and refusals once
the item is in use (the usage probes of tools/content/usage.py)."""

from __future__ import annotations

import pytest

from schemas.ids import new_id
from tests.content.conftest import Content, full_body

pytestmark = pytest.mark.anyio


async def patch(c: Content, item_id: str, body: dict):
    return await c.env.rest.patch(c.url(f"/{item_id}"), json=body, headers=c.headers())


async def test_partial_update_changes_only_given_fields(content: Content) -> None:
    env, c = content.env, content
    created = await c.created(full_body(c))
    env.clock.advance(minutes=5)
    resp = await patch(c, created["id"], {"name": " Renamed ", "label_ids": [c.labels[1]],
                                          "x_settings": None, "thumbnail_media_id": None})
    assert resp.status_code == 200, resp.json()
    item = resp.json()["data"]
    assert item["name"] == "Renamed" and item["label_ids"] == [c.labels[1]]
    assert "x_settings" not in item and item["thumbnail_media_id"] is None
    assert item["updated_at"] > created["updated_at"] and item["created_at"] == created["created_at"]
    unchanged = {k: v for k, v in created.items()
                 if k not in ("name", "label_ids", "x_settings", "thumbnail_media_id", "updated_at")}
    assert {k: item[k] for k in unchanged} == unchanged
    assert (await c.get(created["id"])).json()["data"]["content_item"] == item
    assert env.sandbox.calls == []


async def test_switching_copy_mode_needs_the_other_copy_cleared(content: Content) -> None:
    env, c = content.env, content
    created = await c.created({"name": "x", "single_copy": {"caption": "one"}})
    before = await env.row_counts()
    resp = await patch(c, created["id"], {"copy_mode": "per_platform", "platform_copy": {"x": {"caption": "x"}}})
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == "$.single_copy"
    assert await env.row_counts() == before
    resp = await patch(c, created["id"], {"copy_mode": "per_platform", "single_copy": None,
                                          "platform_copy": {"x": {"caption": "x"}}})
    assert resp.status_code == 200
    assert resp.json()["data"]["platform_copy"] == {"x": {"caption": "x", "hashtags": [], "title": None}}


@pytest.mark.parametrize(("body", "status", "path"), [
    ({}, 400, "$"),
    ({"name": None}, 400, "$.name"),
    ({"label_ids": None}, 400, "$.label_ids"),
    ({"copyMode": "single"}, 400, "$.copyMode"),
    ({"thumbnail_timestamp": -1}, 400, "$.thumbnail_timestamp"),
    ({"tiktok_settings": {"is_commercial_content": True}}, 400, "$.tiktok_settings.commercial_types"),
    ({"label_ids": "OTHER"}, 422, "$.label_ids[0]"),
    ({"instagram_settings": {"media_ids": "PROCESSING"}}, 422, "$.instagram_settings.media_ids[0]"),
    ({"intended_integration_ids": "OTHER"}, 422, "$.intended_integration_ids[0]"),
])
async def test_update_refusals_write_nothing(content: Content, body: dict, status: int, path: str) -> None:
    env, c = content.env, content
    created = await c.created({"name": "x"})
    subst = {"OTHER": None, "PROCESSING": [c.media["processing"]]}
    for k, v in list(body.items()):
        if v == "OTHER":
            body[k] = [c.other_brand["label" if k == "label_ids" else "integration"]]
        elif isinstance(v, dict):
            body[k] = {kk: subst.get(vv, vv) if isinstance(vv, str) else vv for kk, vv in v.items()}
    before = await env.row_counts()
    resp = await patch(c, created["id"], body)
    assert resp.status_code == status, resp.json()
    assert path in {i["field_path"] for i in resp.json()["error"]["issues"]}
    assert await env.row_counts() == before
    assert (await c.get(created["id"])).json()["data"]["content_item"] == created


async def test_update_checks_only_what_it_changes_against_data(content: Content) -> None:
    """Media that failed after being attached does not block renaming; re-sending it is refused."""
    env, c = content.env, content
    created = await c.created({"name": "x", "facebook_settings": {"media_ids": [c.media["img1"]]}})
    from sqlmodel import select

    from storage.tables.media import Media
    async with env.db.session(write=True) as s:
        m = (await s.exec(select(Media).where(Media.id == c.media["img1"]))).one()
        m.status = "failed"
        s.add(m)
    assert (await patch(c, created["id"], {"name": "renamed"})).status_code == 200
    resp = await patch(c, created["id"], {"facebook_settings": {"media_ids": [c.media["img1"]]}})
    assert resp.status_code == 422 and resp.json()["error"]["issues"][0]["code"] == "MEDIA_FAILED"


@pytest.mark.parametrize("state", ["scheduled", "queued", "published", "some_future_state"])
async def test_items_in_use_cannot_be_updated_or_deleted(content: Content, probes, state: str) -> None:
    env, c = content.env, content
    created = await c.created({"name": "x"})
    probes[created["id"]] = {state}
    before = await env.row_counts()
    resp = await patch(c, created["id"], {"name": "y"})
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "CONFLICT"
    assert resp.json()["error"]["details"]["usage"] == [state]
    resp = await env.rest.delete(c.url(f"/{created['id']}"), headers=c.headers())
    assert resp.status_code == 409
    assert await env.row_counts() == before
    del probes[created["id"]]
    assert (await patch(c, created["id"], {"name": "y"})).status_code == 200


async def test_delete_keeps_media_and_labels(content: Content) -> None:
    env, c = content.env, content
    created = await c.created(full_body(c))
    before = await env.row_counts()
    resp = await env.rest.delete(c.url(f"/{created['id']}"), headers=c.headers())
    assert resp.status_code == 200 and resp.json()["data"] == {"id": created["id"], "outcome": "deleted"}
    after = await env.row_counts()
    assert {t: before[t] - after[t] for t in after if after[t] != before[t]} == {"content_items": 1,
                                                                               "content_item_labels": 2}
    assert (await c.get(created["id"])).status_code == 404
    resp = await env.rest.delete(c.url(f"/{created['id']}"), headers=c.headers())
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "CONTENT_ITEM_NOT_FOUND"
    resp = await env.rest.delete(c.url(f"/{new_id('ci')}"), headers=env.auth(c.world.key_b_only))
    assert resp.status_code == 404
