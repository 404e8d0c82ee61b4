"""The operator CLI, run in-process against a scratch SOCIALPUB_HOME."""

from __future__ import annotations

import json

import pytest

from server.cli import main


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_init_demo_then_commands(home, capsys) -> None:
    out = run_json(capsys, "init", "--demo")
    assert (home / "socialpub.db").exists()
    assert len(out["brands"]) == 2
    secret = out["api_key"]["secret"]
    assert secret.startswith("socialpub_live_") and out["api_key"]["role"] == "admin"
    brand_id = out["brands"][0]["id"]

    brand = run_json(capsys, "brands", "create", "--name", "Cli Brand", "--timezone", "Asia/Tokyo",
                     "--website", "https://cli.example", "--category", "Retail")
    assert brand["timezone"] == "Asia/Tokyo" and brand["business_category"] == "Retail"

    key = run_json(capsys, "keys", "create", "--name", "restricted", "--scopes", "posts:read,brands:read",
                   "--brands", brand_id, "--role", "member")
    assert key["scopes"] == ["brands:read", "posts:read"] and key["brand_ids"] == [brand_id]
    assert key["secret"].startswith("socialpub_live_")

    acct = run_json(capsys, "integrations", "connect", "--brand", brand_id, "--platform", "threads", "--sandbox",
                    "--status", "expired", "--display-name", "Threads test")
    assert acct["platform"] == "threads" and acct["status"] == "expired"
    assert "credentials" not in acct and "access_token" not in json.dumps(acct)

    revoked = run_json(capsys, "keys", "revoke", key["id"])
    assert revoked["revoked"] is True

    # re-running init --demo creates nothing: no second demo, no second key (issue 33 item 4); it says how to
    # make another key
    again = run_json(capsys, "init", "--demo")
    assert again["workspace"]["id"] == out["workspace"]["id"] and again["api_key"] is None
    assert not again["created"] and again["next"].startswith("socialpub keys create")


def test_refusals_exit_2_with_a_message(home, capsys) -> None:
    assert main(["brands", "create", "--name", "x"]) == 2
    assert "socialpub init" in capsys.readouterr().err
    assert main(["init"]) == 0
    capsys.readouterr()
    assert main(["keys", "create", "--name", "k", "--scopes", "posts:read,nope"]) == 2
    assert "unknown scopes: nope" in capsys.readouterr().err
    assert main(["brands", "create", "--name", "x", "--timezone", "Mars/Olympus"]) == 2
    assert "timezone" in capsys.readouterr().err
    assert main(["integrations", "connect", "--brand", "brd_x", "--platform", "x", "--sandbox"]) == 2


def test_errors_under_json_are_json(home, capsys) -> None:
    assert main(["brands", "create", "--name", "x", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["success"] is False and error["error"]["code"] == "DATABASE_BEHIND"
    assert "socialpub init" in error["error"]["message"]
    with pytest.raises(SystemExit) as usage:  # argparse's own refusals too
        main(["brands", "create", "--json"])
    assert usage.value.code == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "USAGE" and "--name" in error["message"]


def test_several_workspaces_take_workspace(home, capsys) -> None:
    first = run_json(capsys, "init")["workspace"]["id"]
    second = run_json(capsys, "workspaces", "create", "--name", "Second")["id"]
    listed = run_json(capsys, "workspaces", "list")["workspaces"]
    assert [w["id"] for w in listed] == [first, second]
    for argv in (["brands", "create", "--name", "B"], ["keys", "create", "--name", "k", "--scopes", "all"],
                 ["workspaces", "set-plan", "--plan", "agency"]):
        assert main([*argv, "--json"]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "REFUSED" and "pass --workspace" in error["message"]
        assert "workspaces list" in error["message"]
        assert run_json(capsys, *argv, "--workspace", second)


def test_worker_once_prints_json(home, capsys) -> None:
    run_json(capsys, "init")
    assert run_json(capsys, "worker", "--once") == {"processed": 0}


def test_schedule_item_takes_integrations_either_way() -> None:
    from server.cli import build_parser

    base = ["autopilot", "schedule-item", "api_1", "--content-item", "ci_1", "--at", "2026-12-01T10:00:00Z"]
    spaced = build_parser().parse_args([*base, "--integration", "int_1", "int_2"])
    repeated = build_parser().parse_args([*base, "--integration", "int_1", "--integration", "int_2"])
    assert spaced.integration == repeated.integration == ["int_1", "int_2"]


@pytest.mark.parametrize("url", ["not a url", "sqlite+aiosqlite:////proc/socialpub-nowhere/x.db",
                                 "nosuchdriver://user:hunter2@host/db"])
def test_unusable_database_url_is_one_line_without_the_password(url, home, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SOCIALPUB_DATABASE_URL", url)
    assert main(["init"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("socialpub: cannot use the database at ") and err.count("\n") == 1
    assert "hunter2" not in err
