"""`socialpub integrations connect` without credentials (a subprocess): a sandbox account only with `--sandbox`
(and named as one); otherwise one line saying what is missing — `socialpub apps set` or `--oauth` for an
operator-app network, the credential flags for the others — exit 2 and no account created."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

CLI = str(Path(sys.executable).parent / "socialpub")

pytestmark = pytest.mark.slow  # a dozen `socialpub` CLI processes


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(home), SOCIALPUB_PUBLIC_URL="https://pub.example")
    return env


@pytest.fixture(scope="module")
def base_home(tmp_path_factory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("connect-home")
    for argv in (["init"], ["brands", "create", "--name", "Acme", "--json"]):
        done = subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=120, env=_env(home))
        assert done.returncode == 0, done.stderr
    return home, json.loads(done.stdout)["id"]


@dataclass(frozen=True)
class _Connect:
    """`socialpub integrations connect` for the base brand in one test's home."""

    home: Path
    brand: str

    def __call__(self, *argv: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLI, "integrations", "connect", "--brand", self.brand, *argv], capture_output=True,
                              text=True, timeout=120, env={**_env(self.home), **(extra or {})})

    def accounts(self) -> list[tuple[str, str, str]]:
        return sqlite3.connect(self.home / "socialpub.db").execute(
            "select platform, provider, display_name from integrations").fetchall()


@pytest.fixture
def cli(tmp_path, base_home) -> _Connect:
    shutil.copytree(base_home[0], tmp_path, dirs_exist_ok=True)
    return _Connect(tmp_path, base_home[1])


def _refused(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("argv, extra, expected", [
    (["--platform", "x"], None, ["socialpub apps set --platform x", "--oauth", "--sandbox"]),
    (["--platform", "linkedin"], None, ["socialpub apps set --platform linkedin", "--oauth", "--sandbox"]),
    (["--platform", "x"], {"SOCIALPUB_X_CLIENT_ID": "cid", "SOCIALPUB_X_CLIENT_SECRET": "csecret"},
     ["add `--oauth`", "app is configured", "--sandbox"]),
    (["--platform", "telegram"], None, ["--bot-token", "--chat-id", "--sandbox"]),
    (["--platform", "mastodon"], None, ["--instance URL", "--sandbox"]),
    (["--platform", "bluesky"], None, ["--handle", "--app-password", "--sandbox"]),
    (["--platform", "discord"], None, ["--webhook-url", "--sandbox"]),
    (["--platform", "myspace"], None, ["platform must be one of"]),
])
def test_connect_without_credentials_says_what_is_missing_and_creates_nothing(cli, argv, extra, expected) -> None:
    line = _refused(cli(*argv, extra=extra))
    for part in expected:
        assert part in line, line
    assert "csecret" not in line
    assert cli.accounts() == []


def test_sandbox_only_on_request_and_named_as_one(cli) -> None:
    out = json.loads(cli("--platform", "x", "--sandbox", "--json").stdout)
    assert out["platform"] == "x" and out["provider"] == "sandbox" and out["status"] == "connected"
    assert out["display_name"] == "Acme on X (sandbox)"
    assert cli.accounts() == [("x", "sandbox", "Acme on X (sandbox)")]
    named = json.loads(cli("--platform", "threads", "--sandbox", "--display-name", "Test", "--json").stdout)
    assert named["display_name"] == "Test"


@pytest.mark.parametrize("argv", [["--platform", "x", "--sandbox", "--oauth"],
                                  ["--platform", "telegram", "--sandbox", "--bot-token", "t", "--chat-id", "@c"]])
def test_sandbox_refuses_network_flags(cli, argv) -> None:
    assert "--sandbox takes no network credential flags" in _refused(cli(*argv))
    assert cli.accounts() == []
