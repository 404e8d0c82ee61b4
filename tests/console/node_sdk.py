"""The official MCP TypeScript SDK client for the tests that drive it from Node (tests/console/ts_client/*.mjs),
installed with its locked dependencies by .ci/node-sdk/install.sh into ${SOCIALPUB_NODE_CACHE:-~/.cache/socialpub-node}.
Skipped with the reason when node/npm are absent or the install fails; under CI (`CI` set) that fails instead."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE_CACHE = Path(os.environ.get("SOCIALPUB_NODE_CACHE", Path.home() / ".cache" / "socialpub-node")) / "ts_client"
INSTALL = ROOT / ".ci" / "node-sdk" / "install.sh"


def unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run .ci/node-sdk/install.sh)")
    pytest.skip(reason)


def install() -> Path:
    """The folder holding the client scripts and the SDK (installed now, or reused from the cache)."""
    if not (shutil.which("node") and shutil.which("npm")):
        unavailable("node and npm are absent: the MCP TypeScript SDK client cannot run")
    done = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0 or not (NODE_CACHE / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        unavailable(f"the MCP TypeScript SDK could not be installed: {done.stderr.strip()[-500:]}")
    return NODE_CACHE
