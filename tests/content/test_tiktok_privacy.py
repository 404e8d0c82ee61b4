"""PUT .../content-items/{id}/tiktok-privacy: a live check of the target's options right before the write."""

from __future__ import annotations

import pytest
from sqlmodel import select

from storage.tables.integrations import Integration
from tests.content.conftest import Content

pytestmark = pytest.mark.anyio


async def _draft(c: Content, **tiktok) -> dict:
    tiktok_id = c.integrations["tiktok"].id
    return await c.created({"name": "tt", "tiktok_settings": {"post_type": "VIDEO", **tiktok},
                            "intended_integration_ids": [tiktok_id]})


async def put(c: Content, item_id: str, body: dict, **headers: str):
    return await c.env.rest.put(c.url(f"/{item_id}/tiktok-privacy"), json=body, headers=c.headers(**headers))


async def test_update_then_unchanged(content: Content) -> None:
    env, c = content.env, content
    item = await _draft(c)
    tiktok_id = c.integrations["tiktok"].id
    env.clock.advance(seconds=3)
    resp = await put(c, item["id"], {"integration_id": tiktok_id, "privacy_level": "MUTUAL_FOLLOW_FRIENDS"})
    assert resp.status_code == 200, resp.json()
    base = f"/v1/brands/{c.brand_id}"
    assert resp.json()["data"] == {
        "content_item_id": item["id"], "brand_id": c.brand_id, "integration_id": tiktok_id,
        "privacy_level": "MUTUAL_FOLLOW_FRIENDS", "outcome": "updated", "next_action": {"action": "preflight_content"},
        "links": {
            "self": {"href": f"{base}/content-items/{item['id']}/tiktok-privacy", "method": "PUT",
                     "required_scopes": ["posts:write"]},
            "preflight": {"href": f"{base}/content-items/{item['id']}/preflight", "method": "POST",
                          "required_scopes": ["schedule:write"]},
            "dynamic_options": {"href": f"{base}/targets/{tiktok_id}/dynamic-options",
                                "required_scopes": ["integrations:read"]},
        },
    }
    # one fresh, non-refreshing read of that target
    assert env.sandbox.calls == [{"op": "dynamic_options", "integration_id": tiktok_id, "refresh": False}]
    after = (await c.get(item["id"])).json()["data"]["content_item"]
    assert after["tiktok_settings"] == {**item["tiktok_settings"], "privacy_level": "MUTUAL_FOLLOW_FRIENDS"}
    assert after["updated_at"] > item["updated_at"]
    before = await env.row_counts()
    env.clock.advance(seconds=3)
    again = await put(c, item["id"], {"integration_id": tiktok_id, "privacy_level": "MUTUAL_FOLLOW_FRIENDS"})
    assert again.status_code == 200 and again.json()["data"]["outcome"] == "unchanged"
    assert "idempotency-replayed" not in again.headers
    assert (await c.get(item["id"])).json()["data"]["content_item"] == after  # not even updated_at moved
    assert await env.row_counts() == before
    assert len(env.sandbox.calls) == 2  # checked live again


async def test_stale_or_unsupported_value_changes_nothing(content: Content) -> None:
    env, c = content.env, content
    item = await _draft(c, privacy_level="SELF_ONLY")
    async with env.db.session(write=True) as s:
        integ = (await s.exec(select(Integration).where(Integration.id == c.integrations["tiktok"].id))).one()
        integ.provider_state = {"privacy_levels": ["SELF_ONLY", "FOLLOWER_OF_CREATOR"]}
        s.add(integ)
    before = await env.row_counts()
    resp = await put(c, item["id"], {"integration_id": integ.id, "privacy_level": "PUBLIC_TO_EVERYONE"})
    err = resp.json()["error"]
    assert resp.status_code == 422 and err["code"] == "DOMAIN_VALIDATION_FAILED"
    assert err["issues"][0] == {"code": "STALE_OPTION", "field_path": "$.privacy_level",
                                "message": "Not among the account's current privacy options."}
    assert err["details"]["allowed_values"] == ["FOLLOWER_OF_CREATOR", "SELF_ONLY"]
    assert (await c.get(item["id"])).json()["data"]["content_item"] == item
    assert await env.row_counts() == before
    resp = await put(c, item["id"], {"integration_id": integ.id, "privacy_level": "FOLLOWER_OF_CREATOR"})
    assert resp.status_code == 200 and resp.json()["data"]["outcome"] == "updated"


@pytest.mark.parametrize(("fault", "status", "code", "retryable"), [
    ("reauth_required", 422, "DOMAIN_VALIDATION_FAILED", False),
    ("transient", 503, "DEPENDENCY_UNAVAILABLE", True),
    # one mapping of provider error kinds (tools/services/accounts.py), as for dynamic options
    ("rate_limited", 429, "RATE_LIMITED", True),
    ("rejected", 422, "DOMAIN_VALIDATION_FAILED", False),
    ("malformed", 503, "DEPENDENCY_UNAVAILABLE", False),
])
async def test_provider_failures_are_explicit(content: Content, fault, status, code, retryable) -> None:
    env, c = content.env, content
    item = await _draft(c)
    async with env.db.session(write=True) as s:
        integ = (await s.exec(select(Integration).where(Integration.id == c.integrations["tiktok"].id))).one()
        integ.provider_state = {"faults": {"dynamic_options": fault}}
        s.add(integ)
    before = await env.row_counts()
    resp = await put(c, item["id"], {"integration_id": integ.id, "privacy_level": "SELF_ONLY"})
    err = resp.json()["error"]
    assert (resp.status_code, err["code"], err["retryable"]) == (status, code, retryable)
    assert ("retry-after" in resp.headers) == retryable
    assert (await c.get(item["id"])).json()["data"]["content_item"] == item
    assert await env.row_counts() == before


async def test_refusals(content: Content, probes) -> None:
    env, c = content.env, content
    tiktok_id = c.integrations["tiktok"].id
    item = await _draft(c)
    not_intended = await c.created({"name": "n", "tiktok_settings": {}})
    no_settings = await c.created({"name": "n", "intended_integration_ids": [tiktok_id]})
    used = await _draft(c)
    probes[used["id"]] = {"scheduled"}
    cases = [
        (item["id"], {"integration_id": c.integrations["instagram"].id, "privacy_level": "SELF_ONLY"}, {},
         422, "$.integration_id", "NOT_TIKTOK"),
        (item["id"], {"integration_id": c.other_brand["integration"], "privacy_level": "SELF_ONLY"}, {},
         422, "$.integration_id", "NOT_FOUND"),
        (not_intended["id"], {"integration_id": tiktok_id, "privacy_level": "SELF_ONLY"}, {},
         422, "$.integration_id", "NOT_INTENDED_TARGET"),
        (no_settings["id"], {"integration_id": tiktok_id, "privacy_level": "SELF_ONLY"}, {},
         422, "$.content_item_id", "NO_TIKTOK_SETTINGS"),
        (item["id"], {"integration_id": tiktok_id, "privacy_level": "FRIENDS"}, {}, 400, "$.privacy_level",
         "NOT_ALLOWED"),
        (item["id"], {"integration_id": tiktok_id}, {}, 400, "$.privacy_level", "REQUIRED"),
        (item["id"], {"integration_id": tiktok_id, "privacy_level": "SELF_ONLY", "privacyLevel": "x"}, {}, 400,
         "$.privacyLevel", "CAMEL_CASE_KEY"),
        (item["id"], {"integration_id": tiktok_id, "privacy_level": "SELF_ONLY"}, {"Idempotency_Key": "k"}, 400,
         "$.idempotency_key", "NOT_ACCEPTED"),
        (item["id"], {"integration_id": tiktok_id, "privacy_level": "SELF_ONLY", "idempotency_key": "k"}, {}, 400,
         "$.idempotency_key", "NOT_ACCEPTED"),
        (used["id"], {"integration_id": tiktok_id, "privacy_level": "SELF_ONLY"}, {}, 409, None, None),
    ]
    for item_id, body, headers, status, path, issue_code in cases:
        before = await env.row_counts()
        resp = await put(c, item_id, body, **headers)
        err = resp.json()["error"]
        assert resp.status_code == status, (body, err)
        if path:
            assert {"field_path": path, "code": issue_code} in [
                {"field_path": i["field_path"], "code": i["code"]} for i in err["issues"]], err
        assert await env.row_counts() == before
    assert env.sandbox.calls == []  # refused before any provider read
    resp = await env.rest.put(f"/v1/brands/{c.world.brand_b.id}/content-items/{item['id']}/tiktok-privacy",
                              json={"integration_id": tiktok_id, "privacy_level": "SELF_ONLY"}, headers=c.headers())
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "CONTENT_ITEM_NOT_FOUND"
