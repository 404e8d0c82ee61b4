"""Drafts: the unused-drafts list, and the confirmed, idempotent name/caption edit and delete."""

from __future__ import annotations

import pytest

from schemas.ids import new_id
from tests.content.conftest import Content, full_body

pytestmark = pytest.mark.anyio


def drafts_url(c: Content, suffix: str = "") -> str:
    return f"/v1/brands/{c.brand_id}/drafts{suffix}"


async def test_list_drafts_shape_and_order(content: Content, probes) -> None:
    env, c = content.env, content
    first = await c.created({"name": "first", "single_copy": {"caption": "c" * 300}})
    env.clock.advance(seconds=1)
    body = full_body(c)
    second = await c.created(body)
    env.clock.advance(seconds=1)
    used = await c.created({"name": "scheduled one"})
    probes[used["id"]] = {"scheduled"}
    data = (await env.rest.get(drafts_url(c), headers=c.headers())).json()["data"]
    assert data["has_more"] is False
    assert [d["id"] for d in data["items"]] == [second["id"], first["id"]]
    assert data["items"][0] == {
        "id": second["id"], "name": "Autumn launch", "caption_preview": "New roast is here", "media_count": 4,
        "thumbnail_media_id": c.media["img1"], "intended_integration_ids": body["intended_integration_ids"],
        "updated_at": second["updated_at"],
        "links": {"self": {"href": c.url(f"/{second['id']}"), "required_scopes": ["posts:read"]}},
    }
    assert data["items"][1]["caption_preview"] == "c" * 279 + "…" and data["items"][1]["media_count"] == 0
    assert data["items"][1]["thumbnail_media_id"] is None


async def test_at_most_50_and_label_filter_before_the_cut(content: Content, probes) -> None:
    env, c = content.env, content
    labelled = await c.created({"name": "old labelled", "label_ids": [c.labels[0]]})
    for n in range(51):
        env.clock.advance(seconds=1)
        item = await c.created({"name": f"d{n}"})
        if n % 10 == 0:
            probes[item["id"]] = {"queued"}  # in use: never listed, and not counted in the 50
    data = (await env.rest.get(drafts_url(c), headers=c.headers())).json()["data"]
    assert len(data["items"]) == 46 and data["has_more"] is False
    env.clock.advance(seconds=1)
    for n in range(5):
        await c.created({"name": f"more{n}"})
    data = (await env.rest.get(drafts_url(c), headers=c.headers())).json()["data"]
    assert len(data["items"]) == 50 and data["has_more"] is True
    assert labelled["id"] not in [d["id"] for d in data["items"]]
    only = (await env.rest.get(drafts_url(c), params={"label": c.labels[0]}, headers=c.headers())).json()["data"]
    assert [d["id"] for d in only["items"]] == [labelled["id"]]
    none = (await env.rest.get(drafts_url(c), params={"label": c.labels[1]}, headers=c.headers())).json()["data"]
    assert none == {"items": [], "has_more": False}
    for bad, status in ((c.other_brand["label"], 422), (new_id("lbl"), 422), (" " + c.labels[0], 400)):
        resp = await env.rest.get(drafts_url(c), params={"label": bad}, headers=c.headers())
        assert resp.status_code == status and resp.json()["error"]["issues"][0]["field_path"] == "$.label"


async def test_update_draft(content: Content) -> None:
    env, c = content.env, content
    item = await c.created({"name": "draft", "single_copy": {"caption": "old", "hashtags": ["a"], "title": "T"}})
    env.clock.advance(seconds=5)
    h = c.headers(**{"Idempotency-Key": "edit-1"})
    body = {"confirm_draft_id": item["id"], "name": " New name ", "caption": "new caption"}
    resp = await env.rest.patch(drafts_url(c, f"/{item['id']}"), json=body, headers=h)
    assert resp.status_code == 200 and resp.json()["data"] == {"id": item["id"], "outcome": "updated"}
    after = (await c.get(item["id"])).json()["data"]["content_item"]
    assert after["name"] == "New name"
    assert after["single_copy"] == {"caption": "new caption", "hashtags": ["a"], "title": "T"}  # only the caption
    assert after["updated_at"] > item["updated_at"]
    again = await env.rest.patch(drafts_url(c, f"/{item['id']}"), json=body, headers=h)
    assert again.status_code == 200 and again.headers["idempotency-replayed"] == "true"
    assert again.json()["data"] == {"id": item["id"], "outcome": "updated"}
    other = await env.rest.patch(drafts_url(c, f"/{item['id']}"), json={**body, "caption": "x"}, headers=h)
    assert other.status_code == 409 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    # an empty caption clears it
    resp = await env.rest.patch(drafts_url(c, f"/{item['id']}"), json={"confirm_draft_id": item["id"], "caption": ""},
                                headers=c.headers(**{"Idempotency-Key": "edit-2"}))
    assert resp.status_code == 200
    assert (await c.get(item["id"])).json()["data"]["content_item"]["single_copy"]["caption"] == ""
    # a draft without copy gets a single copy
    bare = await c.created({"name": "bare"})
    resp = await env.rest.patch(drafts_url(c, f"/{bare['id']}"), json={"confirm_draft_id": bare["id"],
                                                                       "caption": "hi"},
                                headers=c.headers(**{"Idempotency-Key": "edit-3"}))
    assert resp.status_code == 200
    assert (await c.get(bare["id"])).json()["data"]["content_item"]["single_copy"] == {
        "caption": "hi", "hashtags": [], "title": None}


async def test_update_draft_refusals(content: Content, probes) -> None:
    env, c = content.env, content
    item = await c.created({"name": "draft"})
    per = await c.created({"name": "per", "copy_mode": "per_platform", "platform_copy": {"x": {"caption": "x"}}})
    used = await c.created({"name": "used"})
    probes[used["id"]] = {"published"}
    cases = [
        (item["id"], {"confirm_draft_id": per["id"], "name": "x"}, "k1", 422, "DOMAIN_VALIDATION_FAILED",
         "$.confirm_draft_id"),
        (item["id"], {"name": "x"}, "k2", 400, "MALFORMED_REQUEST", "$.confirm_draft_id"),
        (item["id"], {"confirm_draft_id": item["id"]}, "k3", 400, "MALFORMED_REQUEST", "$"),
        (item["id"], {"confirm_draft_id": item["id"], "name": "n" * 201}, "k4", 400, "MALFORMED_REQUEST", "$.name"),
        (item["id"], {"confirm_draft_id": item["id"], "name": "  "}, "k5", 400, "MALFORMED_REQUEST", "$.name"),
        (item["id"], {"confirm_draft_id": item["id"], "caption": "c" * 20_001}, "k6", 400, "MALFORMED_REQUEST",
         "$.caption"),
        (item["id"], {"confirm_draft_id": item["id"], "name": "x"}, None, 400, "MALFORMED_REQUEST",
         "$.idempotency_key"),
        (item["id"], {"confirm_draft_id": item["id"], "name": "x", "media_ids": []}, "k7", 400, "MALFORMED_REQUEST",
         "$.media_ids"),
        (per["id"], {"confirm_draft_id": per["id"], "caption": "x"}, "k8", 422, "DOMAIN_VALIDATION_FAILED",
         "$.caption"),
        (used["id"], {"confirm_draft_id": used["id"], "name": "x"}, "k9", 409, "CONFLICT", None),
    ]
    for draft_id, body, key, status, code, path in cases:
        before = await env.row_counts()
        headers = c.headers(**({"Idempotency-Key": key} if key else {}))
        resp = await env.rest.patch(drafts_url(c, f"/{draft_id}"), json=body, headers=headers)
        err = resp.json()["error"]
        assert (resp.status_code, err["code"]) == (status, code), (body, err)
        if path:
            assert path in {i["field_path"] for i in err["issues"]}, err
        assert await env.row_counts() == before
    missing = new_id("ci")
    resp = await env.rest.patch(drafts_url(c, f"/{missing}"), json={"confirm_draft_id": missing, "name": "x"},
                                headers=c.headers(**{"Idempotency-Key": "k10"}))
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "CONTENT_ITEM_NOT_FOUND"
    # the name limit is 200 here: exactly 200 is fine
    resp = await env.rest.patch(drafts_url(c, f"/{item['id']}"), json={"confirm_draft_id": item["id"],
                                                                       "name": "n" * 200,
                                                                       "caption": "c" * 20_000},
                                headers=c.headers(**{"Idempotency-Key": "k11"}))
    assert resp.status_code == 200


async def test_delete_draft(content: Content, probes) -> None:
    env, c = content.env, content
    item = await c.created(full_body(c))
    used = await c.created({"name": "used"})
    probes[used["id"]] = {"scheduled"}
    url = drafts_url(c, f"/{item['id']}")
    before = await env.row_counts()
    resp = await env.rest.request("DELETE", url, json={"confirm_draft_id": used["id"]},
                                  headers=c.headers(**{"Idempotency-Key": "d0"}))
    assert resp.status_code == 422 and resp.json()["error"]["issues"][0]["field_path"] == "$.confirm_draft_id"
    resp = await env.rest.request("DELETE", url, json={"confirm_draft_id": item["id"]}, headers=c.headers())
    assert resp.status_code == 400 and resp.json()["error"]["issues"][0]["field_path"] == "$.idempotency_key"
    resp = await env.rest.request("DELETE", drafts_url(c, f"/{used['id']}"), json={"confirm_draft_id": used["id"]},
                                  headers=c.headers(**{"Idempotency-Key": "d1"}))
    assert resp.status_code == 409
    assert await env.row_counts() == before
    h = c.headers(**{"Idempotency-Key": "d2"})
    resp = await env.rest.request("DELETE", url, json={"confirm_draft_id": item["id"]}, headers=h)
    assert resp.status_code == 200 and resp.json()["data"] == {"id": item["id"], "outcome": "deleted"}
    after = await env.row_counts()
    assert after["media"] == before["media"] and after["labels"] == before["labels"]
    assert after["content_items"] == before["content_items"] - 1
    replay = await env.rest.request("DELETE", url, json={"confirm_draft_id": item["id"]}, headers=h)
    assert replay.status_code == 200 and replay.headers["idempotency-replayed"] == "true"
    assert replay.json()["data"] == {"id": item["id"], "outcome": "deleted"}
    assert env.sandbox.calls == []
