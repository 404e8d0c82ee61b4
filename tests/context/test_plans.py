"""Plans catalogue, plan limits (social accounts, networks, media) and paid-feature gating."""

from __future__ import annotations

import json

import pytest

from schemas.errors import ApiError
from schemas.ids import new_id
from schemas.plans import BY_ID, PLANS
from schemas.platforms import PLATFORMS
from server.cli import main
from storage.tables.accounts import Workspace
from storage.tables.media import Media
from tools.context import plans
from tools.operator import actions as operator
from tools.operator.demo import DEMO_PLAN_ID

pytestmark = pytest.mark.anyio


def capped(plan_id: str, limit: str) -> int:
    """A limit the test knows this plan has (None would mean unlimited)."""
    value = BY_ID[plan_id].limits[limit]
    assert value is not None, (plan_id, limit)
    return value


async def test_plans_route_is_public_and_complete(env) -> None:
    before = await env.row_counts()
    resp = await env.rest.get("/v1/plans")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["success"] is True and body["meta"]["request_id"] == resp.headers["x-request-id"]
    data = body["data"]
    assert data["currency"] == "USD" and data["default_plan_id"] == "free"
    assert data["upgrade_url"] == env.rt.settings.upgrade_url
    assert [p["id"] for p in data["plans"]] == [p.id for p in PLANS]
    free, creator = data["plans"][0], data["plans"][1]
    assert free["is_default"] is True and free["paid"] is False and free["features"] == {"autopilot": False}
    assert free["prices"] == [{"billing_period": "month", "amount_cents": 0, "currency": "USD"}]
    assert creator["paid"] is True and creator["features"]["autopilot"] is True
    assert {p["billing_period"] for p in creator["prices"]} == {"month", "year"}
    assert creator["prices"][0]["amount_cents"] == 1900
    assert set(free["limits"]) == {"social_accounts", "networks_per_brand", "media_items_per_brand",
                                   "media_storage_bytes_per_brand"}
    assert free["credits"]["monthly_allocation"] > 0
    # every sold paid plan has Autopilot; the top sold plan allows every supported network on a brand
    sold = [p for p in data["plans"] if p["sold"]]
    assert all(p["features"]["autopilot"] == p["paid"] for p in sold)
    assert sold[-1]["limits"]["networks_per_brand"] == len(PLATFORMS)
    # the self-hosted plan: listed, never sold, no prices, no limits, every feature
    hosted = next(p for p in data["plans"] if p["id"] == "self_hosted")
    assert hosted["sold"] is False and hosted["paid"] is False and hosted["prices"] == []
    assert set(hosted["limits"].values()) == {None} and hosted["features"] == {"autopilot": True}
    assert await env.row_counts() == before

    # the same payload through direct dispatch (MCP's path)
    direct = await env.call("list_plans", None)
    assert direct.status == 200 and direct.body["data"] == data
    # a public route needs no key, and unknown query parameters are still refused
    bad = await env.rest.get("/v1/plans?limit=5")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_QUERY"


async def _count_integrations(env) -> int:
    return (await env.row_counts())["integrations"]


async def test_social_accounts_limit_counts_the_whole_workspace(env) -> None:
    ws = await env.workspace(plan_id="free")
    a, b = await env.brand(ws, "A"), await env.brand(ws, "B")
    limit = capped("free", "social_accounts")
    brands = [a, b, a]
    for i in range(limit):
        await env.integration(brands[i % 3], ("instagram", "tiktok", "facebook")[i % 3])
    before = await env.row_counts()
    with pytest.raises(operator.PlanLimitExceeded) as exc:
        await env.integration(b, "linkedin")
    assert exc.value.details == {"limit": "social_accounts", "used": limit, "max": limit,
                                 "upgrade_url": env.rt.settings.upgrade_url, "plan_id": "free",
                                 "upgrade_plans": ["creator", "pro", "agency"]}
    assert "set-plan" in str(exc.value) and "--plan creator" in str(exc.value)
    assert await env.row_counts() == before

    # another workspace is counted separately
    other = await env.workspace(plan_id="free")
    await env.integration(await env.brand(other, "Other"), "linkedin")


async def test_networks_per_brand_counts_distinct_platforms(env) -> None:
    ws = await env.workspace(plan_id="creator")
    brand = await env.brand(ws, "Brand")
    allowed = capped("creator", "networks_per_brand")
    keys = [p.key for p in PLATFORMS]
    for platform in keys[:allowed]:
        await env.integration(brand, platform)
    before = await _count_integrations(env)
    with pytest.raises(operator.PlanLimitExceeded) as exc:
        await env.integration(brand, keys[allowed])
    assert exc.value.details["limit"] == "networks_per_brand"
    assert (exc.value.details["used"], exc.value.details["max"]) == (allowed, allowed)
    assert await _count_integrations(env) == before
    # a second account on a network the brand already has is not a new network
    await env.integration(brand, keys[0], username="second_account")
    # and another brand has its own network budget
    await env.integration(await env.brand(ws, "Second"), keys[allowed])


async def test_check_limit_error_envelope_and_media_caps(env) -> None:
    ws = await env.workspace(plan_id="free")
    brand = await env.brand(ws, "Media brand")
    free = BY_ID["free"]
    now = env.clock.now()
    async with env.db.session(write=True) as s:
        for i in range(capped("free", "media_items_per_brand")):
            s.add(Media(id=new_id("med"), workspace_id=ws.id, brand_id=brand.id, file_name=f"{i}.jpg",
                        content_type="image/jpeg", size=1000, status="completed", source="upload",
                        asset_id=new_id("ast"), created_at=now, updated_at=now))
        # failed items do not count (3 GiB: media sizes are 64-bit on every backend)
        s.add(Media(id=new_id("med"), workspace_id=ws.id, brand_id=brand.id, file_name="bad.mp4",
                    content_type="video/mp4", size=3 * 1024**3, status="failed", source="upload",
                    asset_id=new_id("ast"), created_at=now, updated_at=now))
    async with env.db.session(write=False) as s:
        with pytest.raises(ApiError) as exc:
            await plans.check_limit(s, brand, "media_items_per_brand", upgrade_url="https://billing.example/up")
        body = exc.value.body("req_test")["error"]
        assert exc.value.status == 422 and body["code"] == "PLAN_LIMIT_REACHED" and body["retryable"] is False
        assert body["details"] == {"limit": "media_items_per_brand", "used": free.limits["media_items_per_brand"],
                                   "max": free.limits["media_items_per_brand"],
                                   "upgrade_url": "https://billing.example/up", "plan_id": "free",
                                   "upgrade_plans": ["creator", "pro", "agency"]}
        assert body["next_action"] == "upgrade_plan"
        # bytes: 50 KB used; adding up to the cap is fine, one byte more is refused
        cap = capped("free", "media_storage_bytes_per_brand")
        usage = await plans.check_limit(s, brand, "media_storage_bytes_per_brand", adding=cap - 50_000)
        assert (usage.used, usage.max) == (50_000, cap)
        with pytest.raises(ApiError) as exc:
            await plans.check_limit(s, brand, "media_storage_bytes_per_brand", adding=cap - 50_000 + 1)
        assert exc.value.details["limit"] == "media_storage_bytes_per_brand"
        # per-brand limits need the brand; unknown limits are programming errors
        with pytest.raises(ValueError):
            await plans.check_limit(s, ws, "media_items_per_brand")
        with pytest.raises(ValueError):
            await plans.check_limit(s, brand, "brands")


async def test_require_feature_gates_autopilot_on_free_plans(env) -> None:
    free_ws = await env.workspace(plan_id="free")
    paid_ws = await env.workspace(plan_id="creator")
    free_brand = await env.brand(free_ws, "Free brand")
    async with env.db.session(write=False) as s:
        with pytest.raises(ApiError) as exc:
            await plans.require_feature(s, free_brand, "autopilot")
        body = exc.value.body("req_test")["error"]
        assert body["status"] == 403 and body["code"] == "ENTITLEMENT_REQUIRED"
        assert body["details"]["feature"] == "autopilot" and body["details"]["plan_id"] == "free"
        assert body["details"]["upgrade_plans"] == ["creator", "pro", "agency"]
        assert body["details"]["upgrade_url"]
        plan = await plans.require_feature(s, await s.get(Workspace, paid_ws.id), "autopilot")
        assert plan.id == "creator"


# -- CLI -------------------------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_set_plan_cli_and_limit_refusal(home, capsys) -> None:
    demo = run_json(capsys, "init", "--demo")
    ws_id, brand_id = demo["workspace"]["id"], demo["brands"][0]["id"]

    listed = run_json(capsys, "plans", "list")
    assert [p["id"] for p in listed["plans"]] == [p.id for p in PLANS]
    assert main(["plans", "list"]) == 0 and "19.00 USD/month" in capsys.readouterr().out

    # downgrading is allowed, and says which limits the workspace now exceeds
    out = run_json(capsys, "workspaces", "set-plan", "--workspace", ws_id, "--plan", "free")
    assert out["plan_id"] == "free" and out["previous_plan_id"] == DEMO_PLAN_ID
    over = {o["limit"]: o for o in out["over_limits"]}
    assert over["social_accounts"]["max"] == BY_ID["free"].limits["social_accounts"]
    assert over["social_accounts"]["used"] == len(demo["brands"]) * (len(PLATFORMS) + 1)

    # a new account is then refused with a clear message, exit code 2
    assert main(["integrations", "connect", "--brand", brand_id, "--platform", "x", "--sandbox"]) == 2
    err = capsys.readouterr().err
    assert "plan limit reached" in err and "social accounts" in err and "set-plan" in err

    assert main(["workspaces", "set-plan", "--plan", "platinum"]) == 2
    assert "unknown plan 'platinum'" in capsys.readouterr().err

    # without --workspace the only workspace is used; back on a bigger plan the account connects
    out = run_json(capsys, "workspaces", "set-plan", "--plan", "agency")
    assert out["id"] == ws_id and out["over_limits"] == []
    acct = run_json(capsys, "integrations", "connect", "--brand", brand_id, "--platform", "x", "--sandbox")
    assert acct["platform"] == "x"
    assert main(["workspaces", "set-plan", "--plan", "agency"]) == 0
    assert "agency -> agency" in capsys.readouterr().out


async def test_media_caps_refuse_new_media_with_plan_details(env) -> None:
    """The media area asks the plan before every new Media item (items per brand, bytes per brand)."""
    ws = await env.workspace(plan_id="free")
    brand = await env.brand(ws, "Capped")
    key = await env.key(ws, scopes=["media:write", "media:read"])
    cap = capped("free", "media_storage_bytes_per_brand")
    body = {"filename": "big.png", "content_type": "image/png", "size": cap + 1, "sha256": "0" * 64}
    before = await env.row_counts()
    resp = await env.rest.post(f"/v1/brands/{brand.id}/media/upload-sessions", json=body,
                               headers={**env.auth(key), "Idempotency-Key": "cap-1"})
    err = resp.json()["error"]
    # the byte cap (or the per-type size cap, whichever is lower) refuses it, and nothing is written
    assert resp.status_code in (400, 422), err
    assert await env.row_counts() == before
    items = capped("free", "media_items_per_brand")
    from schemas.ids import new_id
    from storage.tables.media import Media
    async with env.db.session(write=True) as s:
        for i in range(items):
            s.add(Media(id=new_id("med"), workspace_id=ws.id, brand_id=brand.id, file_name=f"{i}.png",
                        content_type="image/png", size=1, status="completed", source="upload",
                        asset_id=new_id("ast"), created_at=env.clock.now(), updated_at=env.clock.now()))
    body = {"filename": "one-more.png", "content_type": "image/png", "size": 10, "sha256": "0" * 64}
    resp = await env.rest.post(f"/v1/brands/{brand.id}/media/upload-sessions", json=body,
                               headers={**env.auth(key), "Idempotency-Key": "cap-2"})
    assert resp.status_code == 422, resp.json()
    err = resp.json()["error"]
    assert err["code"] == "PLAN_LIMIT_REACHED"
    assert err["details"]["limit"] == "media_items_per_brand" and err["details"]["used"] == items
    assert err["details"]["max"] == items and err["details"]["upgrade_url"]


async def test_self_hosted_plan_has_no_limits_and_is_never_an_upgrade(env) -> None:
    ws = await env.workspace(plan_id="self_hosted")
    brand = await env.brand(ws)
    for p in PLATFORMS[: capped("free", "networks_per_brand") + 1]:  # one network more than free allows
        await env.integration(brand, p.key)
    for _ in range(capped("free", "social_accounts")):
        await env.integration(brand, "x")
    async with env.db.session(write=True) as s:
        ws_row = await s.get(Workspace, ws.id)
        assert not [u for u in await plans.workspace_usage(s, ws_row) if u.over]
        await plans.require_feature(s, ws_row, "autopilot")
        # moved to a sold plan, the catalogue limits apply again
        _, over = await plans.set_plan(s, env.clock.now(), ws_row, "free")
        assert {u.limit for u in over} == {"social_accounts", "networks_per_brand"}
    with pytest.raises(operator.PlanLimitExceeded) as refused:
        await env.integration(brand, "x")
    assert "self_hosted" not in refused.value.details["upgrade_plans"]


def test_init_puts_the_first_workspace_on_the_self_hosted_plan(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path / "a"))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    assert main(["init", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workspace"]["plan_id"] == "self_hosted"
    # unless the operator names a plan
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path / "b"))
    assert main(["init", "--plan", "creator", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workspace"]["plan_id"] == "creator"
