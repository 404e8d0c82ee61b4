"""The composer and the calendar in a real browser (Debian's Chromium via Playwright, against `socialpub serve`;
fixtures from tests/console/test_browser.py): compose with an uploaded image for X and Instagram with copy per
platform, watch a preflight blocker appear and clear, schedule, drag to another day, undo; and the plain-form
path with JavaScript off. `UPDATE_SCREENSHOTS=1` writes the composer and calendar screenshots to docs/console/.
"""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

from tests.console import test_browser as tb  # skips this module too when Chromium is absent

pytestmark = pytest.mark.slow

from playwright.sync_api import Page, expect  # noqa: E402  (after the skip)

# test_browser's fixtures, used here as its own: a served app and Chromium for this module
browser, server, page = tb.browser, tb.server, tb.page
shot, sign_in = tb.shot, tb.sign_in

TZ = ZoneInfo("America/New_York")  # the demo brand's zone


def _jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (1080, 1080), (200, 120, 60)).save(out, "JPEG")
    return out.getvalue()


def _tomorrow_at_ten() -> datetime:
    return (datetime.now(TZ) + timedelta(days=2)).replace(hour=10, minute=0, second=0, microsecond=0)


def _account(page: Page, platform: str) -> Any:
    return page.locator(f"#targets input[data-platform={platform}]").first


def test_compose_upload_check_schedule_drag_and_undo(page: Page, server: tb.Server) -> None:
    sign_in(page, server, "admin@example.com")
    page.goto(f"{server.base}/console/brands/{server.brand}")
    page.get_by_role("navigation", name="Brand").get_by_role("link", name="New post").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("New post")
    page.get_by_label("Name", exact=True).fill("Spring <b>roast</b> launch")
    _account(page, "x").check()
    _account(page, "instagram").check()
    page.get_by_label("Copy per platform").check()
    page.get_by_label("X caption").fill("New spring roast: bright, floral, ready Monday.")
    page.get_by_label("Instagram caption").fill("Our spring roast is here. Bright, floral and sweet.")
    page.locator("select[name='set.instagram.post_type']").select_option("GRID_POST")
    live = page.locator("#live")
    # Instagram needs media: the live check (debounced, write-free) says so before anything is saved
    expect(live.locator(".blockers")).to_contain_text("Instagram")
    page.set_input_files("#upload", files=[{"name": "spring.jpg", "mimeType": "image/jpeg", "buffer": _jpeg()}])
    expect(page.locator("#uploads")).to_contain_text("ready", timeout=30_000)
    expect(live.get_by_text("Ready: nothing blocks it.")).to_be_visible()
    # a blocker appears as the X copy grows past 280, and clears when it is cut back
    page.get_by_label("X caption").fill("Too long " * 40)
    expect(live.locator(".blockers")).to_contain_text("X")
    page.get_by_label("X caption").fill("New spring roast: bright, floral, ready Monday.")
    expect(live.get_by_text("Ready: nothing blocks it.")).to_be_visible()
    expect(live.locator(".pcard")).to_have_count(2)
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "compose")
    when = _tomorrow_at_ten()
    page.get_by_label("Publish at").fill(when.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Schedule approved").click()
    expect(page.get_by_text("Scheduled: it publishes at its time.")).to_be_visible()
    sid = page.url.split("/schedules/")[1].split("?")[0]
    schedule = server.api.get(f"/brands/{server.brand}/schedules/{sid}").json()["data"]
    assert (schedule["approval_status"], len(schedule["integration_ids"])) == ("approved", 2)

    page.goto(f"{server.base}/console/brands/{server.brand}/calendar?day={when.date().isoformat()}")
    entry = page.locator(f"a[data-schedule='{sid}']")
    expect(entry).to_contain_text("10:00")
    expect(entry).to_contain_text("Spring <b>roast</b> launch")  # as text: the markup is escaped
    expect(entry.locator(".picon")).to_have_count(2)
    target_day = when.date() + timedelta(days=1 if when.weekday() < 6 else -1)  # stay in the week shown
    entry.drag_to(page.locator(f"td[data-day='{target_day.isoformat()}']"))
    expect(page.get_by_text("Schedule moved.")).to_be_visible()
    expect(page.locator(f"td[data-day='{target_day.isoformat()}'] a[data-schedule='{sid}']")).to_be_visible()
    moved = server.api.get(f"/brands/{server.brand}/schedules/{sid}").json()["data"]["scheduled_at"]
    assert datetime.fromisoformat(moved.replace("Z", "+00:00")).astimezone(TZ).date() == target_day
    shot(page, "calendar-drag")
    page.get_by_role("button", name="Undo").click()
    expect(page.get_by_text("Move undone")).to_be_visible()
    expect(page.locator(f"td[data-day='{when.date().isoformat()}'] a[data-schedule='{sid}']")).to_be_visible()
    page.get_by_role("link", name="List").click()
    expect(page.get_by_role("row").filter(has_text="Spring <b>roast</b> launch")).to_have_count(1)
    shot(page, "calendar-list")


def test_compose_and_schedule_with_javascript_off(browser: Any, server: tb.Server) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 760}, java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, server, "member@example.com")
        page.goto(f"{server.base}/console/brands/{server.brand}/compose")
        expect(page.locator("#upload")).to_be_hidden()  # uploads need the script; the library works without
        page.get_by_label("Name", exact=True).fill("Plain form post")
        _account(page, "x").check()
        page.get_by_label("Caption", exact=True).fill("Cupping at noon, all welcome.")
        page.get_by_label("Publish at").fill(_tomorrow_at_ten().strftime("%Y-%m-%dT%H:%M"))
        expect(page.get_by_role("button", name="Schedule approved")).to_have_count(0)  # a member: no authority
        page.get_by_role("button", name="Check").click()
        expect(page.get_by_text("Draft saved.")).to_be_visible()
        expect(page.locator("#live").get_by_text("Ready: nothing blocks it")).to_be_visible()
        page.get_by_role("button", name="Schedule for review").click()
        expect(page.locator(".notice")).to_contain_text("held for review")
        sid = page.url.split("/schedules/")[1].split("?")[0]
        schedule = server.api.get(f"/brands/{server.brand}/schedules/{sid}").json()["data"]
        assert (schedule["approval_status"], schedule["status"]) == ("pending_review", "action_required")
    finally:
        context.close()
