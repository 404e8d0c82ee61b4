"""The idempotency mechanism, on a probe endpoint that writes one row per real execution."""

from __future__ import annotations

import anyio
import pytest
from sqlmodel import func, select

from schemas.errors import ApiError
from schemas.requests import RequestModel
from server.rest import rest_routes
from storage.tables.accounts import Workspace
from storage.tables.brands import Brand
from tools import catalogue
from tools.endpoint import Call, Endpoint
from tools.operator import actions as operator

pytestmark = pytest.mark.anyio


class ProbeRequest(RequestModel):
    name: str


async def _create(call: Call, req: ProbeRequest) -> dict:
    assert call.caller is not None
    ws = await call.session.get(Workspace, call.caller.workspace_id)
    assert ws is not None
    if req.name == "fail":
        raise ApiError("DOMAIN_VALIDATION_FAILED", "probe refuses 'fail'")
    brand = await operator.create_brand(call.session, call.now, ws, req.name)
    return {"id": brand.id, "outcome": "created"}


PROBE = Endpoint(name="create_probe", method="POST", path="/v1/probe", toolset="brands", handler=_create,
                 request=ProbeRequest, scopes=("brands:read",), idempotency="required", status=201,
                 summary="Create a probe brand (tests only).", replay=lambda d: {**d, "outcome": "replayed"})


def install_probe_endpoint(monkeypatch, env) -> None:
    """Mount PROBE on the env's REST app for this test."""
    real = catalogue.endpoints()
    monkeypatch.setattr(catalogue, "endpoints", lambda: (*real, PROBE))
    env.app.router.routes[:0] = [r for r in rest_routes(env.dispatcher) if r.path == "/v1/probe"]


async def brand_count(env, name: str) -> int:
    async with env.db.session(write=False) as s:
        return (await s.exec(select(func.count()).select_from(Brand).where(Brand.name == name))).one()


async def test_first_call_creates_replay_returns_same_resource(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    h = {**env.auth(world.full_key), "Idempotency-Key": "key-1"}
    first = await env.rest.post("/v1/probe", json={"name": "alpha"}, headers=h)
    assert first.status_code == 201
    assert "idempotency-replayed" not in first.headers
    again = await env.rest.post("/v1/probe", json={"name": "alpha"}, headers=h)
    assert again.status_code == 200
    assert again.headers["idempotency-replayed"] == "true"
    assert again.json()["data"] == {**first.json()["data"], "outcome": "replayed"}
    assert again.json()["meta"]["idempotency_replayed"] is True
    assert again.json()["meta"]["request_id"] != first.json()["meta"]["request_id"]
    assert await brand_count(env, "alpha") == 1


async def test_body_key_and_header_key_are_the_same_key(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    auth = env.auth(world.full_key)
    first = await env.rest.post("/v1/probe", json={"name": "b", "idempotency_key": "k2"}, headers=auth)
    assert first.status_code == 201
    again = await env.rest.post("/v1/probe", json={"name": "b"}, headers={**auth, "Idempotency-Key": "k2"})
    assert again.status_code == 200 and again.headers["idempotency-replayed"] == "true"
    both = await env.rest.post("/v1/probe", json={"name": "b", "idempotency_key": "k2"},
                               headers={**auth, "Idempotency-Key": "other"})
    assert both.status_code == 400 and both.json()["error"]["code"] == "INVALID_HEADER"
    assert await brand_count(env, "b") == 1


async def test_different_input_under_used_key_is_409_and_writes_nothing(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    h = {**env.auth(world.full_key), "Idempotency-Key": "key-3"}
    assert (await env.rest.post("/v1/probe", json={"name": "one"}, headers=h)).status_code == 201
    resp = await env.rest.post("/v1/probe", json={"name": "two"}, headers=h)
    assert resp.status_code == 409
    assert resp.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert await brand_count(env, "two") == 0


async def test_missing_required_key(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    resp = await env.rest.post("/v1/probe", json={"name": "x"}, headers=env.auth(world.full_key))
    assert resp.status_code == 400
    assert resp.json()["error"]["issues"][0]["field_path"] == "$.idempotency_key"
    assert await brand_count(env, "x") == 0


async def test_keys_are_per_api_key(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    other = await env.key(world.ws, name="other")
    for secret in (world.full_key, other):
        resp = await env.rest.post("/v1/probe", json={"name": "per-key"},
                                   headers={**env.auth(secret), "Idempotency-Key": "same"})
        assert resp.status_code == 201
    assert await brand_count(env, "per-key") == 2


async def test_failed_request_does_not_consume_the_key(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    h = {**env.auth(world.full_key), "Idempotency-Key": "retry-me"}
    bad = await env.rest.post("/v1/probe", json={"name": "fail"}, headers=h)
    assert bad.status_code == 422
    good = await env.rest.post("/v1/probe", json={"name": "fixed"}, headers=h)
    assert good.status_code == 201 and "idempotency-replayed" not in good.headers


async def test_concurrent_identical_requests_write_once(world, monkeypatch) -> None:
    env = world.env
    install_probe_endpoint(monkeypatch, env)
    results = []

    async def one() -> None:
        results.append(await env.dispatcher.invoke(PROBE, {"name": "race", "idempotency_key": "race-key"},
                                                   token=world.full_key))

    async with anyio.create_task_group() as tg:
        for _ in range(8):
            tg.start_soon(one)
    statuses = sorted(r.status for r in results)
    assert statuses == [200] * 7 + [201], [r.body for r in results]
    assert len({r.body["data"]["id"] for r in results}) == 1
    assert await brand_count(env, "race") == 1
