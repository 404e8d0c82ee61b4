"""Issue 27 item 5: `socialpub keys create` never changes a user's role, and a key never holds more than its
owner's role allows. The CLI runs as a subprocess, on SQLite and on PostgreSQL; the service-level refusal (what
the console and MCP sign-in call) through the `env` fixture on both backends."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from schemas.scopes import ROLE_SCOPES
from tests.operations.support import CLI, cli_env, run_cli
from tools.operator import actions as operator

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
def home_env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    extra = {}
    if request.param == "postgres":
        extra["SOCIALPUB_DATABASE_URL"] = request.getfixturevalue("pg_scratch")
    env = cli_env(tmp_path, **extra)
    run_cli(env, "init")
    return env


def refused(env: dict[str, str], *args: str) -> str:
    """A refused command: exit 2 and a one-line message on stderr, nothing on stdout."""
    done = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    message = done.stderr.strip()
    assert message and "\n" not in message, message
    return message


def test_keys_create_never_changes_a_role(home_env) -> None:
    admin = run_cli(home_env, "keys", "create", "--name", "ops", "--scopes", "all", "--role", "admin")
    assert admin["role"] == "admin" and "publish:execute" in admin["scopes"]
    user = admin["user_id"]
    # --user without --role: the user's own role, unchanged.
    second = run_cli(home_env, "keys", "create", "--name", "reader", "--scopes", "posts:read", "--user", user)
    assert second["role"] == "admin" and second["user_id"] == user
    # A conflicting --role is an error, not a demotion.
    message = refused(home_env, "keys", "create", "--name", "oops", "--scopes", "posts:read", "--user", user,
                      "--role", "member")
    assert f"user {user} has role admin, not member" in message and "never changes a role" in message
    # Still an admin: a key for the user can hold publish:execute.
    third = run_cli(home_env, "keys", "create", "--name", "publisher", "--scopes", "publish:execute", "--user", user,
                    "--role", "admin")
    assert third["role"] == "admin" and third["scopes"] == ["publish:execute"]


def test_a_key_never_holds_more_than_its_role(home_env) -> None:
    message = refused(home_env, "keys", "create", "--name", "agent", "--scopes", "posts:read,publish:execute")
    assert message.endswith("role member cannot hold scope publish:execute: drop it, or give the key an admin "
                            "owner (--role admin for a new owner, or --user ID of an admin)"), message
    member = run_cli(home_env, "keys", "create", "--name", "agent", "--scopes", "all")
    assert member["role"] == "member" and member["scopes"] == list(ROLE_SCOPES["member"])
    assert "publish:execute" not in member["scopes"] and "community:write" not in member["scopes"]
    message = refused(home_env, "keys", "create", "--name", "agent 2", "--scopes", "schedule:write,publish:execute",
                      "--user", member["user_id"])
    assert "role member cannot hold scope publish:execute" in message
    message = refused(home_env, "keys", "create", "--name", "agent 3", "--scopes", "integrations:write,admin:read",
                      "--role", "member")
    assert "role member cannot hold scope integrations:write, admin:read" in message
    # --json turns the same refusal into the JSON error envelope.
    done = subprocess.run([CLI, "keys", "create", "--name", "x", "--scopes", "publish:execute", "--json"],
                          env=home_env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "REFUSED" and "role member cannot hold scope publish:execute" in error["message"]



@pytest.mark.anyio
async def test_the_service_refuses_for_every_caller(env) -> None:
    """`operator.create_key` is what the console's key page and MCP sign-in call: the same refusals."""
    ws = await env.workspace()
    async with env.db.session(write=True) as s:
        key, _ = await operator.create_key(s, env.clock.now(), ws, "member", ("posts:read",))
        user_id = key.user_id
    for scopes, role, expected in (
        (("publish:execute",), None, "role member cannot hold scope publish:execute"),
        (("posts:read",), "admin", f"user {user_id} has role member, not admin"),
    ):
        async with env.db.session(write=True) as s:
            with pytest.raises(operator.OperatorError, match=expected):
                await operator.create_key(s, env.clock.now(), ws, "more", scopes, role=role, user_id=user_id)
    async with env.db.session(write=True) as s:
        with pytest.raises(operator.OperatorError, match="role member cannot hold scope community:read"):
            await operator.create_key(s, env.clock.now(), ws, "new member", ("community:read",), role="member")
    counts = await env.row_counts()
    assert counts["api_keys"] == 1 and counts["users"] == 1
