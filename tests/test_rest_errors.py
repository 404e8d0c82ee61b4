"""Every failure is the spec's envelope, with the request ID in the body and the X-Request-Id header."""

from __future__ import annotations

import json
import logging

import pytest

from schemas.errors import CODES
from schemas.platforms import PLATFORMS
from tools import catalogue

pytestmark = pytest.mark.anyio


def check_error(resp, status: int, code: str) -> dict:
    body = resp.json()
    assert resp.status_code == status, body
    assert body["success"] is False
    err = body["error"]
    assert err["code"] == code and err["status"] == status
    assert err["retryable"] is CODES[code].retryable or code == "CONFLICT"
    assert err["request_id"] == resp.headers["x-request-id"]
    assert err["message"]
    return err


async def test_success_carries_request_id(world) -> None:
    resp = await world.env.rest.get("/v1/context", headers=world.env.auth(world.full_key))
    assert resp.status_code == 200
    body = resp.json()
    assert body["success"] is True
    assert body["meta"]["request_id"] == resp.headers["x-request-id"]


async def test_unknown_route_is_enveloped(world) -> None:
    check_error(await world.env.rest.get("/v1/nothing-here"), 404, "NOT_FOUND")
    check_error(await world.env.rest.get("/elsewhere"), 404, "NOT_FOUND")


async def test_wrong_method_is_405_with_allow(world) -> None:
    resp = await world.env.rest.delete("/v1/context", headers=world.env.auth(world.full_key))
    check_error(resp, 405, "METHOD_NOT_ALLOWED")
    assert resp.headers["allow"] == "GET"


async def test_missing_and_bad_keys_are_401(world) -> None:
    rest = world.env.rest
    err = check_error(await rest.get("/v1/context"), 401, "UNAUTHORIZED")
    assert err["next_action"] == "use_authorized_api_key"
    check_error(await rest.get("/v1/context", headers={"Authorization": "Basic abc"}), 401, "UNAUTHORIZED")
    check_error(await rest.get("/v1/context", headers={"Authorization": "Bearer nope"}), 401, "UNAUTHORIZED")
    check_error(await rest.get("/v1/context", headers=world.env.auth("socialpub_live_" + "x" * 40)), 401,
                "UNAUTHORIZED")


async def test_revoked_key_is_401(world) -> None:
    from tools.operator import actions as operator
    env = world.env
    secret = await env.key(world.ws, name="to revoke")
    assert (await env.rest.get("/v1/context", headers=env.auth(secret))).status_code == 200
    async with env.db.session(write=True) as s:
        await operator.revoke_key(s, env.clock.now(), env.key_row(secret).id)
    check_error(await env.rest.get("/v1/context", headers=env.auth(secret)), 401, "UNAUTHORIZED")


async def test_bad_query_values(world) -> None:
    rest, h = world.env.rest, world.env.auth(world.full_key)
    err = check_error(await rest.get("/v1/brands?limit=abc", headers=h), 400, "INVALID_QUERY")
    assert err["issues"][0]["field_path"] == "$.limit"
    err = check_error(await rest.get("/v1/brands?limit=101", headers=h), 400, "INVALID_QUERY")
    assert err["issues"][0]["code"] == "OUT_OF_RANGE"
    err = check_error(await rest.get("/v1/brands?bogus=1", headers=h), 400, "INVALID_QUERY")
    assert (err["issues"][0]["code"], err["issues"][0]["field_path"]) == ("UNKNOWN_FIELD", "$.bogus")
    # a path parameter's name in the query never replaces the path's value
    err = check_error(await rest.get(f"/v1/brands/{world.brand_a.id}?brand_id={world.brand_b.id}", headers=h), 400,
                      "INVALID_QUERY")
    assert (err["issues"][0]["code"], err["issues"][0]["field_path"]) == ("UNKNOWN_FIELD", "$.brand_id")
    err = check_error(await rest.get("/v1/brands?page=1&page=2", headers=h), 400, "INVALID_QUERY")
    assert err["issues"][0]["code"] == "REPEATED"
    err = check_error(await rest.get("/v1/context?scope_disclosure=everything", headers=h), 400, "INVALID_QUERY")
    assert err["issues"][0]["code"] == "NOT_ALLOWED"
    check_error(await rest.get("/v1/brands?variant=older", headers=h), 400, "INVALID_QUERY")


async def test_body_problems(world, monkeypatch) -> None:
    """Bodies are parsed before the handler: not JSON, not an object, wrong content type, too large."""
    env = world.env
    h = env.auth(world.full_key)
    # any route that takes a POST body: use a stand-in endpoint so this test needs no area module
    from tests.test_idempotency import install_probe_endpoint

    install_probe_endpoint(monkeypatch, env)
    url = "/v1/probe"
    check_error(await env.rest.post(url, content=b"{not json", headers={**h, "content-type": "application/json"}),
                400, "MALFORMED_REQUEST")
    check_error(await env.rest.post(url, content=b"[1,2]", headers={**h, "content-type": "application/json"}),
                400, "MALFORMED_REQUEST")
    check_error(await env.rest.post(url, content=b"name=x", headers={**h, "content-type": "text/plain"}),
                400, "INVALID_HEADER")
    big = json.dumps({"name": "x" * (env.rt.settings.max_body_bytes + 10)})
    check_error(await env.rest.post(url, content=big, headers={**h, "content-type": "application/json"}),
                413, "REQUEST_TOO_LARGE")
    err = check_error(await env.rest.post(url, json={"name": "ok", "extra": 1}, headers={**h, "Idempotency-Key": "k1"}),
                      400, "MALFORMED_REQUEST")
    assert err["issues"] == [{"code": "UNKNOWN_FIELD", "field_path": "$.extra",
                              "message": "Extra inputs are not permitted"}]
    err = check_error(await env.rest.post(url, json={"name": 5}, headers={**h, "Idempotency-Key": "k1"}),
                      400, "MALFORMED_REQUEST")
    assert err["issues"][0]["field_path"] == "$.name"
    check_error(await env.rest.post(url, json={"name": "ok"}, headers={**h, "Idempotency-Key": "has space"}),
                400, "INVALID_HEADER")


async def test_unexpected_exception_leaks_nothing(world, monkeypatch, caplog) -> None:
    import dataclasses

    env = world.env
    ep = catalogue.get("get_brand")

    async def boom(call, req):
        raise RuntimeError("SELECT password FROM secrets WHERE token='hunter2'")

    broken = dataclasses.replace(ep, handler=boom)
    monkeypatch.setattr(catalogue, "get", lambda name: broken)
    with caplog.at_level(logging.ERROR):
        out = await env.dispatcher.invoke(broken, {"brand_id": world.brand_a.id}, token=world.full_key)
    assert out.status == 500
    text = json.dumps(out.body)
    assert "hunter2" not in text and "SELECT" not in text and "Traceback" not in text
    assert out.body["error"]["code"] == "INTERNAL_ERROR"
    assert "hunter2" in caplog.text  # the operator's log has it, keyed by request_id
    assert out.body["error"]["request_id"] in caplog.text


async def test_capabilities_public_with_etag_and_304(sqlite_env) -> None:
    rest = sqlite_env.rest
    resp = await rest.get("/v1/platforms/capabilities")
    assert resp.status_code == 200
    assert resp.headers["cache-control"] == "public, max-age=300"
    tag = resp.headers["etag"]
    assert len(resp.json()["data"]["platforms"]) == len(PLATFORMS)
    again = await rest.get("/v1/platforms/capabilities", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    other = await rest.get("/v1/platforms/capabilities", headers={"If-None-Match": '"stale"'})
    assert other.status_code == 200
