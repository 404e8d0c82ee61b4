"""Targets, the older integration routes: shapes, readiness, discovery rows, paging, visibility."""

from __future__ import annotations

import pytest

from schemas.platforms import BY_KEY as PLATFORMS_BY_KEY
from schemas.platforms import PLATFORM_KEYS, PLATFORMS
from schemas.targets import MAX_TARGETS
from storage.tables.integrations import Integration
from tools.operator import actions as operator

pytestmark = pytest.mark.anyio

INTEGRATION_FIELDS = {"id", "platform", "status", "brand_id", "display_name", "username", "avatar_url",
                      "permissions", "created_at", "updated_at"}


async def stored(env, integration_id: str) -> dict:
    async with env.db.session(write=False) as s:
        return (await s.get(Integration, integration_id)).model_dump()


async def patch(env, integration_id: str, **fields) -> None:
    async with env.db.session(write=True) as s:
        row = await s.get(Integration, integration_id)
        for k, v in fields.items():
            setattr(row, k, v)
        s.add(row)


def assert_no_secrets(text: str, *rows: dict) -> None:
    assert "access_token" not in text and "credentials" not in text and "provider_account_id" not in text
    for row in rows:
        assert row["credentials"]["access_token"] not in text
        assert row["provider_account_id"] not in text


async def targets(env, brand_id: str, secret: str) -> list[dict]:
    resp = await env.rest.get(f"/v1/brands/{brand_id}/targets", headers=env.auth(secret))
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["targets"]


async def test_targets_list_every_account_and_a_discovery_row_per_missing_platform(world) -> None:
    env = world.env
    before, calls = await env.row_counts(), len(env.sandbox.calls)
    resp = await env.rest.get(f"/v1/brands/{world.brand_a.id}/targets", headers=env.auth(world.full_key))
    assert resp.status_code == 200
    body = resp.json()
    data = body["data"]
    assert data["brand_id"] == world.brand_a.id and data["truncated"] is False
    assert data["links"]["self"] == {"href": f"/v1/brands/{world.brand_a.id}/targets",
                                     "required_scopes": ["integrations:read"]}
    assert data["links"]["integrations"]["href"] == f"/v1/brands/{world.brand_a.id}/integrations"
    assert data["links"]["platform_capabilities"] == {"href": "/v1/platforms/capabilities", "required_scopes": []}
    rows = data["targets"]
    # one row per registry platform here (8 accounts + 5 discovery rows), in registry order
    assert [r["platform"] for r in rows] == list(PLATFORM_KEYS)
    for row in rows:
        p = PLATFORMS_BY_KEY[row["platform"]]
        assert row["capabilities"] == {
            "platform_name": p.display_name, "account_modes": list(p.account_modes), "post_types": list(p.post_types),
            "default_post_type": p.default_post_type, "settings_key": p.settings_key,
            "dynamic_options": p.dynamic_options}
        if row["platform"] in world.integrations:
            integ = world.integrations[row["platform"]]
            assert row["integration_id"] == integ.id
            assert row["connection_status"] == "connected" and row["schedulable"] is True
            assert row["blockers"] == [] and row["repair_actions"] == []
            assert (row["display_name"], row["username"], row["avatar_url"]) == (
                integ.display_name, integ.username, integ.avatar_url)
            links = row["links"]
            assert links["integration"] == {
                "href": f"/v1/brands/{world.brand_a.id}/integrations/{integ.id}", "required_scopes": ["integrations:read"]}
            if p.dynamic_options:
                base = f"/v1/brands/{world.brand_a.id}/targets/{integ.id}/dynamic-options"
                assert links["dynamic_options"] == {"href": base, "required_scopes": ["integrations:read"]}
                assert links["refresh_dynamic_options"] == {"href": base, "method": "POST",
                                                            "required_scopes": ["integrations:write"]}
            else:
                assert set(links) == {"integration"}
        else:
            assert row["integration_id"] is None and row["connection_status"] == "disconnected"
            assert row["schedulable"] is False and row["links"] == {}
            assert row["display_name"] is None and row["username"] is None
            [blocker] = row["blockers"]
            assert blocker["code"] == "INTEGRATION_NOT_CONNECTED" and blocker["severity"] == "blocker"
            assert blocker["integration_id"] is None and blocker["platform"] == row["platform"]
            assert blocker["field_path"] == "$.connection_status" and blocker["scope"] == "connection"
            assert row["repair_actions"] == [blocker["repair_action"]]
            action = blocker["repair_action"]
            assert action["action"] == "connect_integration" and p.display_name in action["label"]
            assert f"--platform {p.key}" in action["guidance"]
    secret_rows = [await stored(env, i.id) for i in world.integrations.values()]
    assert_no_secrets(resp.text, *secret_rows)
    # read-only and provider-free
    assert await env.row_counts() == before and len(env.sandbox.calls) == calls
    # the same body through direct dispatch (what MCP uses)
    direct = await env.call("list_targets", world.full_key, brand_id=world.brand_a.id)
    assert direct.status == 200 and direct.body["data"] == data


async def test_targets_report_blockers_and_repair_actions(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws, "Blocked")
    expired = await env.integration(brand, "tiktok", status="expired")
    reauth = await env.integration(brand, "instagram", status="needs_reauth")
    no_publish = await env.integration(brand, "linkedin")
    await patch(env, no_publish.id, permissions={"publish": False})
    no_creds = await env.integration(brand, "pinterest")
    await patch(env, no_creds.id, credentials=None)
    ok = await env.integration(brand, "tiktok")
    key = await env.key(ws, scopes=["integrations:read"])
    listed = await targets(env, brand.id, key)
    rows = {r["integration_id"]: r for r in listed}
    for integ, status in ((expired, "expired"), (reauth, "needs_reauth")):
        row = rows[integ.id]
        assert row["connection_status"] == status and row["schedulable"] is False
        [blocker] = row["blockers"]
        assert blocker["code"] == "RECONNECT_REQUIRED" and blocker["integration_id"] == integ.id
        assert blocker["repair_action"]["action"] == "reconnect_integration"
        assert blocker["repair_action"]["id"] == f"reconnect_integration:{integ.id}"
        assert row["repair_actions"] == [blocker["repair_action"]]
        assert row["repair_actions"][0]["guidance"]
        assert "dynamic_options" not in row["links"]  # follow the repair action, not a route that would fail
    assert rows[no_publish.id]["blockers"][0]["code"] == "PUBLISH_PERMISSION_MISSING"
    assert rows[no_publish.id]["blockers"][0]["field_path"] == "$.permissions.publish"
    assert rows[no_publish.id]["schedulable"] is False
    assert rows[no_creds.id]["blockers"][0]["code"] == "RECONNECT_REQUIRED"
    assert rows[ok.id]["schedulable"] is True and "dynamic_options" in rows[ok.id]["links"]
    # the expired TikTok and the connected one sit together; no discovery row for platforms the brand has
    ordered = [r["integration_id"] for r in listed if r["platform"] == "tiktok"]
    assert ordered == [expired.id, ok.id]
    assert [r["platform"] for r in listed if r["integration_id"] is None] == [
        p.key for p in PLATFORMS if p.key not in {"tiktok", "instagram", "linkedin", "pinterest"}]


async def test_targets_list_is_bounded(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws, "Many")
    async with env.db.session(write=True) as s:
        for n in range(MAX_TARGETS):
            await operator.connect_integration(s, env.clock.now(), brand, "instagram", username=f"acct{n}")
    env.clock.advance(seconds=1)
    await env.integration(brand, "bluesky")  # the 101st account, beyond the bound
    key = await env.key(ws, scopes=["integrations:read"])
    resp = await env.rest.get(f"/v1/brands/{brand.id}/targets", headers=env.auth(key))
    data = resp.json()["data"]
    assert data["truncated"] is True
    accounts = [r for r in data["targets"] if r["integration_id"]]
    assert len(accounts) == MAX_TARGETS and {r["platform"] for r in accounts} == {"instagram"}
    discovery = {r["platform"] for r in data["targets"] if r["integration_id"] is None}
    assert "bluesky" not in discovery and "instagram" not in discovery  # the brand has both
    assert len(discovery) == len(PLATFORMS) - 2


async def test_targets_of_a_brand_without_accounts_are_all_discovery_rows(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws, "Empty")
    key = await env.key(ws, scopes=["integrations:read"])
    rows = await targets(env, brand.id, key)
    assert [r["platform"] for r in rows] == list(PLATFORM_KEYS)
    assert all(r["integration_id"] is None and r["schedulable"] is False for r in rows)


async def test_targets_refusals(world) -> None:
    env = world.env
    a = world.brand_a.id
    no_scope = await env.key(world.ws, scopes=["posts:read"])
    resp = await env.rest.get(f"/v1/brands/{a}/targets", headers=env.auth(no_scope))
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["integrations:read"]
    resp = await env.rest.get(f"/v1/brands/{a}/targets", headers=env.auth(world.key_b_only))
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND"
    resp = await env.rest.get(f"/v1/brands/{a}/targets?limit=5", headers=env.auth(world.full_key))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY"
    assert resp.json()["error"]["issues"][0]["field_path"] == "$.limit"


async def test_list_integrations_older_shape_and_paging(world) -> None:
    env = world.env
    a = world.brand_a.id
    resp = await env.rest.get(f"/v1/brands/{a}/integrations", headers=env.auth(world.full_key))
    body = resp.json()
    assert resp.status_code == 200 and body["success"] is True
    assert body["pagination"] == {"page": 1, "limit": 50, "has_more": False}
    assert body["meta"]["request_id"] == resp.headers["x-request-id"]
    ids = [i["id"] for i in body["data"]]
    assert ids == [i.id for i in world.integrations.values()]  # oldest first, brand A only
    first = body["data"][0]
    assert set(first) == INTEGRATION_FIELDS
    integ = world.integrations["instagram"]
    assert first == {
        "id": integ.id, "platform": "instagram", "status": "connected", "brand_id": a,
        "display_name": integ.display_name, "username": integ.username, "avatar_url": integ.avatar_url,
        "permissions": {"publish": True, "read_insights": True}, "created_at": "2026-03-02T09:00:00.000Z",  # Instagram post metrics are read
        "updated_at": "2026-03-02T09:00:00.000Z"}
    assert_no_secrets(resp.text, *[await stored(env, i) for i in ids])

    pages, page = [], 1
    while True:
        resp = await env.rest.get(f"/v1/brands/{a}/integrations?page={page}&limit=3", headers=env.auth(world.full_key))
        body = resp.json()
        assert body["pagination"]["page"] == page and body["pagination"]["limit"] == 3
        pages.append([i["id"] for i in body["data"]])
        if not body["pagination"]["has_more"]:
            break
        page += 1
    assert pages == [ids[0:3], ids[3:6], ids[6:8]]
    beyond = (await env.rest.get(f"/v1/brands/{a}/integrations?page=9&limit=3",
                                 headers=env.auth(world.full_key))).json()
    assert beyond["data"] == [] and beyond["pagination"]["has_more"] is False
    ok = await env.rest.get(f"/v1/brands/{a}/integrations?limit=100", headers=env.auth(world.full_key))
    assert ok.status_code == 200 and ok.json()["pagination"]["limit"] == 100

    direct = await env.call("list_integrations", world.full_key, brand_id=a, page=1, limit=3)
    assert direct.body["data"] == [i for i in (await env.rest.get(
        f"/v1/brands/{a}/integrations?limit=3", headers=env.auth(world.full_key))).json()["data"]]
    assert direct.body["pagination"] == {"page": 1, "limit": 3, "has_more": True}


@pytest.mark.parametrize("query, path", [("limit=101", "$.limit"), ("limit=0", "$.limit"), ("page=0", "$.page"),
                                         ("limit=ten", "$.limit"), ("sort=asc", "$.sort")])
async def test_list_integrations_refuses_bad_paging(world, query: str, path: str) -> None:
    env = world.env
    before = await env.row_counts()
    resp = await env.rest.get(f"/v1/brands/{world.brand_a.id}/integrations?{query}", headers=env.auth(world.full_key))
    err = resp.json()["error"]
    assert resp.status_code == 400 and err["code"] == "INVALID_QUERY"
    assert [i["field_path"] for i in err["issues"]] == [path]
    assert await env.row_counts() == before


async def test_get_integration(world) -> None:
    env = world.env
    a, b = world.brand_a.id, world.brand_b.id
    integ = world.integrations["tiktok"]
    resp = await env.rest.get(f"/v1/brands/{a}/integrations/{integ.id}", headers=env.auth(world.full_key))
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert set(data) == INTEGRATION_FIELDS and data["id"] == integ.id and data["brand_id"] == a
    assert_no_secrets(resp.text, await stored(env, integ.id))
    direct = await env.call("get_integration", world.full_key, brand_id=a, integration_id=integ.id)
    assert direct.body["data"] == data

    # an account of brand B through brand A's path is not disclosed
    b_integ = (await env.rest.get(f"/v1/brands/{b}/integrations", headers=env.auth(world.full_key))).json()["data"][0]
    for path in (f"/v1/brands/{a}/integrations/{b_integ['id']}",
                 f"/v1/brands/{a}/integrations/int_01AAAAAAAAAAAAAAAAAAAAAAAA",
                 f"/v1/brands/{a}/integrations/%20{integ.id}"):
        resp = await env.rest.get(path, headers=env.auth(world.full_key))
        err = resp.json()["error"]
        assert resp.status_code == 404 and err["code"] == "NOT_FOUND", path
    resp = await env.rest.get(f"/v1/brands/{a}/integrations/int_01AAAAAAAAAAAAAAAAAAAAAAAA",
                              headers=env.auth(world.full_key))
    assert resp.json()["error"]["next_action"] == "list_targets"
    # the key restricted to brand B cannot reach brand A's account even with its ID
    resp = await env.rest.get(f"/v1/brands/{a}/integrations/{integ.id}", headers=env.auth(world.key_b_only))
    assert resp.status_code == 404
