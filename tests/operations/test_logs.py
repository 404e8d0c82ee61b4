"""`--log-format json`: one JSON object per line with request_id, endpoint, status, duration and key id, and
never a secret (a planted API key and bearer token are grepped for in the whole log)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.operations.support import cli_env, free_port, processes, run_cli, spawn, wait_http

pytestmark = pytest.mark.slow


def test_serve_json_logs_carry_ids_and_no_secret(tmp_path) -> None:
    env = cli_env(tmp_path / "home")
    demo = run_cli(env, "init", "--demo")
    secret, key_id = demo["api_key"]["secret"], demo["api_key"]["id"]
    planted = "socialpub_live_PLANTEDbutNOTaREALkey0000000000"
    port = free_port()
    log = tmp_path / "serve.log"
    with processes() as procs:
        proc = spawn(procs, env, "--log-format", "json", "serve", "--port", str(port), "--no-worker", log=log)
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", proc)
        ok = httpx.get(f"{base}/v1/context", headers={"Authorization": f"Bearer {secret}"})
        assert ok.status_code == 200
        bad = httpx.get(f"{base}/v1/context", headers={"Authorization": f"Bearer {planted}"})
        assert bad.status_code == 401
        # a secret in a query string (as an upload signature would be) reaches only uvicorn's access line
        httpx.get(f"{base}/v1/context?token={planted}", headers={"Authorization": f"Bearer {secret}"})
    text = log.read_text()
    assert secret not in text and planted not in text
    lines = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is one JSON object
    calls = [r for r in lines if r["logger"] == "socialpub.access"]
    assert [(r["endpoint"], r["status"]) for r in calls[:2]] == [("get_context", 200), ("get_context", 401)]
    first = calls[0]
    assert first["key_id"] == key_id and first["request_id"] == ok.headers["x-request-id"]
    assert first["transport"] == "rest" and isinstance(first["duration_ms"], float)
    assert "key_id" not in calls[1]  # the refused key is not identified
