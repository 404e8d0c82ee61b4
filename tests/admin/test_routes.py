"""Admin marketing routes: success shapes, limits, refusals (scope, role, brand kind, input) that write
nothing, and idempotency where it applies. The scan/pipeline flow is in test_admin_flow.py, claims in
test_admin_claim.py."""

from __future__ import annotations

import pytest

from schemas.scopes import ALL_SCOPES
from tests.admin.support import ADMIN_PATHS, admin_setup, create_prospect, install_dns, patch, path
from tools import catalogue

pytestmark = pytest.mark.anyio

ADMIN = [e for e in catalogue.endpoints() if e.toolset == "admin"]
BRAND_FIELDS = {"id", "name", "description", "logo_url", "logo_light_url", "logo_dark_url", "timezone", "website",
                "business_category", "brand_kit", "content_preferences", "image_posting", "video_posting",
                "created_at", "updated_at"}


@pytest.fixture
async def s(env):
    return await admin_setup(env)


def assert_error(resp, status: int, code: str) -> dict:
    body = resp.json()
    assert resp.status_code == status, body
    assert body["success"] is False and body["error"]["code"] == code, body
    return body["error"]


async def send(env, ep, brand_id: str, secret: str, body: dict | None = None):
    url = ep.path.format(brand_id=brand_id)
    if ep.method == "GET":
        return await env.rest.get(url, headers=env.auth(secret))
    return await env.rest.request(ep.method, url, json=body or {}, headers=env.auth(secret))


# -- the catalogue -------------------------------------------------------------------------------------------------

def test_every_route_is_declared_as_the_spec_says() -> None:
    routes = {(e.method, e.path): (e.scopes, e.roles, e.toolset) for e in ADMIN}
    expected = {
        ("POST", "/v1/admin/brands"): "admin:marketing",
        ("PATCH", "/v1/admin/brands/{brand_id}"): "admin:marketing",
        ("POST", "/v1/admin/brands/{brand_id}/website-scan"): "admin:marketing",
        ("GET", "/v1/admin/brands/{brand_id}/website-scan"): "admin:read",
        ("GET", "/v1/admin/brands/{brand_id}/status"): "admin:read",
        ("POST", "/v1/admin/brands/{brand_id}/content-pipeline"): "admin:marketing",
        ("GET", "/v1/admin/brands/{brand_id}/marketing-sample-pack"): "admin:read",
        ("POST", "/v1/admin/brands/{brand_id}/claim-link"): "admin:marketing",
    }
    assert set(routes) == set(expected)
    for key, scope in expected.items():
        assert routes[key] == ((scope,), ("admin", "super_admin"), "admin")
    assert {e.name for e in ADMIN} == set(ADMIN_PATHS)


# -- authority -----------------------------------------------------------------------------------------------------

async def test_scope_and_role_refusals_write_nothing(s) -> None:
    env = s.env
    brand = await create_prospect(env, s.admin)
    counts = await env.row_counts()
    member = await env.key_beyond_role(s.ws, ALL_SCOPES, name="member with every scope")
    super_admin = await env.key(s.ws, role="super_admin", scopes=["admin:read"], name="super admin reader")
    for ep in ADMIN:
        without = await env.key(s.ws, role="admin", scopes=[x for x in ALL_SCOPES if x not in ep.scopes],
                                name=f"no {ep.name}")
        counts = await env.row_counts()
        err = assert_error(await send(env, ep, brand["id"], without, {"name": "x"}), 403, "INSUFFICIENT_SCOPE")
        assert err["details"]["required_scopes"] == list(ep.scopes)
        err = assert_error(await send(env, ep, brand["id"], member, {"name": "x"}), 403, "ROLE_REQUIRED")
        assert set(err["details"]["required_roles"]) == {"admin", "super_admin"}
        if ep.method != "GET":  # admin:read does not allow writes, even for a super admin
            assert_error(await send(env, ep, brand["id"], super_admin, {"name": "x"}), 403, "INSUFFICIENT_SCOPE")
        assert await env.row_counts() == counts, ep.name
    # admin:read alone reads
    for ep in (e for e in ADMIN if e.method == "GET" and e.name != "get_website_scan"):
        assert (await send(env, ep, brand["id"], super_admin)).status_code == 200, ep.name


async def test_routes_act_on_prospect_brands_only(s) -> None:
    env = s.env
    ordinary = await env.brand(s.ws, "Ordinary brand", website="https://ordinary.example")
    counts = await env.row_counts()
    for ep in (e for e in ADMIN if "brand_id" in e.path_params):
        err = assert_error(await send(env, ep, ordinary.id, s.admin, {}), 404, "NOT_FOUND")
        assert "not a prospect" in err["message"] or ep.name == "get_website_scan", ep.name
    assert await env.row_counts() == counts


async def test_restricted_keys_cannot_create_prospects(s) -> None:
    env = s.env
    brand = await env.brand(s.ws, "Only this")
    restricted = await env.key(s.ws, role="admin", brands=[brand.id], name="restricted admin")
    counts = await env.row_counts()
    resp = await env.rest.post(path("create_prospect_brand"), json={"name": "x"}, headers=env.auth(restricted))
    assert_error(resp, 403, "BRAND_ACCESS_DENIED")
    assert await env.row_counts() == counts
    # and a prospect outside the restriction is not disclosed
    other = await create_prospect(env, s.admin)
    resp = await env.rest.get(path("get_prospect_status", other["id"]), headers=env.auth(restricted))
    assert_error(resp, 404, "NOT_FOUND")


# -- create --------------------------------------------------------------------------------------------------------

async def test_create_prospect_shape_and_replay(s) -> None:
    env = s.env
    headers = env.auth(s.admin, Idempotency_Key="create-1")
    body = {"name": "  Bean There  ", "description": "Coffee in Lyon."}
    resp = await env.rest.post(path("create_prospect_brand"), json=body, headers=headers)
    assert resp.status_code == 201, resp.json()
    data = resp.json()["data"]
    assert set(data) == BRAND_FIELDS | {"prospect", "onboarding_step", "config", "colors", "claimed_at", "links"}
    assert (data["name"], data["description"], data["prospect"], data["onboarding_step"]) == (
        "Bean There", "Coffee in Lyon.", True, "created")
    assert data["config"] == {"mode": "manual", "website": None, "business_category": None, "timezone": "UTC",
                              "image_posting": {"cross_post": False, "cross_posts_per_week": 0},
                              "video_posting": {"cross_post": False, "cross_posts_per_week": 0}}
    assert data["colors"] == [] and data["claimed_at"] is None
    assert data["links"]["status"] == {"href": f"/v1/admin/brands/{data['id']}/status",
                                       "required_scopes": ["admin:read"]}
    assert data["links"]["update"]["method"] == "PATCH"
    # an ordinary brand of the workspace: the brand routes see it
    got = await env.rest.get(f"/v1/brands/{data['id']}", headers=env.auth(s.admin))
    assert got.status_code == 200 and got.json()["data"]["name"] == "Bean There"

    replay = await env.rest.post(path("create_prospect_brand"), json=body, headers=headers)
    assert replay.status_code == 200 and replay.headers["idempotency-replayed"] == "true"
    assert replay.json()["data"]["id"] == data["id"]
    other = await env.rest.post(path("create_prospect_brand"), json={"name": "Other"}, headers=headers)
    assert_error(other, 409, "IDEMPOTENCY_KEY_CONFLICT")


@pytest.mark.parametrize(("body", "field"), [
    ({}, "$.name"),
    ({"name": ""}, "$.name"),
    ({"name": "   "}, "$.name"),
    ({"name": "x" * 201}, "$.name"),
    ({"name": 5}, "$.name"),
    ({"name": "ok", "description": "d" * 5001}, "$.description"),
    ({"name": "ok", "website": "https://x.example"}, "$.website"),
])
async def test_create_prospect_refusals(s, body, field) -> None:
    env = s.env
    counts = await env.row_counts()
    err = assert_error(await env.rest.post(path("create_prospect_brand"), json=body, headers=env.auth(s.admin)),
                       400, "MALFORMED_REQUEST")
    assert field in [i["field_path"] for i in err["issues"]]
    assert await env.row_counts() == counts


async def test_create_prospect_limits_at_the_bounds(s) -> None:
    data = await create_prospect(s.env, s.admin, "n" * 200, description="d" * 5000)
    assert len(data["name"]) == 200 and len(data["description"]) == 5000


# -- update --------------------------------------------------------------------------------------------------------

async def test_update_prospect(s) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin))["id"]
    resp = await patch(env, s.admin, bid, {"onboarding_step": "sample_pack_ready", "config": {
        "mode": "automatic", "website": "https://bean.example", "business_category": "Coffee shop",
        "timezone": "Europe/Paris", "image_posting": {"cross_post": True, "cross_posts_per_week": 3},
        "video_posting": {"cross_posts_per_week": 21}}})
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    assert data["onboarding_step"] == "sample_pack_ready"
    assert data["config"] == {"mode": "automatic", "website": "https://bean.example", "business_category":
                              "Coffee shop", "timezone": "Europe/Paris",
                              "image_posting": {"cross_post": True, "cross_posts_per_week": 3},
                              "video_posting": {"cross_post": False, "cross_posts_per_week": 21}}
    assert (data["website"], data["business_category"], data["timezone"]) == (
        "https://bean.example", "Coffee shop", "Europe/Paris")
    # partial: only what is sent changes; null clears website and category; steps may go back
    resp = await patch(env, s.admin, bid, {"onboarding_step": "created",
                                           "config": {"image_posting": {"cross_posts_per_week": 0},
                                                      "website": None, "business_category": None}})
    data = resp.json()["data"]
    assert data["onboarding_step"] == "created"
    assert data["config"]["image_posting"] == {"cross_post": True, "cross_posts_per_week": 0}
    assert data["config"]["website"] is None and data["config"]["business_category"] is None
    assert data["config"]["mode"] == "automatic" and data["config"]["timezone"] == "Europe/Paris"
    ctx = (await env.rest.get(f"/v1/brands/{bid}/context", headers=env.auth(s.admin))).json()["data"]["brand"]
    assert ctx["timezone"] == "Europe/Paris" and ctx["website"] is None
    # an empty patch changes nothing but answers the current state
    assert (await patch(env, s.admin, bid, {})).json()["data"]["config"] == data["config"]
    # no idempotency key on this route
    resp = await env.rest.patch(path("update_prospect_brand", bid), json={},
                                headers=env.auth(s.admin, Idempotency_Key="k"))
    assert_error(resp, 400, "INVALID_HEADER")


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"onboarding_step": "claimed"}, "$.onboarding_step", "NOT_ALLOWED"),
    ({"onboarding_step": "done"}, "$.onboarding_step", None),
    ({"onboarding_step": None}, "$.onboarding_step", None),
    ({"config": None}, "$.config", None),
    ({"config": {"mode": "auto"}}, "$.config.mode", None),
    ({"config": {"mode": None}}, "$.config.mode", None),
    ({"config": {"timezone": "Mars/Olympus"}}, "$.config.timezone", "INVALID_TIMEZONE"),
    ({"config": {"timezone": None}}, "$.config.timezone", None),
    ({"config": {"website": "ftp://bean.example"}}, "$.config.website", "URL_SCHEME_NOT_ALLOWED"),
    ({"config": {"website": "https://user:pw@bean.example"}}, "$.config.website", "URL_CREDENTIALS_NOT_ALLOWED"),
    ({"config": {"website": "http://0x7f000001/"}}, "$.config.website", "URL_HOST_NOT_ALLOWED"),
    ({"config": {"website": "x" * 2001}}, "$.config.website", None),
    ({"config": {"business_category": "  "}}, "$.config.business_category", None),
    ({"config": {"business_category": "c" * 201}}, "$.config.business_category", None),
    ({"config": {"image_posting": {"cross_posts_per_week": 22}}}, "$.config.image_posting.cross_posts_per_week",
     None),
    ({"config": {"video_posting": {"cross_posts_per_week": -1}}}, "$.config.video_posting.cross_posts_per_week",
     None),
    ({"config": {"video_posting": {"cross_post": "yes"}}}, "$.config.video_posting.cross_post", None),
    ({"config": {"image_posting": None}}, "$.config.image_posting", None),
    ({"config": {"image_posting": {"crossPost": True}}}, "$.config.image_posting.crossPost", None),
    ({"config": {"colour": "red"}}, "$.config.colour", None),
    ({"name": "renamed"}, "$.name", None),
])
async def test_update_prospect_refusals(s, body, field, code) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin))["id"]
    counts = await env.row_counts()
    err = assert_error(await patch(env, s.admin, bid, body), 400, "MALFORMED_REQUEST")
    issue = next(i for i in err["issues"] if i["field_path"] == field)
    if code:
        assert issue["code"] == code
    assert await env.row_counts() == counts
    status = (await env.rest.get(path("get_prospect_status", bid), headers=env.auth(s.admin))).json()["data"]
    assert status["onboarding_step"] == "created" and status["mode"] == "manual"


# -- website scan (refusals; the scan itself: test_admin_flow.py) ----------------------------------------------------

@pytest.mark.parametrize(("url", "code"), [
    ("http://127.0.0.1/", "URL_HOST_NOT_ALLOWED"),
    ("http://169.254.169.254/latest/meta-data/", "URL_HOST_NOT_ALLOWED"),
    ("http://[::ffff:10.0.0.1]/", "URL_HOST_NOT_ALLOWED"),
    ("http://2130706433/", "URL_HOST_NOT_ALLOWED"),
    ("http://private.example/", "URL_HOST_NOT_ALLOWED"),
    ("http://nowhere.example/", "URL_HOST_NOT_FOUND"),
    ("ftp://bean.example/", "URL_SCHEME_NOT_ALLOWED"),
    ("https://user:secret@bean.example/", "URL_CREDENTIALS_NOT_ALLOWED"),
    ("not a url", "URL_INVALID"),
])
async def test_scan_urls_are_refused_before_anything_is_stored(s, monkeypatch, url, code) -> None:
    install_dns(monkeypatch)
    env = s.env
    bid = (await create_prospect(env, s.admin))["id"]
    counts = await env.row_counts()
    resp = await env.rest.post(path("start_website_scan", bid), json={"website_url": url}, headers=env.auth(s.admin))
    err = assert_error(resp, 422, "DOMAIN_VALIDATION_FAILED")
    assert err["issues"][0]["field_path"] == "$.website_url" and err["issues"][0]["code"] == code
    assert "secret" not in resp.text
    assert await env.row_counts() == counts
    brand = (await env.rest.get(f"/v1/brands/{bid}", headers=env.auth(s.admin))).json()["data"]
    assert brand["website"] is None
    assert_error(await env.rest.get(path("get_website_scan", bid), headers=env.auth(s.admin)), 404, "NOT_FOUND")


async def test_scan_of_a_stored_private_website_is_refused(s, monkeypatch) -> None:
    install_dns(monkeypatch)
    env = s.env
    bid = (await create_prospect(env, s.admin))["id"]
    assert (await patch(env, s.admin, bid, {"config": {"website": "http://private.example/"}})).status_code == 200
    counts = await env.row_counts()
    resp = await env.rest.post(path("start_website_scan", bid), json={}, headers=env.auth(s.admin))
    err = assert_error(resp, 422, "DOMAIN_VALIDATION_FAILED")
    assert err["issues"][0]["code"] == "URL_HOST_NOT_ALLOWED"
    assert await env.row_counts() == counts


async def test_scan_needs_a_website_and_a_valid_body(s) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin))["id"]
    counts = await env.row_counts()
    err = assert_error(await env.rest.post(path("start_website_scan", bid), json={}, headers=env.auth(s.admin)),
                       422, "DOMAIN_VALIDATION_FAILED")
    assert err["issues"][0] == {"code": "REQUIRED", "field_path": "$.website_url",
                                "message": "Send a public http(s) URL."}
    for body, field in (({"website_url": ""}, "$.website_url"), ({"website_url": "x" * 2001}, "$.website_url"),
                        ({"url": "https://x.example"}, "$.url")):
        err = assert_error(await env.rest.post(path("start_website_scan", bid), json=body, headers=env.auth(s.admin)),
                           400, "MALFORMED_REQUEST")
        assert err["issues"][0]["field_path"] == field
    assert await env.row_counts() == counts
    err = assert_error(await env.rest.get(path("get_website_scan", bid), headers=env.auth(s.admin)), 404, "NOT_FOUND")
    assert err["next_action"] == "start_website_scan"


# -- content pipeline and sample pack (before any scan) -----------------------------------------------------------

async def test_pipeline_needs_automatic_mode_and_a_scan(s) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin))["id"]
    counts = await env.row_counts()
    resp = await env.rest.post(path("start_content_pipeline", bid), json={}, headers=env.auth(s.admin))
    err = assert_error(resp, 422, "DOMAIN_VALIDATION_FAILED")
    assert err["next_action"] == "update_prospect_brand" and "automatic" in err["message"]
    assert err["issues"][0]["code"] == "MODE_MANUAL"
    await patch(env, s.admin, bid, {"config": {"mode": "automatic"}})
    counts = await env.row_counts()
    err = assert_error(await env.rest.post(path("start_content_pipeline", bid), json={}, headers=env.auth(s.admin)),
                       422, "DOMAIN_VALIDATION_FAILED")
    assert err["next_action"] == "start_website_scan"
    assert await env.row_counts() == counts
    body = await env.rest.post(path("start_content_pipeline", bid), json={"force": True}, headers=env.auth(s.admin))
    assert_error(body, 400, "MALFORMED_REQUEST")


async def test_sample_pack_limits_and_reason(s) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin, "Empty"))["id"]
    resp = await env.rest.get(path("get_marketing_sample_pack", bid), headers=env.auth(s.admin))
    data = resp.json()["data"]
    assert data == {"ready": False, "limit": 3, "brand": {"id": bid, "name": "Empty", "website": None},
                    "samples": [], "reason": data["reason"],
                    "links": {"status": {"href": f"/v1/admin/brands/{bid}/status", "required_scopes": ["admin:read"]},
                              "content_pipeline": {"href": f"/v1/admin/brands/{bid}/content-pipeline",
                                                   "method": "POST", "required_scopes": ["admin:marketing"]}}}
    assert "start_website_scan" in data["reason"]
    for limit in ("1", "10"):
        resp = await env.rest.get(path("get_marketing_sample_pack", bid) + f"?limit={limit}", headers=env.auth(s.admin))
        assert resp.status_code == 200 and resp.json()["data"]["limit"] == int(limit)
    for limit in ("0", "11", "-1", "three", "2.5"):
        resp = await env.rest.get(path("get_marketing_sample_pack", bid) + f"?limit={limit}", headers=env.auth(s.admin))
        err = assert_error(resp, 400, "INVALID_QUERY")
        assert err["issues"][0]["field_path"] == "$.limit"
    # the same call over MCP's path gives the same body
    out = await env.call("get_marketing_sample_pack", s.admin, brand_id=bid, limit=3)
    assert out.status == 200 and out.body["data"] == data


async def test_status_shape_of_a_new_prospect(s) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin, "Fresh"))["id"]
    data = (await env.rest.get(path("get_prospect_status", bid), headers=env.auth(s.admin))).json()["data"]
    assert data == {
        "brand_id": bid, "name": "Fresh", "prospect": True, "onboarding_step": "created", "mode": "manual",
        "website_scan": None, "generation": {"status": "not_started", "run": None},
        "automation": {"pipeline_runs": 0, "last_pipeline_run_at": None, "sample_content_items": 0,
                       "usable_samples": 0, "samples_max": 50, "completed_media": 0},
        "claim": {"status": "unclaimed", "claimed_at": None, "link": None},
        "links": data["links"],
    }
    assert set(data["links"]) == {"status", "update", "website_scan", "content_pipeline", "sample_pack",
                                  "claim_link"}


async def test_rest_and_mcp_give_the_same_bodies(s) -> None:
    env = s.env
    bid = (await create_prospect(env, s.admin, "Parity"))["id"]
    rest = (await env.rest.get(path("get_prospect_status", bid), headers=env.auth(s.admin))).json()
    direct = await env.call("get_prospect_status", s.admin, brand_id=bid)
    assert direct.status == 200 and direct.body["data"] == rest["data"]
    rest = (await patch(env, s.admin, bid, {"config": {"timezone": "Nowhere/Town"}})).json()["error"]
    direct = await env.call("update_prospect_brand", s.admin, brand_id=bid, config={"timezone": "Nowhere/Town"})
    assert direct.status == 400
    assert {k: v for k, v in direct.body["error"].items() if k != "request_id"} == {
        k: v for k, v in rest.items() if k != "request_id"}
