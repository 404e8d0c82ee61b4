"""MCP resource subscriptions with the official TypeScript SDK client (`@modelcontextprotocol/sdk` from npm), over
streamable HTTP (`socialpub mcp --transport http`) and stdio (`socialpub mcp`, spawned by the SDK): the client
creates a Schedule, subscribes to the resource its create_schedule result links, a separate `socialpub worker
--once` publishes it, and the client is told (`notifications/resources/updated`) and reads "published".

The Node side is tests/console/ts_client/subscribe.mjs (installed with the SDK by .ci/node-sdk/install.sh); it
exits 1 when no update arrives, so a server that stops announcing fails here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from server.mcp_server.subscriptions import schedule_uri
from tests.console import node_sdk
from tests.publishing.support import seed_post
from tests.publishing.test_worker_cli import CLI, cli_env, run_cli, runtime
from tools.operator import actions as operator

pytestmark = pytest.mark.slow  # subprocesses: Node, the MCP server, the worker



@pytest.fixture(scope="module")
def sdk() -> Path:
    return node_sdk.install()


async def seed(home: Path) -> dict[str, str]:
    rt = runtime(home)
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        ws = await operator.create_workspace(s, now, "TS subscribe", "agency")
        brand = await operator.create_brand(s, now, ws, "TS brand")
        account = await operator.connect_integration(s, now, brand, "facebook")
        _, key = await operator.create_key(s, now, ws, "ts subscriber", None, role="admin")
    item, _ = await seed_post(rt.db, brand, now)
    await rt.close()
    return {"brand": brand.id, "integration": account.id, "item": item, "key": key}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def mcp_http(env: dict[str, str], home: Path) -> Iterator[str]:
    """`socialpub mcp --transport http` on a free port; yields its /mcp URL once it answers."""
    port = _free_port()
    with open(home / "mcp.log", "w") as log:
        proc = subprocess.Popen([CLI, "mcp", "--transport", "http", "--port", str(port)], env=env,
                                stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 120
        with httpx.Client(timeout=1) as client:
            while True:
                try:
                    client.get(url)  # any HTTP answer (401 without a key) means it serves
                    break
                except httpx.HTTPError:
                    pass
                assert proc.poll() is None, (home / "mcp.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "socialpub mcp did not start"
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _next(node: subprocess.Popen[str], event: str) -> dict[str, Any]:
    assert node.stdout and node.stderr
    line = node.stdout.readline()
    assert line, f"the client ended before {event!r}: {node.stderr.read()[-2000:]}"
    message = json.loads(line)
    assert message["event"] == event, json.dumps(message)[:3000]
    return message


@contextmanager
def _target(transport: str, env: dict[str, str], home: Path) -> Iterator[list[str]]:
    if transport == "http":
        with mcp_http(env, home) as url:
            yield ["http", url]
    else:
        yield ["stdio", CLI, "mcp"]


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_typescript_client_hears_the_worker_publish(sdk: Path, initialized: Path, transport: str) -> None:
    home = initialized
    seeded = anyio.run(seed, home)
    # The worker is a separate process here: neither MCP server publishes (SOCIALPUB_WORKER=off).
    env = {**cli_env(home), "SOCIALPUB_WORKER": "off"}
    with _target(transport, env, home) as argv:
        node = subprocess.Popen(["node", str(sdk / "subscribe.mjs"), *argv],
                                env={**env, "SOCIALPUB_API_KEY": seeded["key"]}, cwd=sdk, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert node.stdin
        try:
            _next(node, "connected")
            node.stdin.write(json.dumps({
                "brand_id": seeded["brand"], "content_item_id": seeded["item"],
                "integration_ids": [seeded["integration"]],
                "approval_status": "approved", "idempotency_key": f"ts-subscribe-{transport}"}) + "\n")
            node.stdin.flush()
            created = _next(node, "created")
            uri = schedule_uri(seeded["brand"], created["schedule_id"])
            assert created["uri"] == uri
            assert _next(node, "subscribed")["uri"] == uri

            due = datetime.fromisoformat(created["scheduled_at"].replace("Z", "+00:00"))
            time.sleep(max(0.0, (due - datetime.now(UTC)).total_seconds()) + 0.2)
            run_cli(home, "worker", "--once")  # a separate process: the update comes through the event log
            node.stdin.write("worker_done\n")
            node.stdin.flush()

            updated = _next(node, "updated")
            assert updated["uri"] == uri and updated["count"] >= 1
            read = _next(node, "read")
            assert read == {"event": "read", "status": "published", "id": created["schedule_id"],
                            "updates": read["updates"]}
            assert node.wait(timeout=30) == 0, node.stderr.read() if node.stderr else ""
        finally:
            if node.poll() is None:
                node.kill()
                node.wait()
