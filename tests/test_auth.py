"""Authority over the whole catalogue: no key (401), a key without the scope (403 + required_scopes), a key
restricted to another brand (404, never 403), a member calling admin routes (403)."""

from __future__ import annotations

import pytest

from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES, disclosed
from tools import catalogue

pytestmark = pytest.mark.anyio

KEYED = [e for e in catalogue.endpoints() if not e.public]


def url_for(ep, brand_id: str) -> str:
    params = {p: (brand_id if p == "brand_id" else ("1" if p == "week_number" else new_id("zzz")))
              for p in ep.path_params}
    return ep.path.format(**params) + (f"?variant={ep.variant}" if ep.variant else "")


async def send(env, ep, url: str, secret: str | None):
    headers = env.auth(secret)
    if ep.method in ("POST", "PUT", "PATCH", "DELETE"):
        return await env.rest.request(ep.method, url, json={}, headers=headers)
    return await env.rest.request(ep.method, url, headers=headers)


def assert_envelope(resp, status: int, code: str) -> dict:
    body = resp.json()
    assert resp.status_code == status, (resp.request.url, body)
    assert body["success"] is False
    assert body["error"]["code"] == code
    assert body["error"]["status"] == status
    assert body["error"]["request_id"] == resp.headers["x-request-id"]
    return body["error"]


async def test_every_endpoint_refuses_a_missing_key(world) -> None:
    for ep in KEYED:
        assert_envelope(await send(world.env, ep, url_for(ep, world.brand_a.id), None), 401, "UNAUTHORIZED")


async def test_every_endpoint_refuses_a_key_without_its_scope(world) -> None:
    env = world.env
    for ep in (e for e in KEYED if e.scopes):
        secret = await env.key(world.ws, scopes=[s for s in ALL_SCOPES if s not in ep.scopes], role="admin",
                               name=f"no {ep.name}")
        err = assert_envelope(await send(env, ep, url_for(ep, world.brand_a.id), secret), 403, "INSUFFICIENT_SCOPE")
        assert err["details"]["required_scopes"] == list(ep.scopes), ep.name
        assert err["next_action"] == "use_authorized_api_key"


async def test_every_brand_endpoint_hides_other_brands(world) -> None:
    for ep in (e for e in KEYED if "brand_id" in e.path_params):
        resp = await send(world.env, ep, url_for(ep, world.brand_a.id), world.key_b_only)
        assert_envelope(resp, 404, "NOT_FOUND")
        # a brand of another workspace behaves the same
        resp = await send(world.env, ep, url_for(ep, new_id("brd")), world.full_key)
        assert_envelope(resp, 404, "NOT_FOUND")


async def test_admin_routes_need_an_admin_owner(world) -> None:
    env = world.env
    member = await env.key_beyond_role(world.ws, ALL_SCOPES, name="member with all scopes (made before keys were bounded)")
    for ep in (e for e in KEYED if e.roles):
        err = assert_envelope(await send(env, ep, url_for(ep, world.brand_a.id), member), 403, "ROLE_REQUIRED")
        assert set(err["details"]["required_roles"]) == set(ep.roles)


async def test_context_reports_authority_and_restriction(world) -> None:
    env = world.env
    resp = await env.rest.get("/v1/context", headers=env.auth(world.key_b_only))
    data = resp.json()["data"]
    assert data["api_key"]["brand_access"] == "restricted"
    assert data["api_key"]["brand_ids"] == [world.brand_b.id]
    assert [b["id"] for b in data["brands"]] == [world.brand_b.id]
    assert data["links"]["platform_capabilities"]["required_scopes"] == []
    full = (await env.rest.get("/v1/context", headers=env.auth(world.full_key))).json()["data"]
    assert full["api_key"]["brand_access"] == "all"
    assert [b["id"] for b in full["brands"]] == [world.brand_a.id, world.brand_b.id]
    assert full["workspace"] == {"id": world.ws.id, "name": world.ws.name}
    text = resp.text
    assert "socialpub_live_" not in text and "access_token" not in text


async def test_context_scope_disclosure(world) -> None:
    env = world.env
    secret = await env.key(world.ws, scopes=["posts:read", "publications:read", "notifications:read",
                                             "admin:read", "integrations:write"], name="mixed")
    default = (await env.rest.get("/v1/context", headers=env.auth(secret))).json()["data"]["api_key"]["scopes"]
    assert default == ["integrations:write", "posts:read", "admin:read"]
    effective = (await env.rest.get("/v1/context?scope_disclosure=effective",
                                    headers=env.auth(secret))).json()["data"]["api_key"]["scopes"]
    assert effective == ["posts:read", "publications:read", "notifications:read"]
    # disclosure grants nothing: the key still cannot use a scope it lacks
    resp = await env.rest.get(f"/v1/brands/{world.brand_a.id}", headers=env.auth(secret))
    assert resp.status_code == 403


async def test_restricted_key_reads_its_own_brand(world) -> None:
    env = world.env
    resp = await env.rest.get(f"/v1/brands/{world.brand_b.id}", headers=env.auth(world.key_b_only))
    assert resp.status_code == 200 and resp.json()["data"]["id"] == world.brand_b.id
    listed = (await env.rest.get("/v1/brands", headers=env.auth(world.key_b_only))).json()
    assert [b["id"] for b in listed["data"]] == [world.brand_b.id]
    assert listed["pagination"] == {"page": 1, "limit": 50, "has_more": False}


def test_role_checked_scopes_are_those_of_the_role_gated_routes() -> None:
    """usable_scopes keeps exactly the scopes whose routes answer ROLE_REQUIRED themselves."""
    from schemas.scopes import ROLE_CHECKED_SCOPES

    gated = {s for e in KEYED if e.roles for s in e.scopes}
    ungated = {s for e in KEYED if not e.roles for s in e.scopes}
    assert gated == ROLE_CHECKED_SCOPES and not ROLE_CHECKED_SCOPES & ungated


async def test_a_members_key_made_beyond_its_role_never_publishes(world) -> None:
    """A member's key stored with publish:execute (made before key creation refused it) cannot use it."""
    env = world.env
    legacy = await env.key_beyond_role(world.ws, ALL_SCOPES, name="member key from before issue 27")
    context = (await env.rest.get("/v1/context", headers=env.auth(legacy))).json()["data"]
    assert "publish:execute" not in context["api_key"]["scopes"]
    resp = await env.rest.post(f"/v1/brands/{world.brand_a.id}/schedules/sch_x/approve",
                               json={"confirm_schedule_id": "sch_x"},
                               headers=env.auth(legacy, **{"Idempotency-Key": "k1"}))
    assert_envelope(resp, 403, "INSUFFICIENT_SCOPE")

async def test_context_names_the_held_scopes_its_default_list_leaves_out(world) -> None:
    """A receipt's History link requires publications:read, which the default context list leaves out (the spec
    keeps that list for older clients): get_context's description and its scope_disclosure parameter name every
    such scope, so an agent reads again with `effective` instead of concluding it lacks one."""
    env = world.env
    op = (await env.rest.get("/v1/openapi.json")).json()["paths"]["/v1/context"]["get"]
    text = " ".join(str(op.get(k, "")) for k in ("summary", "description"))
    (param,) = [p for p in op["parameters"] if p["name"] == "scope_disclosure"]
    required_by_history = catalogue.get("list_history").scopes
    hidden = [s for s in required_by_history if s not in disclosed(set(ALL_SCOPES), effective=False)]
    assert hidden == ["publications:read"]
    for name in [*hidden, "notifications:read"]:
        assert name in text and name in param.get("description", ""), name

    secret = await env.key(world.ws, scopes=["schedule:read", "publications:read"], name="history")
    effective = (await env.rest.get("/v1/context?scope_disclosure=effective",
                                    headers=env.auth(secret))).json()["data"]["api_key"]["scopes"]
    assert set(required_by_history) <= set(effective)
