"""`socialpub networks status [--json]` as a subprocess, on SQLite and on PostgreSQL (docs/networks.md,
docs/operations.md): every network with its operator app state, API version and sunset (providers/versions.py),
the scopes its connect requests (the adapter's) and the redirect URI on SOCIALPUB_PUBLIC_URL; a deployment's
version pin shows, a pin without its sunset is flagged; never a secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from providers import ADAPTERS, instagram, linkedin, tiktok, versions
from tests.support import create_pg_database, drop_pg_database

CLI = str(Path(sys.executable).parent / "socialpub")
SECRET = "status-app-secret-DO-NOT-PRINT"
PG_ENV = "SOCIALPUB_TEST_POSTGRES_URL"

pytestmark = pytest.mark.slow  # `socialpub` CLI processes


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def cli(request, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(tmp_path), SOCIALPUB_PUBLIC_URL="https://pub.example/")
    scratch = None
    if request.param == "postgres":
        base = os.environ.get(PG_ENV)
        if not base:
            pytest.skip(f"PostgreSQL leg: set {PG_ENV} to run it")
        scratch = create_pg_database(base, revision=None)
        env["SOCIALPUB_DATABASE_URL"] = scratch

    def run(*argv: str, stdin: str = "", extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([CLI, *argv], input=stdin, capture_output=True, text=True, timeout=120,
                              env={**env, **(extra or {})})
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
        return done

    run("init")
    yield run
    if scratch is not None:
        drop_pg_database(os.environ[PG_ENV], scratch)


def _by_platform(done: subprocess.CompletedProcess) -> dict[str, dict]:
    return {r["platform"]: r for r in json.loads(done.stdout)["networks"]}


def test_status_lists_every_network_with_app_version_scopes_and_redirect(cli) -> None:
    cli("apps", "set", "--platform", "linkedin", "--client-id", "li-app", "--client-secret", "-", stdin=SECRET + "\n")
    rows = _by_platform(cli("networks", "status", "--json"))
    assert set(rows) == set(ADAPTERS) - {"sandbox"}
    li = rows["linkedin"]
    assert li["operator_app"] == {"configured": True, "source": "stored", "client_id": "li-app"}
    assert li["api_version"]["version"] == versions.LINKEDIN.version == linkedin.VERSION
    assert versions.LINKEDIN.sunset is not None
    assert li["api_version"]["sunset"] == versions.LINKEDIN.sunset.isoformat() and not li["api_version"]["expiring"]
    assert li["scopes"] == list(linkedin.SCOPES)  # the adapter's own scopes, one source of truth
    assert li["redirect_uri"] == "https://pub.example/connect/linkedin/callback"
    assert rows["x"]["operator_app"]["configured"] is False
    assert rows["instagram"]["api_version"]["version"] == versions.GRAPH.version
    assert rows["instagram"]["scopes"] == list(instagram.SCOPES)
    assert rows["tiktok"]["scope_param"] == ",".join(tiktok.SCOPES) and rows["tiktok"]["api_version"] is None
    assert rows["mastodon"]["connect"] == "oauth_per_instance" and rows["mastodon"]["operator_app"] is None
    assert rows["telegram"]["redirect_uri"] is None and rows["telegram"]["scopes"] == []
    text = cli("networks", "status").stdout
    assert "linkedin" in text and "app configured (stored)" in text and f"version {linkedin.VERSION}" in text
    assert "redirect URI to register: https://pub.example/connect/x/callback" in text


def test_status_shows_a_deployment_pin_and_flags_one_without_a_sunset(cli) -> None:
    pinned = _by_platform(cli("networks", "status", "--json", extra={
        "SOCIALPUB_LINKEDIN_VERSION": "202607", "SOCIALPUB_LINKEDIN_VERSION_SUNSET": "2027-07-15",
        "SOCIALPUB_GRAPH_VERSION": "v26.0", "SOCIALPUB_X_CLIENT_ID": "x-env-app",
        "SOCIALPUB_X_CLIENT_SECRET": SECRET}))
    assert pinned["linkedin"]["api_version"] | {"days_left": None} == {
        "name": "LinkedIn-Version header", "version": "202607", "sunset": "2027-07-15", "days_left": None,
        "expiring": False, "overridden": True, "source": versions.LINKEDIN.source}
    graph = pinned["facebook"]["api_version"]
    assert graph["version"] == "v26.0" and graph["sunset"] is None and graph["expiring"] is True
    assert pinned["x"]["operator_app"] == {"configured": True, "source": "env", "client_id": "x-env-app"}
    text = cli("networks", "status", extra={"SOCIALPUB_GRAPH_VERSION": "v26.0"}).stdout
    assert "v26.0 (sunset unknown, BUMP IT)" in text
