"""MCP authorization end to end with the official TypeScript SDK client (`@modelcontextprotocol/sdk` from npm)
against `socialpub serve` (a subprocess on a free port), the consent driven by Playwright in Debian's Chromium.

The Node script (tests/console/ts_client/client.mjs, installed with its locked dependencies by
.ci/node-sdk/install.sh into ${SOCIALPUB_NODE_CACHE:-~/.cache/socialpub-node}) lets the SDK discover, register
and start authorization; it hands the authorization URL to this test, which opens it in the browser, signs in
and allows on the consent page; the browser lands on the script's loopback callback with the code. The script
then exchanges it, calls a tool, refreshes, and after this test revokes the grant on the console's keys page,
sees 401. Skipped with the reason when node/npm or Chromium are absent; under CI (`CI` set) that fails instead.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console import node_sdk
from tests.console.support import PASSWORD
from tests.console.test_browser import BIN, CHROMIUM, CHROMIUM_ARGS, _cli, _free_port, serving

pytestmark = pytest.mark.slow  # a served subprocess, Node and Chromium


@pytest.fixture(scope="module")
def ts_client() -> Path:
    """The installed client script; installs (or reuses) the SDK in the cache."""
    return node_sdk.install() / "client.mjs"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("ts-client-home")
    port = _free_port()
    env = {**os.environ, "SOCIALPUB_HOME": str(home), "SOCIALPUB_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    env.pop("SOCIALPUB_DATABASE_URL", None)
    _cli(env, "init")
    _cli(env, "users", "create", "--email", "admin@example.com", "--role", "admin", "--password-stdin",
         stdin=PASSWORD + "\n")
    with serving(env, home, port) as url:
        yield url


def _next(node: subprocess.Popen[str], event: str) -> dict[str, Any]:
    assert node.stdout and node.stderr
    line = node.stdout.readline()
    assert line, f"the client ended before {event!r}: {node.stderr.read()[-2000:]}"
    message = json.loads(line)
    assert message["event"] == event, message
    return message


def test_the_typescript_sdk_client_authorizes_calls_refreshes_and_is_revoked(ts_client: Path, base: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert BIN.exists()
    node = subprocess.Popen(["node", str(ts_client), f"{base}/mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ts_client.parent)
    assert node.stdout and node.stdin
    try:
        with sync_playwright() as p:
            chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = chromium.new_page()
            # discovery and registration happened inside the SDK before it asked for the browser
            authorize = _next(node, "authorize")["url"]
            assert authorize.startswith(f"{base}/authorize?")
            assert "code_challenge_method=S256" in authorize and "resource=" in authorize
            page.goto(authorize)  # → consent → not signed in → sign-in, then back to the consent page
            page.get_by_label("Email").fill("admin@example.com")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("heading", level=1)).to_contain_text("TypeScript SDK test client")
            page.get_by_role("button", name="Allow").click()
            expect(page.get_by_text("Authorized; you can close this page.")).to_be_visible()

            registered = _next(node, "registered")
            assert registered["client_id"] and registered["resource"] == f"{base}/mcp"
            assert registered["authorization_server"].rstrip("/") == base
            called = _next(node, "tool_call")
            assert called["token_type"].lower() == "bearer" and called["expires_in"] > 0
            assert called["has_refresh_token"] and called["tools"] > 0 and called["success"] is True
            refreshed = _next(node, "refreshed")
            assert refreshed["outcome"] == "AUTHORIZED" and refreshed["rotated"] and refreshed["success"] is True
            assert refreshed["old"]["status"] == 401

            # the grant sits beside the API keys; revoking it there ends the client's access
            _next(node, "revoke_now")
            page.goto(f"{base}/console/keys")
            page.get_by_role("button", name="Revoke MCP: TypeScript SDK test client").click()
            expect(page.get_by_text("API key revoked.")).to_be_visible()
            node.stdin.write("revoked\n")
            node.stdin.flush()
            revoked = _next(node, "revoked")
            assert revoked["after"]["status"] == 401
            assert "resource_metadata=" in revoked["after"]["wwwAuthenticate"]
            assert revoked["sdk_error"] == "UnauthorizedError" and revoked["asked_again"] is True
            chromium.close()
        assert node.wait(timeout=30) == 0, node.stderr.read() if node.stderr else ""
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
