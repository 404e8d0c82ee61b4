"""`socialpub sandbox set`: an operator injects faults into a sandbox account and the API reports them."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from schemas.settings import Settings
from server.app import build_app
from server.cli import main
from tools.runtime import Runtime


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    monkeypatch.setenv("SOCIALPUB_RATE_LIMIT", "0")
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def read_options(secret: str, brand_id: str, integration_id: str, times: int = 1) -> list[httpx.Response]:
    """Read the choices `times` times through one service process (fault counters live in its provider)."""
    async def go() -> list[httpx.Response]:
        rt = Runtime.from_settings(Settings.from_env(worker_enabled=False))
        try:
            transport = httpx.ASGITransport(app=build_app(rt, run_worker=False))
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                return [await client.get(f"/v1/brands/{brand_id}/targets/{integration_id}/dynamic-options",
                                         headers={"Authorization": f"Bearer {secret}"}) for _ in range(times)]
        finally:
            await rt.close()

    return anyio.run(go)


def test_operator_injects_and_clears_faults(home, capsys) -> None:
    demo = run_json(capsys, "init", "--demo")
    secret, brand_id = demo["api_key"]["secret"], demo["brands"][0]["id"]
    acct = run_json(capsys, "integrations", "connect", "--brand", brand_id, "--platform", "tiktok", "--sandbox")

    out = run_json(capsys, "sandbox", "set", acct["id"], "--fault", "dynamic_options=rate_limited:1",
                   "--state", "comments_disabled=true", "--state", 'privacy_levels=["SELF_ONLY"]')
    assert out == {"id": acct["id"], "platform": "tiktok", "sandbox": {
        "faults": {"dynamic_options": "rate_limited:1"}, "comments_disabled": True, "privacy_levels": ["SELF_ONLY"]}}
    limited, healed = read_options(secret, brand_id, acct["id"], times=2)  # fires once, then heals
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    assert healed.status_code == 200
    assert healed.json()["data"]["options"] == [{"value": "SELF_ONLY", "label": "Only me"}]
    assert healed.json()["data"]["constraints"]["comments_disabled"] is True

    run_json(capsys, "sandbox", "set", acct["id"], "--fault", "dynamic_options=malformed_data")
    assert read_options(secret, brand_id, acct["id"])[0].status_code == 503
    cleared = run_json(capsys, "sandbox", "set", acct["id"], "--clear")
    assert cleared["sandbox"] == {}
    assert read_options(secret, brand_id, acct["id"])[0].json()["data"]["constraints"]["comments_disabled"] is False


@pytest.mark.parametrize("argv, message", [
    (["--fault", "post=transient"], "OPERATION=KIND"),
    (["--fault", "dynamic_options"], "OPERATION=KIND"),
    (["--fault", "dynamic_options=flaky"], "fault kind must be one of"),
    (["--fault", "dynamic_options=transient:0"], "TIMES"),
    (["--fault", "dynamic_options=transient:x"], "TIMES"),
    (["--state", "followers=3"], "KEY=JSON"),
    (["--state", "boards=[oops"], "must be JSON"),
])
def test_sandbox_set_refusals(home, capsys, argv, message) -> None:
    demo = run_json(capsys, "init", "--demo")
    acct = run_json(capsys, "integrations", "connect", "--brand", demo["brands"][0]["id"], "--platform", "tiktok", "--sandbox")
    assert main(["sandbox", "set", acct["id"], *argv]) == 2
    assert message in capsys.readouterr().err
    assert main(["sandbox", "set", "int_01AAAAAAAAAAAAAAAAAAAAAAAA", "--clear"]) == 2
    assert "no integration" in capsys.readouterr().err
