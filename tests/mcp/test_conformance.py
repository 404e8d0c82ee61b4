"""The official MCP conformance suite against `socialpub mcp --transport http` (single-user mode, demo key).

Opt-in, because it needs Node 22 and the suite from npm: set SOCIALPUB_CONFORMANCE to the command that runs
it, e.g. `npx -y @modelcontextprotocol/conformance@0.1.16` (docs/mcp.md, "Conformance").
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
COMMAND = os.environ.get("SOCIALPUB_CONFORMANCE")
SCENARIOS = ["server-initialize", "ping", "tools-list", "logging-set-level", "resources-list", "prompts-list",
             "server-sse-multiple-streams", "dns-rebinding-protection"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not COMMAND, reason="set SOCIALPUB_CONFORMANCE to run the MCP conformance suite")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("conformance")
    env = {**os.environ, "SOCIALPUB_HOME": str(home), "PYTHONPATH": str(ROOT)}
    env.pop("SOCIALPUB_DATABASE_URL", None)
    init = subprocess.run([sys.executable, "-m", "server.cli", "init", "--demo", "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=True)
    env["SOCIALPUB_API_KEY"] = json.loads(init.stdout)["api_key"]["secret"]
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "server.cli", "mcp", "--transport", "http", "--port", str(port),
                             "--no-worker"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_conformance_scenario(server_url: str, scenario: str) -> None:
    assert COMMAND
    run = subprocess.run([*shlex.split(COMMAND), "server", "--url", server_url, "--scenario", scenario],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
