"""Live dynamic options: TikTok privacy levels, Pinterest boards; the read (GET) and the refresh (POST).

GET reads the provider and changes nothing. POST may rotate credentials, holds a lease while it talks to the
provider, and marks the account for reconnection when the provider says so. Every failure is explicit.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from providers.base import Options
from providers.sandbox import DEFAULT_BOARDS, PRIVACY_LEVELS
from storage import vault
from storage.tables.integrations import Integration
from tools import targets as targets_module

pytestmark = pytest.mark.anyio

NOW = "2026-03-02T09:00:00.000Z"


def url(brand_id: str, integration_id: str) -> str:
    return f"/v1/brands/{brand_id}/targets/{integration_id}/dynamic-options"


async def stored(env, integration_id: str) -> dict:
    async with env.db.session(write=False) as s:
        row = (await s.get(Integration, integration_id)).model_dump()
    # Stored sealed by the vault: what the adapter was given, decrypted.
    return {**row, "credentials": vault.open_credentials(env.rt.settings, row["credentials"])}


async def patch(env, integration_id: str, **fields) -> None:
    async with env.db.session(write=True) as s:
        row = await s.get(Integration, integration_id)
        for k, v in fields.items():
            setattr(row, k, v)
        s.add(row)


def calls_for(env, integration_id: str) -> list[dict]:
    return [c for c in env.sandbox.calls if c.get("integration_id") == integration_id]


class Snapshot:
    """Everything a request could change: row counts, the integration row, the provider call log."""

    def __init__(self, env, integration_id: str) -> None:
        self.env, self.integration_id = env, integration_id

    async def __aenter__(self) -> Snapshot:
        self.counts = await self.env.row_counts()
        self.row = await stored(self.env, self.integration_id)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if exc[0] is None:
            assert await self.env.row_counts() == self.counts
            assert await stored(self.env, self.integration_id) == self.row


def error_of(resp, status: int, code: str) -> dict:
    body = resp.json()
    assert resp.status_code == status, body
    assert body["success"] is False and body["error"]["code"] == code and body["error"]["status"] == status
    assert body["error"]["request_id"] == resp.headers["x-request-id"]
    assert "\"options\"" not in resp.text  # never stale (or any) choices in an error
    return body["error"]


# -- GET: success ------------------------------------------------------------------------------------------

async def test_tiktok_privacy_levels(world) -> None:
    env = world.env
    a, tiktok = world.brand_a.id, world.integrations["tiktok"]
    async with Snapshot(env, tiktok.id):
        resp = await env.rest.get(url(a, tiktok.id), headers=env.auth(world.full_key))
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data == {
        "brand_id": a, "integration_id": tiktok.id, "platform": "tiktok", "kind": "creator_privacy_levels",
        "options": PRIVACY_LEVELS,
        "constraints": {"comments_disabled": False, "duets_disabled": False, "stitches_disabled": False},
        "retrieved_at": NOW,
        "links": {"self": {"href": url(a, tiktok.id), "required_scopes": ["integrations:read"]},
                  "refresh": {"href": url(a, tiktok.id), "method": "POST", "required_scopes": ["integrations:write"]}},
    }
    assert calls_for(env, tiktok.id) == [{"op": "dynamic_options", "integration_id": tiktok.id, "refresh": False}]
    row = await stored(env, tiktok.id)
    assert row["credentials"]["access_token"] not in resp.text and row["provider_account_id"] not in resp.text
    # the same through direct dispatch (MCP)
    direct = await env.call("get_target_dynamic_options", world.full_key, brand_id=a, integration_id=tiktok.id)
    assert direct.status == 200 and direct.body["data"] == data


async def test_tiktok_options_follow_the_account(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok", provider_state={
        "privacy_levels": ["SELF_ONLY", "MUTUAL_FOLLOW_FRIENDS"], "comments_disabled": True, "stitches_disabled": True})
    key = await env.key(ws, scopes=["integrations:read"])
    env.clock.advance(minutes=5)
    data = (await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))).json()["data"]
    assert [o["value"] for o in data["options"]] == ["MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"]
    assert data["constraints"] == {"comments_disabled": True, "duets_disabled": False, "stitches_disabled": True}
    assert data["retrieved_at"] == "2026-03-02T09:05:00.000Z"


async def test_pinterest_boards(world) -> None:
    env = world.env
    a, pin = world.brand_a.id, world.integrations["pinterest"]
    async with Snapshot(env, pin.id):
        resp = await env.rest.get(url(a, pin.id), headers=env.auth(world.full_key))
    data = resp.json()["data"]
    assert resp.status_code == 200
    assert data["kind"] == "pinterest_boards" and data["platform"] == "pinterest"
    assert data["options"] == DEFAULT_BOARDS
    assert "constraints" not in data  # only the kind that has it
    boards = [{"value": "1234567890", "label": "Spring menu"}]
    await patch(env, pin.id, provider_state={"boards": boards})
    assert (await env.rest.get(url(a, pin.id), headers=env.auth(world.full_key))).json()["data"]["options"] == boards
    await patch(env, pin.id, provider_state={"boards": [{"value": "b1", "label": "One", "extra": "raw"}]})
    data = (await env.rest.get(url(a, pin.id), headers=env.auth(world.full_key))).json()["data"]
    assert data["options"] == [{"value": "b1", "label": "One"}]  # nothing of the raw provider payload passes


async def test_pinterest_account_without_boards_gets_an_empty_list(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    pin = await env.integration(brand, "pinterest")
    await patch(env, pin.id, provider_state={"boards": []})
    key = await env.key(ws, scopes=["integrations:read"])
    # sandbox treats an empty list as "use defaults"; a real empty answer comes from a provider stub
    env.rt.providers["sandbox"] = _Fixed(Options("pinterest_boards", []))
    resp = await env.rest.get(url(brand.id, pin.id), headers=env.auth(key))
    assert resp.status_code == 200 and resp.json()["data"]["options"] == []


class _Fixed:
    """A provider stub that answers one fixed value (or raises it)."""

    name = "sandbox"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.calls: list[dict] = []

    async def dynamic_options(self, account, kind, *, refresh):
        self.calls.append({"op": "dynamic_options", "integration_id": account.integration_id, "refresh": refresh})
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


# -- GET: refusals -----------------------------------------------------------------------------------------

async def test_platform_without_dynamic_options(world) -> None:
    env = world.env
    a = world.brand_a.id
    for platform in ("instagram", "youtube", "x"):
        integ = world.integrations[platform]
        for method in ("GET", "POST"):
            async with Snapshot(env, integ.id):
                resp = await env.rest.request(method, url(a, integ.id), headers=env.auth(world.full_key))
            err = error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")
            assert err["issues"] == [{"code": "DYNAMIC_OPTIONS_UNSUPPORTED", "field_path": "$.integration_id",
                                      "message": err["message"]}]
            assert err["details"] == {"reason": "dynamic_options_unsupported", "integration_id": integ.id,
                                      "platform": platform}
            assert err["next_action"] == "list_targets" and err["retryable"] is False
            assert "tiktok" in err["message"] and err["repair_guidance"]
        assert calls_for(env, integ.id) == []


@pytest.mark.parametrize("status", ["expired", "needs_reauth"])
async def test_account_that_needs_reconnecting(env, status: str) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok", status=status)
    key = await env.key(ws, scopes=["integrations:read", "integrations:write"])
    for method in ("GET", "POST"):
        async with Snapshot(env, tiktok.id):
            resp = await env.rest.request(method, url(brand.id, tiktok.id), headers=env.auth(key))
        err = error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")
        assert err["next_action"] == "reconnect_integration" and err["retryable"] is False
        assert err["details"]["reason"] == "reconnect_required"
        assert err["issues"][0]["code"] == "RECONNECT_REQUIRED"
        assert "socialpub integrations connect" in err["repair_guidance"]
    assert calls_for(env, tiktok.id) == []


async def test_account_without_stored_credentials(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    await patch(env, tiktok.id, credentials=None)
    key = await env.key(ws)
    async with Snapshot(env, tiktok.id):
        resp = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    assert error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")["details"]["reason"] == "reconnect_required"
    assert calls_for(env, tiktok.id) == []


async def test_foreign_and_unknown_targets_are_not_found(world) -> None:
    env = world.env
    a, b = world.brand_a.id, world.brand_b.id
    b_tiktok = await env.integration(world.brand_b, "tiktok")
    for method in ("GET", "POST"):
        for path, key in ((url(a, b_tiktok.id), world.full_key),  # brand B's account under brand A
                          (url(b, world.integrations["tiktok"].id), world.full_key),
                          (url(a, world.integrations["tiktok"].id), world.key_b_only),  # brand hidden by the key
                          (url(a, "int_01AAAAAAAAAAAAAAAAAAAAAAAA"), world.full_key),
                          (url(a, "not-an-id"), world.full_key)):
            async with Snapshot(env, b_tiktok.id):
                resp = await env.rest.request(method, path, headers=env.auth(key))
            error_of(resp, 404, "NOT_FOUND")
    assert env.sandbox.calls == []


async def test_provider_reauth_on_a_read_changes_nothing(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok", provider_state={"faults": {"dynamic_options": "expired_credentials"}})
    key = await env.key(ws, scopes=["integrations:read"])
    async with Snapshot(env, tiktok.id):
        resp = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    err = error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")
    assert err["details"]["reason"] == "reconnect_required" and err["next_action"] == "reconnect_integration"
    assert (await stored(env, tiktok.id))["status"] == "connected"  # a GET never changes status
    assert len(calls_for(env, tiktok.id)) == 1


FAULTS = [
    # fault, status, code, retryable, reason, next_action, Retry-After
    ("rate_limited", 429, "RATE_LIMITED", True, "provider_rate_limited", "wait_and_retry", "1"),
    ("transient", 503, "DEPENDENCY_UNAVAILABLE", True, "provider_unavailable", "wait_and_retry", "5"),
    ("unavailable", 503, "DEPENDENCY_UNAVAILABLE", True, "provider_unavailable", "wait_and_retry", "5"),
    ("malformed", 503, "DEPENDENCY_UNAVAILABLE", False, "provider_malformed_data", "contact_operator", None),
    ("malformed_data", 503, "DEPENDENCY_UNAVAILABLE", False, "provider_malformed_data", "contact_operator", None),
    ("rejected", 422, "DOMAIN_VALIDATION_FAILED", False, "provider_rejected", "reconnect_integration", None),
]


@pytest.mark.parametrize("fault, status, code, retryable, reason, action, retry_after", FAULTS,
                         ids=[f[0] for f in FAULTS])
@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_provider_failures_are_explicit(env, method, fault, status, code, retryable, reason, action,
                                              retry_after) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok", provider_state={"faults": {"dynamic_options": fault}})
    key = await env.key(ws, scopes=["integrations:read", "integrations:write"])
    async with Snapshot(env, tiktok.id):  # nothing changes, POST included: its lease is released
        resp = await env.rest.request(method, url(brand.id, tiktok.id), headers=env.auth(key))
    err = error_of(resp, status, code)
    assert err["retryable"] is retryable and err["next_action"] == action
    assert err["details"]["reason"] == reason and err["details"]["integration_id"] == tiktok.id
    assert resp.headers.get("retry-after") == retry_after
    if retry_after:
        assert err["details"]["retry_after_seconds"] == int(retry_after)
    assert calls_for(env, tiktok.id) == [{"op": "dynamic_options", "integration_id": tiktok.id,
                                          "refresh": method == "POST"}]


async def test_malformed_answers_are_refused(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    pin = await env.integration(brand, "pinterest")
    key = await env.key(ws, scopes=["integrations:read"])
    ok = {"comments_disabled": False, "duets_disabled": False, "stitches_disabled": False}
    bad = [
        (tiktok, Options("pinterest_boards", [{"value": "b", "label": "B"}])),  # another kind
        (tiktok, Options("creator_privacy_levels", [], ok)),  # no privacy level at all
        (tiktok, Options("creator_privacy_levels", [{"value": "EVERYONE", "label": "All"}], ok)),  # not a level
        (tiktok, Options("creator_privacy_levels", [{"value": "SELF_ONLY", "label": ""}], ok)),
        (tiktok, Options("creator_privacy_levels", [{"value": "SELF_ONLY", "label": 3}], ok)),  # pyright: ignore[reportArgumentType]  # a provider's ill-typed answer, which the route refuses
        (tiktok, Options("creator_privacy_levels", ["SELF_ONLY"], ok)),  # pyright: ignore[reportArgumentType]  # a provider's ill-typed answer, which the route refuses
        (tiktok, Options("creator_privacy_levels", [{"value": "SELF_ONLY", "label": "A"}] * 2, ok)),
        (tiktok, Options("creator_privacy_levels", [{"value": "SELF_ONLY", "label": "A"}], {})),
        (tiktok, Options("creator_privacy_levels", [{"value": "SELF_ONLY", "label": "A"}], {**ok, "x": True})),
        (tiktok, Options("creator_privacy_levels", [{"value": "SELF_ONLY", "label": "A"}],
                         {**ok, "duets_disabled": "no"})),
        (tiktok, {"kind": "creator_privacy_levels"}),  # not an Options value at all
        (pin, Options("pinterest_boards", [{"value": "", "label": "Empty id"}])),
        (pin, Options("pinterest_boards", [{"value": "x" * 201, "label": "Too long"}])),
        (pin, Options("pinterest_boards", [{"value": f"b{n}", "label": "B"} for n in range(1001)])),
        (pin, Options("pinterest_boards", [{"value": "b", "label": "x" * 301}])),
    ]
    for integ, answer in bad:
        env.rt.providers["sandbox"] = _Fixed(answer)
        async with Snapshot(env, integ.id):
            resp = await env.rest.get(url(brand.id, integ.id), headers=env.auth(key))
        err = error_of(resp, 503, "DEPENDENCY_UNAVAILABLE")
        assert err["details"]["reason"] == "provider_malformed_data", answer


async def test_provider_that_never_answers(env, monkeypatch) -> None:
    monkeypatch.setattr(targets_module, "PROVIDER_TIMEOUT_SECONDS", 0.05)
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok", provider_state={"faults": {"dynamic_options": "hang"}})
    key = await env.key(ws)
    for method in ("GET", "POST"):
        async with Snapshot(env, tiktok.id):
            resp = await env.rest.request(method, url(brand.id, tiktok.id), headers=env.auth(key))
        err = error_of(resp, 503, "DEPENDENCY_UNAVAILABLE")
        assert err["retryable"] is True and err["details"]["reason"] == "provider_unavailable"


async def test_adapter_crash_and_missing_adapter(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    key = await env.key(ws)
    env.rt.providers["sandbox"] = _Fixed(RuntimeError("adapter bug"))
    for method in ("GET", "POST"):
        async with Snapshot(env, tiktok.id):
            resp = await env.rest.request(method, url(brand.id, tiktok.id), headers=env.auth(key))
        err = error_of(resp, 503, "DEPENDENCY_UNAVAILABLE")
        assert err["details"]["reason"] == "provider_error" and "adapter bug" not in resp.text
    await patch(env, tiktok.id, provider="nowhere")
    for method in ("GET", "POST"):
        async with Snapshot(env, tiktok.id):
            resp = await env.rest.request(method, url(brand.id, tiktok.id), headers=env.auth(key))
        assert error_of(resp, 503, "DEPENDENCY_UNAVAILABLE")["details"]["reason"] == "provider_missing"


async def test_never_stale_choices(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok", provider_state={"faults": {"dynamic_options": "transient:1"}})
    key = await env.key(ws)
    first = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    error_of(first, 503, "DEPENDENCY_UNAVAILABLE")
    second = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    assert second.status_code == 200  # the fault healed; every read asks the provider again
    await patch(env, tiktok.id, provider_state={"faults": {"dynamic_options": "unavailable"}})
    third = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    error_of(third, 503, "DEPENDENCY_UNAVAILABLE")  # not the choices of the successful read
    assert len(calls_for(env, tiktok.id)) == 3


async def test_expired_access_token_read_refuses_and_refresh_repairs(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    row = await stored(env, tiktok.id)
    await patch(env, tiktok.id, credentials={**row["credentials"], "expires_at": "2026-03-02T08:59:59.000Z"})
    key = await env.key(ws)
    async with Snapshot(env, tiktok.id):
        resp = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    err = error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")
    assert err["details"]["reason"] == "credential_refresh_required"
    assert err["next_action"] == "refresh_target_dynamic_options" and err["issues"][0]["code"] == \
        "CREDENTIAL_REFRESH_REQUIRED"
    assert calls_for(env, tiktok.id) == []
    # an unreadable expiry fails closed the same way
    await patch(env, tiktok.id, credentials={**row["credentials"], "expires_at": "tomorrow"})
    resp = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    assert error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")["details"]["reason"] == "credential_refresh_required"
    # the refresh rotates the credential, then reads work again
    resp = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))
    assert resp.status_code == 200, resp.text
    assert "expires_at" not in (await stored(env, tiktok.id))["credentials"]
    assert (await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))).status_code == 200


async def test_future_expiry_reads_fine(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    row = await stored(env, tiktok.id)
    await patch(env, tiktok.id, credentials={**row["credentials"], "expires_at": "2026-03-02T10:00:00+01:00"})
    key = await env.key(ws)
    # 10:00+01:00 is exactly now: expired
    resp = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
    assert error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")["details"]["reason"] == "credential_refresh_required"
    await patch(env, tiktok.id, credentials={**row["credentials"], "expires_at": "2026-03-02T09:00:01Z"})
    assert (await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))).status_code == 200


async def test_get_refuses_input_it_does_not_take(world) -> None:
    env = world.env
    tiktok = world.integrations["tiktok"]
    path = url(world.brand_a.id, tiktok.id)
    async with Snapshot(env, tiktok.id):
        resp = await env.rest.get(path + "?refresh=true", headers=env.auth(world.full_key))
        assert error_of(resp, 400, "INVALID_QUERY")["issues"][0]["field_path"] == "$.refresh"
        resp = await env.rest.get(path, headers=env.auth(world.full_key, Idempotency_Key="k1"))
        error_of(resp, 400, "INVALID_HEADER")
    assert env.sandbox.calls == []


# -- POST: refresh -----------------------------------------------------------------------------------------

async def test_refresh_rotates_credentials_and_never_returns_them(world) -> None:
    env = world.env
    a, tiktok = world.brand_a.id, world.integrations["tiktok"]
    before_counts = await env.row_counts()
    before = await stored(env, tiktok.id)
    env.clock.advance(minutes=1)
    resp = await env.rest.post(url(a, tiktok.id), json={}, headers=env.auth(world.full_key))
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["kind"] == "creator_privacy_levels" and data["options"] == PRIVACY_LEVELS
    assert data["retrieved_at"] == "2026-03-02T09:01:00.000Z"
    assert set(data) == {"brand_id", "integration_id", "platform", "kind", "options", "constraints",
                         "retrieved_at", "links"}
    after = await stored(env, tiktok.id)
    assert after["credentials"]["access_token"] != before["credentials"]["access_token"]
    assert after["credentials"]["generation"] == before["credentials"]["generation"] + 1
    for secret in (before["credentials"]["access_token"], after["credentials"]["access_token"],
                   before["provider_account_id"]):
        assert secret not in resp.text
    assert "access_token" not in resp.text and "generation" not in resp.text
    # nothing else changed: no new rows (no content, no Schedule), status and visible fields as they were,
    # and the lease is released
    assert await env.row_counts() == before_counts
    assert {k: v for k, v in after.items() if k != "credentials"} == {
        k: v for k, v in before.items() if k != "credentials"}
    assert calls_for(env, tiktok.id) == [{"op": "dynamic_options", "integration_id": tiktok.id, "refresh": True}]
    # a second refresh rotates again (deterministically derived from the current token)
    again = await env.call("refresh_target_dynamic_options", world.full_key, brand_id=a, integration_id=tiktok.id)
    assert again.status == 200 and again.body["data"]["options"] == data["options"]
    assert (await stored(env, tiktok.id))["credentials"]["generation"] == before["credentials"]["generation"] + 2


async def test_refresh_pinterest(world) -> None:
    env = world.env
    pin = world.integrations["pinterest"]
    resp = await env.rest.post(url(world.brand_a.id, pin.id), headers=env.auth(world.full_key))  # no body at all
    assert resp.status_code == 200
    assert resp.json()["data"]["kind"] == "pinterest_boards" and "constraints" not in resp.json()["data"]


async def test_refresh_body_is_exactly_empty(world) -> None:
    env = world.env
    a, tiktok = world.brand_a.id, world.integrations["tiktok"]
    path = url(a, tiktok.id)
    cases = [
        (dict(json={"refresh": True}), 400, "MALFORMED_REQUEST", "$.refresh"),
        (dict(json={"idempotency_key": "k1"}), 400, "MALFORMED_REQUEST", "$.idempotency_key"),
        (dict(json={}, headers={"Idempotency-Key": "k1"}), 400, "INVALID_HEADER", "$.idempotency_key"),
        (dict(json=[]), 400, "MALFORMED_REQUEST", "$"),
        (dict(content=b"{", headers={"Content-Type": "application/json"}), 400, "MALFORMED_REQUEST", None),
        (dict(json={}, params={"force": "1"}), 400, "INVALID_QUERY", "$.force"),
    ]
    for kwargs, status, code, path_ in cases:
        headers = {**env.auth(world.full_key), **kwargs.pop("headers", {})}
        async with Snapshot(env, tiktok.id):
            resp = await env.rest.post(path, headers=headers, **kwargs)
        err = error_of(resp, status, code)
        if path_:
            assert [i["field_path"] for i in err["issues"]] == [path_]
    # direct dispatch refuses the same
    out = await env.call("refresh_target_dynamic_options", world.full_key, brand_id=a, integration_id=tiktok.id,
                         idempotency_key="k1")
    assert out.status == 400 and out.body["error"]["code"] == "MALFORMED_REQUEST"
    assert env.sandbox.calls == []


async def test_refresh_needs_integrations_write(world) -> None:
    env = world.env
    tiktok = world.integrations["tiktok"]
    reader = await env.key(world.ws, scopes=["integrations:read"])
    async with Snapshot(env, tiktok.id):
        resp = await env.rest.post(url(world.brand_a.id, tiktok.id), json={}, headers=env.auth(reader))
    err = error_of(resp, 403, "INSUFFICIENT_SCOPE")
    assert err["details"]["required_scopes"] == ["integrations:write"]
    writer = await env.key(world.ws, scopes=["integrations:write"])
    resp = await env.rest.get(url(world.brand_a.id, tiktok.id), headers=env.auth(writer))
    assert error_of(resp, 403, "INSUFFICIENT_SCOPE")["details"]["required_scopes"] == ["integrations:read"]
    assert env.sandbox.calls == []


async def test_refresh_marks_reauthorisation_and_still_fails(world) -> None:
    env = world.env
    a, tiktok = world.brand_a.id, world.integrations["tiktok"]
    await patch(env, tiktok.id, provider_state={"faults": {"dynamic_options": "reauth_required"}})
    before = await stored(env, tiktok.id)
    counts = await env.row_counts()
    env.clock.advance(minutes=2)
    resp = await env.rest.post(url(a, tiktok.id), json={}, headers=env.auth(world.full_key))
    err = error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")
    assert err["details"]["reason"] == "reconnect_required" and err["next_action"] == "reconnect_integration"
    after = await stored(env, tiktok.id)
    assert after["status"] == "needs_reauth"  # committed although the call failed
    assert after["updated_at"].isoformat().startswith("2026-03-02T09:02:00")
    assert after["credentials"] == before["credentials"]
    assert after["provider_state"] == before["provider_state"]  # the lease is released
    # the only new rows are the integration_refresh notifications (and their email outbox rows), and the
    # integration.needs_reauth event for webhooks and MCP subscribers (docs/events.md)
    grown = {t: n - counts[t] for t, n in (await env.row_counts()).items() if n != counts[t]}
    assert set(grown) <= {"notifications", "email_outbox", "events"} and grown.get("notifications", 0) >= 1
    notes = (await env.rest.get(f"/v1/brands/{a}/notifications", headers=env.auth(world.full_key))).json()
    assert [n["category"] for n in notes["data"]["items"]] == ["integration_refresh"]
    # the account now reads as needing reconnection everywhere, and nobody calls the provider for it
    row = next(r for r in (await env.rest.get(f"/v1/brands/{a}/targets", headers=env.auth(world.full_key))).json()[
        "data"]["targets"] if r["integration_id"] == tiktok.id)
    assert row["connection_status"] == "needs_reauth" and row["schedulable"] is False
    assert row["blockers"][0]["code"] == "RECONNECT_REQUIRED"
    integ = (await env.rest.get(f"/v1/brands/{a}/integrations/{tiktok.id}", headers=env.auth(world.full_key))).json()
    assert integ["data"]["status"] == "needs_reauth"
    n = len(env.sandbox.calls)
    resp = await env.rest.get(url(a, tiktok.id), headers=env.auth(world.full_key))
    assert error_of(resp, 422, "DOMAIN_VALIDATION_FAILED")["details"]["reason"] == "reconnect_required"
    assert len(env.sandbox.calls) == n


async def test_refresh_persists_rotation_even_when_choices_are_unusable(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    key = await env.key(ws)
    answer = Options("creator_privacy_levels", [{"value": "NOPE", "label": "?"}], {},
                     new_credentials={"access_token": "sbx_token_rotated", "generation": 7})
    env.rt.providers["sandbox"] = _Fixed(answer)
    resp = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))
    assert error_of(resp, 503, "DEPENDENCY_UNAVAILABLE")["details"]["reason"] == "provider_malformed_data"
    after = await stored(env, tiktok.id)
    assert after["credentials"] == {"access_token": "sbx_token_rotated", "generation": 7}
    assert "refresh_lease" not in after["provider_state"]
    assert "sbx_token_rotated" not in resp.text
    # a status the service does not know is malformed too, and is not stored
    env.rt.providers["sandbox"] = _Fixed(Options("creator_privacy_levels", PRIVACY_LEVELS, {
        "comments_disabled": False, "duets_disabled": False, "stitches_disabled": False}, new_status="banned"))
    resp = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))
    error_of(resp, 503, "DEPENDENCY_UNAVAILABLE")
    assert (await stored(env, tiktok.id))["status"] == "connected"


async def test_refresh_stores_a_status_the_provider_reports(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    key = await env.key(ws)
    env.rt.providers["sandbox"] = _Fixed(Options("creator_privacy_levels", PRIVACY_LEVELS, {
        "comments_disabled": False, "duets_disabled": False, "stitches_disabled": False}, new_status="expired"))
    resp = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))
    assert resp.status_code == 200
    assert (await stored(env, tiktok.id))["status"] == "expired"
    # a read that (wrongly) reports a rotation or status stores nothing
    ok = await env.integration(brand, "tiktok")
    env.rt.providers["sandbox"] = _Fixed(Options("creator_privacy_levels", PRIVACY_LEVELS, {
        "comments_disabled": False, "duets_disabled": False, "stitches_disabled": False}, new_status="expired",
        new_credentials={"access_token": "x"}))
    async with Snapshot(env, ok.id):
        assert (await env.rest.get(url(brand.id, ok.id), headers=env.auth(key))).status_code == 200


# -- the provider-effect lease ----------------------------------------------------------------------------

async def test_a_live_lease_refuses_reads_and_refreshes(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    lease = {"holder": "req_other", "expires_at": "2026-03-02T09:00:42.500Z"}
    tiktok = await env.integration(brand, "tiktok", provider_state={"refresh_lease": lease})
    key = await env.key(ws)
    for method in ("GET", "POST"):
        async with Snapshot(env, tiktok.id):
            resp = await env.rest.request(method, url(brand.id, tiktok.id), headers=env.auth(key))
        err = error_of(resp, 409, "CONFLICT")
        assert err["retryable"] is True and err["next_action"] == "wait_and_retry"
        assert err["details"]["reason"] == "refresh_in_progress"
        assert resp.headers["retry-after"] == "43"
    assert calls_for(env, tiktok.id) == []
    # an expired lease (a refresh that died) no longer blocks anything
    env.clock.advance(seconds=43)
    assert (await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))).status_code == 200
    resp = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))
    assert resp.status_code == 200
    assert "refresh_lease" not in (await stored(env, tiktok.id))["provider_state"]


class _Gated:
    """A provider that waits until the test lets it answer, to hold a refresh in flight."""

    name = "gated"

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def dynamic_options(self, account, kind, *, refresh):
        self.entered.set()
        await self.release.wait()
        return Options(kind, list(PRIVACY_LEVELS), {"comments_disabled": False, "duets_disabled": False,
                                                     "stitches_disabled": False},
                       new_credentials={**account.credentials, "generation": 99} if refresh else None)


async def test_concurrent_refresh_is_refused_while_one_is_in_flight(env) -> None:
    ws = await env.workspace()
    brand = await env.brand(ws)
    tiktok = await env.integration(brand, "tiktok")
    other = await env.integration(brand, "pinterest")
    await patch(env, tiktok.id, provider="gated")
    gated = env.rt.providers["gated"] = _Gated()
    key = await env.key(ws)
    results: dict[str, Any] = {}
    second = read = unrelated = None  # set under fail_after, whose exit pyright reads as able to swallow an exception

    async def first() -> None:
        results["first"] = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        with anyio.fail_after(10):
            await gated.entered.wait()
        # the lease is committed while the provider call is in flight ...
        state = (await stored(env, tiktok.id))["provider_state"]
        assert state["refresh_lease"]["expires_at"] == "2026-03-02T09:01:00.000Z"
        # ... and no database lock is held: other writes and reads proceed at once
        with anyio.fail_after(5):
            second = await env.rest.post(url(brand.id, tiktok.id), json={}, headers=env.auth(key))
            read = await env.rest.get(url(brand.id, tiktok.id), headers=env.auth(key))
            unrelated = await env.rest.post(url(brand.id, other.id), json={}, headers=env.auth(key))
        gated.release.set()
    assert second is not None and read is not None and unrelated is not None
    assert error_of(second, 409, "CONFLICT")["details"]["reason"] == "refresh_in_progress"
    assert error_of(read, 409, "CONFLICT")["details"]["reason"] == "refresh_in_progress"
    assert unrelated.status_code == 200
    assert results["first"].status_code == 200, results["first"].text
    after = await stored(env, tiktok.id)
    assert after["credentials"]["generation"] == 99 and "refresh_lease" not in after["provider_state"]
