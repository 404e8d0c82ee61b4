"""Operator OAuth apps through the CLI as a subprocess: `apps set` (secret from stdin, sealed), `apps list`
(never the secret), the environment winning over a stored app, and `integrations connect --oauth` printing the
network's authorize URL with PKCE, its documented scopes and the redirect URI on SOCIALPUB_PUBLIC_URL."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from providers import x

CLI = str(Path(sys.executable).parent / "socialpub")
SECRET = "app-client-secret-DO-NOT-PRINT"

pytestmark = pytest.mark.slow  # dozens of `socialpub` CLI processes


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(home), SOCIALPUB_PUBLIC_URL="https://pub.example")
    return env


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory) -> tuple[Path, str]:
    """`socialpub init --demo` once for the module (each test gets a copy of the home: its database and vault key);
    returns the home and the first brand's id."""
    home = tmp_path_factory.mktemp("demo-home")
    done = subprocess.run([CLI, "init", "--demo", "--json"], capture_output=True, text=True, timeout=120,
                          env=_env(home))
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    return home, json.loads(done.stdout)["brands"][0]["id"]


@dataclass(frozen=True)
class _Cli:
    """`socialpub` in one test's home; `brand` is the demo's first brand."""

    env: dict[str, str]
    brand: str

    def __call__(self, *argv: str, stdin: str = "", extra: dict[str, str] | None = None,
                 ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([CLI, *argv], input=stdin, capture_output=True, text=True, timeout=120,
                              env={**self.env, **(extra or {})})
        assert (done.returncode == 0) == ok, done.stderr
        assert SECRET not in done.stdout + done.stderr
        return done


@pytest.fixture
def cli(tmp_path, demo_home) -> _Cli:
    shutil.copytree(demo_home[0], tmp_path, dirs_exist_ok=True)
    return _Cli(_env(tmp_path), demo_home[1])


def _brand(cli: _Cli) -> str:
    return cli.brand


def test_set_list_and_connect_prints_the_authorize_url(cli, tmp_path) -> None:
    listed = json.loads(cli("apps", "list", "--json").stdout)["apps"]
    assert {"platform": "x", "configured": False, "source": None, "client_id": None, "has_client_secret": False,
            "redirect_uri": "https://pub.example/connect/x/callback"} in listed
    refused = cli("integrations", "connect", "--brand", _brand(cli), "--platform", "x", "--oauth", ok=False)
    assert "socialpub apps set --platform x" in refused.stderr

    cli("apps", "set", "--platform", "x", "--client-id", "cid-1", "--client-secret", "-", stdin=SECRET + "\n")
    [row] = [a for a in json.loads(cli("apps", "list", "--json").stdout)["apps"] if a["platform"] == "x"]
    assert row["configured"] and row["source"] == "stored" and row["client_id"] == "cid-1" and row["has_client_secret"]
    stored = sqlite3.connect(tmp_path / "socialpub.db").execute(
        "select client_secret from oauth_apps where platform='x'").fetchone()[0]
    assert SECRET not in stored  # sealed by the vault

    out = json.loads(cli("integrations", "connect", "--brand", _brand(cli), "--platform", "x", "--oauth",
                         "--json").stdout)
    url = urlsplit(out["authorize_url"])
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert f"{url.scheme}://{url.netloc}{url.path}" == x.AUTHORIZE_URL
    assert q["client_id"] == "cid-1" and q["redirect_uri"] == "https://pub.example/connect/x/callback"
    assert q["scope"].split() == list(x.SCOPES) and "offline.access" in q["scope"]
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43 and q["state"]


def test_environment_wins_and_bad_input_is_refused(cli) -> None:
    cli("apps", "set", "--platform", "x", "--client-id", "stored-id", "--client-secret", "-", stdin=SECRET + "\n")
    env = {"SOCIALPUB_X_CLIENT_ID": "env-id", "SOCIALPUB_X_CLIENT_SECRET": SECRET}
    [row] = [a for a in json.loads(cli("apps", "list", "--json", extra=env).stdout)["apps"] if a["platform"] == "x"]
    assert row["source"] == "env" and row["client_id"] == "env-id"
    out = json.loads(cli("integrations", "connect", "--brand", _brand(cli), "--platform", "x", "--oauth", "--json",
                         extra=env).stdout)
    assert parse_qs(urlsplit(out["authorize_url"]).query)["client_id"] == ["env-id"]
    assert "takes no operator app" in cli("apps", "set", "--platform", "mastodon", "--client-id", "a", ok=False).stderr
    assert "read nothing" in cli("apps", "set", "--platform", "x", "--client-id", "a", "--client-secret", "-",
                                 ok=False).stderr



def test_meta_and_linkedin_apps_connect_with_their_documented_scopes(cli) -> None:
    from providers import facebook, linkedin, threads

    modules = {"facebook": facebook, "threads": threads, "linkedin": linkedin}
    for platform in modules:
        cli("apps", "set", "--platform", platform, "--client-id", f"{platform}-app", "--client-secret", "-",
            stdin=SECRET + "\n")
    rows = {a["platform"]: a for a in json.loads(cli("apps", "list", "--json").stdout)["apps"]}
    for platform, module in modules.items():
        row = rows[platform]
        assert row["configured"] and row["redirect_uri"] == f"https://pub.example/connect/{platform}/callback"
        out = json.loads(cli("integrations", "connect", "--brand", _brand(cli), "--platform", platform, "--oauth",
                             "--json").stdout)
        url = urlsplit(out["authorize_url"])
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        assert f"{url.scheme}://{url.netloc}{url.path}" == module.AUTHORIZE_URL
        assert q["client_id"] == f"{platform}-app" and q["scope"].split() == list(module.SCOPES) == out["scopes"]
        assert q["redirect_uri"] == row["redirect_uri"] and q["state"] and q["code_challenge_method"] == "S256"
