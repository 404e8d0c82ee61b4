"""`socialpub autopilot plan|schedule-item`: an operator makes a plan, then records a generated item's Schedule
(always held as pending_review), end to end through the CLI and the API."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from sqlmodel import select

from schemas.ids import new_id
from schemas.settings import Settings
from server.app import build_app
from server.cli import main
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification
from storage.tables.publishing import Schedule
from tools.runtime import Runtime


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    monkeypatch.setenv("SOCIALPUB_RATE_LIMIT", "0")
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def seed_content(brand_id: str, user_id: str) -> tuple[str, str]:
    """A content item of the brand (as the generation pipeline would make) and one of its integrations."""
    async def go() -> tuple[str, str]:
        rt = Runtime.from_settings(Settings.from_env(worker_enabled=False))
        try:
            async with rt.db.session(write=True) as s:
                integration = (await s.exec(select(Integration).where(Integration.brand_id == brand_id)
                                            .order_by(Integration.id))).first()
                assert integration is not None
                row = ContentItem(id=new_id("ci"), workspace_id=integration.workspace_id, brand_id=brand_id,
                                  created_by=user_id, name="From Autopilot",
                                  single_copy={"caption": "Hi", "hashtags": [], "title": None},
                                  created_at=rt.clock.now(), updated_at=rt.clock.now())
                s.add(row)
            return row.id, integration.id
        finally:
            await rt.close()

    return anyio.run(go)


def api_get(secret: str, path: str, **params: str) -> httpx.Response:
    async def go() -> httpx.Response:
        rt = Runtime.from_settings(Settings.from_env(worker_enabled=False))
        try:
            transport = httpx.ASGITransport(app=build_app(rt, run_worker=False))
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
                return await client.get(path, params=params, headers={"Authorization": f"Bearer {secret}"})
        finally:
            await rt.close()

    return anyio.run(go)


def db_rows(model, *where) -> list:
    async def go() -> list:
        rt = Runtime.from_settings(Settings.from_env(worker_enabled=False))
        try:
            async with rt.db.session(write=False) as s:
                return list((await s.exec(select(model).where(*where))).all())
        finally:
            await rt.close()

    return anyio.run(go)


def test_plan_then_held_schedule(home, capsys) -> None:
    demo = run_json(capsys, "init", "--demo")
    brand_id, secret, user_id = demo["brands"][0]["id"], demo["api_key"]["secret"], demo["api_key"]["user_id"]

    made = run_json(capsys, "autopilot", "plan", brand_id, "--weeks", "2", "--items", "2", "--auto-approval")
    assert [w["week_number"] for w in made["weeks"]] == [1, 2]
    assert all(len(w["items"]) == 2 for w in made["weeks"])
    more = run_json(capsys, "autopilot", "plan", brand_id, "--weeks", "1")
    assert more["plan_id"] == made["plan_id"] and [w["week_number"] for w in more["weeks"]] == [3]

    plan = api_get(secret, f"/v1/brands/{brand_id}/autopilot/plan").json()["data"]
    assert plan["plan"]["id"] == made["plan_id"] and plan["plan"]["weeks"] == [1, 2, 3]
    assert plan["plan"]["auto_approval"] is True

    item_id = made["weeks"][0]["items"][0]["id"]
    content_id, integration_id = seed_content(brand_id, user_id)
    held = run_json(capsys, "autopilot", "schedule-item", item_id, "--content-item", content_id,
                    "--at", "2026-12-01T10:00:00Z", "--integration", integration_id)
    # auto-approval is on, yet the Schedule is held
    assert (held["approval_status"], held["status"]) == ("pending_review", "action_required")
    schedule = db_rows(Schedule, Schedule.id == held["schedule_id"])[0]
    assert (schedule.source, schedule.autopilot_item_id, schedule.approved_by_key) == ("autopilot", item_id, None)
    assert db_rows(Notification, Notification.category == "planner_review_reminders")

    week = api_get(secret, f"/v1/brands/{brand_id}/autopilot/weeks/1", plan_id=made["plan_id"]).json()["data"]
    first = week["items"][0]
    assert (first["id"], first["content_item_id"], first["schedule_id"]) == (item_id, content_id,
                                                                             held["schedule_id"])

    assert main(["autopilot", "schedule-item", item_id, "--content-item", content_id, "--at",
                 "2026-12-01T10:00:00Z", "--integration", integration_id]) == 2
    assert "already has a Schedule" in capsys.readouterr().err
    assert main(["autopilot", "plan", "brd_nope"]) == 2
    assert "no brand" in capsys.readouterr().err
    assert main(["autopilot", "plan", brand_id, "--weeks", "0"]) == 2
    assert "weeks must be" in capsys.readouterr().err
    assert main(["autopilot", "schedule-item", item_id, "--content-item", content_id, "--at",
                 "2026-12-01T10:00:00", "--integration", integration_id]) == 2
    assert "--at" in capsys.readouterr().err
