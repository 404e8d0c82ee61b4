"""The deployments docs/operations.md describes, as real processes on both backends: replicas of
`socialpub serve --no-worker` plus a separate `socialpub worker` against one database; `socialpub mcp --transport
http`; and upgrades (a database one migration behind is refused with the `init` advice until `init` runs; a
database migrated by a newer socialpub is refused in one line by `serve` and `init`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from providers.sandbox import SandboxLedger
from tests.deploy.support import BACKEND_NAMES, Demo, Deployment, demo_deployment, deployment
from tests.support import previous_revision

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=BACKEND_NAMES)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(scope="module")
def demo(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """The demo deployment once per backend; each test that starts from it gets a copy (`deployment(demo=...)`)."""
    with demo_deployment(backend, tmp_path_factory.mktemp(f"demo-{backend}")) as made:
        yield made


def demo_key(demo: Demo) -> str:
    return demo.printed["api_key"]["secret"]


def get(base: str, path: str, key: str) -> dict:
    response = httpx.get(f"{base}/v1{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def post(base: str, path: str, key: str, body: dict) -> dict:
    response = httpx.post(f"{base}/v1{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert response.status_code in (200, 201), response.text
    return response.json()["data"]


def test_two_replicas_and_a_worker_publish_a_due_schedule(backend, demo, tmp_path) -> None:
    with deployment(backend, tmp_path, demo=demo) as dep:
        key = demo_key(demo)
        replicas = [dep.serve("--no-worker"), dep.serve("--no-worker")]
        worker = dep.start("worker")
        contexts = [get(base, "/context", key) for base in replicas]
        assert contexts[0]["brands"] == contexts[1]["brands"] and contexts[0]["brands"]
        brand = contexts[0]["brands"][0]["id"]

        # Written through one replica, published by the worker, read back through the other.
        targets = get(replicas[0], f"/brands/{brand}/targets", key)["targets"]
        x = next(t["integration_id"] for t in targets if t["platform"] == "x")
        item = post(replicas[0], f"/brands/{brand}/content-items", key, {
            "name": "Replicas", "copy_mode": "single", "x_settings": {},
            "single_copy": {"caption": "Published by a separate worker", "hashtags": [], "title": None}})
        item_id = item["content_item"]["id"]
        when = (datetime.now(UTC) + timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        post(replicas[0], f"/brands/{brand}/schedules", key, {
            "content_item_id": item_id, "integration_ids": [x], "scheduled_at": when, "approval_status": "approved",
            "idempotency_key": "deploy-test"})

        deadline = time.monotonic() + 90
        published = []
        while time.monotonic() < deadline and not published:
            assert worker.poll() is None, dep.log(worker)
            history = get(replicas[1], f"/brands/{brand}/history", key)["items"]
            # this post's record (the demo brand also has a month of published sandbox posts, docs/analytics.md)
            published = [h for h in history if h["status"] == "published" and h["post_id"] == item_id]
            time.sleep(0.5)
        assert published, f"not published within 90 s; worker log:\n{dep.log(worker)}"
        assert published[0]["permalink_url"].startswith("https://")
        # The sandbox saw exactly one publish call for that account.
        calls = {k: v for k, v in SandboxLedger(dep.home / "sandbox" / "ledger.db").publishes().items() if k[0] == x}
        assert list(calls.values()) == [1], calls

def _rpc(client: httpx.Client, base: str, body: dict, headers: dict[str, str]) -> tuple[httpx.Response, dict]:
    response = client.post(f"{base}/mcp", json=body, headers={
        "Accept": "application/json, text/event-stream", **headers})
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return response, json.loads(data[-1])
    return response, response.json()


def test_mcp_over_http_answers_initialize_and_tools_list(backend, demo, tmp_path) -> None:
    with deployment(backend, tmp_path, demo=demo) as dep:
        key = demo_key(demo)
        base = dep.serve("--transport", "http", "--no-worker", command="mcp", path="/mcp")
        auth = {"Authorization": f"Bearer {key}"}
        with httpx.Client(timeout=30) as client:
            response, init = _rpc(client, base, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "deploy-test", "version": "1"}}}, auth)
            assert init["result"]["serverInfo"]["name"]
            session = {"Mcp-Session-Id": response.headers["mcp-session-id"]} \
                if "mcp-session-id" in response.headers else {}
            headers = {**auth, **session, "MCP-Protocol-Version": init["result"]["protocolVersion"]}
            client.post(f"{base}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                        headers={"Accept": "application/json, text/event-stream", **headers})
            _, tools = _rpc(client, base, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers)
        names = {t["name"] for t in tools["result"]["tools"]}
        assert {"get_context", "list_history"} <= names


def one_line_refusal(done, *expected: str) -> str:
    assert done.returncode != 0, done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for fragment in expected:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_previous_revision_is_refused_with_init_advice_until_init(backend, tmp_path) -> None:
    with deployment(backend, tmp_path, revision=previous_revision()) as dep:
        advice = ("run `socialpub init` to apply 1 pending migration", previous_revision())
        one_line_refusal(dep.run("serve", "--no-worker", "--port", "9"), *advice)
        one_line_refusal(dep.run("worker", "--once"), *advice)
        one_line_refusal(dep.run("mcp", "--transport", "http", "--port", "9"), *advice)
        refusal = json.loads(dep.run("brands", "create", "--name", "B", "--json").stdout)
        assert refusal["error"]["code"] == "DATABASE_BEHIND"
        done = dep.run("init")
        assert done.returncode == 0, done.stderr
        base = dep.serve("--no-worker")
        assert httpx.get(f"{base}/v1/context", timeout=10).status_code == 401  # serving; no key given


def test_database_ahead_is_one_line_from_serve_and_init(backend, tmp_path) -> None:
    with deployment(backend, tmp_path, revision="heads") as dep:
        dep.set_revision("9999_from_a_newer_release")
        ahead = ("migrated by a newer socialpub; install that version", "9999_from_a_newer_release")
        one_line_refusal(dep.run("serve", "--port", "9"), *ahead)
        one_line_refusal(dep.run("init"), *ahead)
        one_line_refusal(dep.run("worker", "--once"), *ahead)


def test_unreachable_database_is_one_line_without_the_password(tmp_path) -> None:
    dep = Deployment(tmp_path, "postgresql+asyncpg://operator:s3cret-pw@127.0.0.1:9/socialpub")
    for args in (("serve", "--port", "9"), ("init",), ("worker", "--once")):
        line = one_line_refusal(dep.run(*args), "cannot reach the database at",
                                "postgresql+asyncpg://operator:***@127.0.0.1:9/socialpub")
        assert "s3cret-pw" not in line
