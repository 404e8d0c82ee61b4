"""`socialpub users list|invite|set-role|deactivate` and `socialpub brands update`, run as subprocesses against a
scratch SOCIALPUB_HOME; their effect is checked through the public API (REST over ASGI) in this process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from schemas.settings import Settings
from server.app import build_app
from tools.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path):
    out = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    out.update(SOCIALPUB_HOME=str(tmp_path), SOCIALPUB_RATE_LIMIT="0", SOCIALPUB_PUBLIC_URL="https://pub.example")
    return out


def cli(env: dict, *argv: str, stdin: str = "", ok: bool = True) -> dict:
    run = subprocess.run([sys.executable, "-m", "server.cli", *argv, "--json"], cwd=ROOT, env=env, input=stdin,
                         capture_output=True, text=True, timeout=120)
    assert (run.returncode == 0) is ok, run.stdout + run.stderr
    return json.loads(run.stdout)


def call(env: dict, secret: str, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            rt = Runtime.from_settings(Settings.from_env(worker_enabled=False))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        try:
            transport = httpx.ASGITransport(app=build_app(rt, run_worker=False))
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                return await client.get(path, headers={"Authorization": f"Bearer {secret}"})
        finally:
            await rt.close()

    return anyio.run(go)


def test_users_team_commands(env) -> None:
    demo = cli(env, "init", "--demo")
    brand_id = demo["brands"][0]["id"]
    listed = cli(env, "users", "list")
    admin = listed["users"][0]
    assert admin["role"] == "admin" and admin["last_sign_in_at"] is None and listed["invitations"] == []

    invited = cli(env, "users", "invite", "--email", "Ann@Example.com", "--brands", brand_id)
    assert invited["email"] == "ann@example.com" and invited["role"] == "member" and invited["sent"] is False
    assert invited["link"].startswith("https://pub.example/console/invitations/")
    assert invited["brand_ids"] == [brand_id]
    assert cli(env, "users", "list")["invitations"][0]["email"] == "ann@example.com"
    # the link is shown once: never listed again
    assert invited["link"].rsplit("/", 1)[1] not in json.dumps(cli(env, "users", "list"))

    refused = cli(env, "users", "invite", "--email", admin["email"], ok=False)
    assert "already has a console sign-in" in refused["error"]["message"]

    # the last admin can neither lose the role nor be deactivated
    refused = cli(env, "users", "set-role", admin["email"], "--role", "member", ok=False)
    assert "last admin" in refused["error"]["message"]
    refused = cli(env, "users", "deactivate", admin["id"], ok=False)
    assert "last admin" in refused["error"]["message"]

    # an API key of a member made admin, then deactivated: refused at once
    second = cli(env, "users", "create", "--email", "bo@example.com", "--password-stdin", stdin="a long password\n")
    key = cli(env, "keys", "create", "--name", "bo's key", "--scopes", "posts:read", "--user", second["id"])
    assert call(env, key["secret"], "/v1/context").status_code == 200
    assert cli(env, "users", "set-role", "bo@example.com", "--role", "admin")["role"] == "admin"
    assert cli(env, "users", "set-role", admin["email"], "--role", "member")["role"] == "member"  # bo is admin now
    out = cli(env, "users", "deactivate", "bo@example.com", ok=False)  # bo is now the last admin
    assert "last admin" in out["error"]["message"]
    cli(env, "users", "set-role", admin["email"], "--role", "admin")
    out = cli(env, "users", "deactivate", "bo@example.com")
    assert out["keys_revoked"] == 2  # its console key and the one made for it
    assert call(env, key["secret"], "/v1/context").status_code == 401
    assert [u["active"] for u in cli(env, "users", "list")["users"]] == [True, False]

    assert cli(env, "users", "set-role", "nobody@example.com", "--role", "admin", ok=False)["error"]["message"] \
        .startswith("no user")


def test_brands_update_shows_in_brand_context(env) -> None:
    demo = cli(env, "init", "--demo")
    secret, brand_id = demo["api_key"]["secret"], demo["brands"][0]["id"]
    out = cli(env, "brands", "update", brand_id, "--name", "Renamed", "--timezone", "Europe/Paris",
              "--website", "https://renamed.example", "--colors", "#112233,#AABBCC", "--voice-profile", "-",
              stdin="Warm and plain.\nAudience: bakers.\n")
    assert set(out["changed"]) >= {"name", "timezone", "website", "colors", "voice_profile"}
    ctx = call(env, secret, f"/v1/brands/{brand_id}/context").json()["data"]
    assert ctx["brand"]["name"] == "Renamed" and ctx["brand"]["timezone"] == "Europe/Paris"
    assert ctx["voice"]["profile"] == "Warm and plain.\nAudience: bakers.\n".strip()
    assert ctx["identity"]["colors"] == ["#112233", "#aabbcc"]

    for argv, message in ((("--timezone", "Mars/Base"), "unknown IANA timezone"),
                          (("--website", "javascript:alert(1)"), "http(s) URL"),
                          (("--name", ""), "cannot be empty"),
                          (("--colors", "red"), "hex")):
        assert message in cli(env, "brands", "update", brand_id, *argv, ok=False)["error"]["message"]
    assert "nothing to change" in cli(env, "brands", "update", brand_id, ok=False)["error"]["message"]
    assert "no brand" in cli(env, "brands", "update", "brd_nope", "--name", "x", ok=False)["error"]["message"]
