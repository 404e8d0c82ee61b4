"""`socialpub media-folders` and the demo's media folders."""

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


def test_media_folders(home, capsys) -> None:
    demo = run_json(capsys, "init", "--demo")
    brand_id = demo["brands"][0]["id"]
    listed = run_json(capsys, "media-folders", "list", "--brand", brand_id)
    assert [f["name"] for f in listed["folders"]] == ["Brand assets"]  # seeded by the demo
    made = run_json(capsys, "media-folders", "create", "--brand", brand_id, "--name", "  Launch  ")
    assert made["name"] == "Launch" and made["id"].startswith("mfd_") and made["brand_id"] == brand_id
    listed = run_json(capsys, "media-folders", "list", "--brand", brand_id)
    assert [f["name"] for f in listed["folders"]] == ["Brand assets", "Launch"]
    assert main(["media-folders", "create", "--brand", "brd_nope", "--name", "x"]) == 2
    assert "no brand" in capsys.readouterr().err
    assert main(["media-folders", "create", "--brand", brand_id, "--name", " "]) == 2
    assert "folder name" in capsys.readouterr().err
