"""The composer and the calendar's moves over HTTP (ASGI), the plain-form path a browser without JavaScript takes:
save, check, schedule (held or approved, with the API's authority), queue, edit under publication intent via
move-to-draft, the write-free live check, reschedule with undo, CSRF and escaping. Browser flows:
tests/console/test_browser.py."""

from __future__ import annotations

import re
from html import unescape

import pytest
from sqlmodel import select

from server.console import compose_form as cf
from storage.tables.content import ContentItem
from storage.tables.publishing import Schedule
from tests.console.support import csrf_of, make_user, signed_in
from tests.media.support import image_bytes, upload

pytestmark = pytest.mark.anyio

WHEN = "2026-03-05T10:30"  # brand-local (UTC brand): three days after tests.support.START


async def _world(env):
    ws = await env.workspace("Workspace A")
    brand = await env.brand(ws, "Brand A")
    x = await env.integration(brand, "x")
    ig = await env.integration(brand, "instagram")
    key = await env.key(ws, role="admin")
    await make_user(env, ws, "admin@a.example", "admin")
    await make_user(env, ws, "member@a.example", "member")
    return ws, brand, x, ig, key


async def _form(browser, path: str) -> dict[str, str]:
    page = await browser.get(path)
    assert page.status_code == 200, page.text
    idem = re.search(r'name="idempotency_key" value="([^"]+)"', page.text)
    return {"csrf": csrf_of(page.text), "idempotency_key": idem.group(1) if idem else ""}


def _post(brand_id: str, x_id: str, **extra):
    return {"name": "Spring roast", "integration_ids": [x_id], "copy_mode": "single",
            "caption": "Fresh roast today", "hashtags": "#coffee roast", "scheduled_at": WHEN, **extra}


async def test_save_check_and_schedule_without_javascript(env) -> None:
    _ws, brand, x, _ig, _key = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    compose = f"/console/brands/{brand.id}/compose"
    page = await admin.get(compose)
    # every chosen platform's settings are generated from its settings model (enums as selects)
    assert 'name="set.instagram.post_type"' in page.text and '<option value="GRID_POST"' in page.text
    assert 'name="thread.x"' in page.text  # X takes thread parts
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    form = await _form(admin, compose)
    saved = await admin.post(compose, data={**form, **_post(brand.id, x.id), "action": "check",
                                            "thread.x": "Part two\n---\nPart three"})
    assert saved.status_code == 303, saved.text
    async with env.db.session(write=False) as s:
        item = (await s.exec(select(ContentItem).where(ContentItem.brand_id == brand.id))).one()
    assert item.single_copy["hashtags"] == ["coffee", "roast"]  # typed with and without #
    assert [p["text"] for p in item.settings["x_settings"]["thread_parts"]] == ["Part two", "Part three"]
    shown = await admin.get(saved.headers["location"])
    assert "Ready: nothing blocks it." in shown.text and "Fresh roast today" in shown.text  # preflight, preview
    assert 'value="2026-03-05T10:30"' in shown.text  # the time travels along
    form = await _form(admin, saved.headers["location"])
    scheduled = await admin.post(compose, data={**form, **_post(brand.id, x.id), "content_item_id": item.id,
                                                "action": "approve"})
    assert scheduled.status_code == 303, scheduled.text
    async with env.db.session(write=False) as s:
        row = (await s.exec(select(Schedule).where(Schedule.content_item_id == item.id))).one()
    assert (row.approval_status, row.status, row.integration_ids) == ("approved", "scheduled", [x.id])
    assert scheduled.headers["location"] == f"/console/brands/{brand.id}/schedules/{row.id}?notice=scheduled"


async def test_a_member_holds_for_review_and_cannot_schedule_approved(env) -> None:
    _ws, brand, x, _ig, _key = await _world(env)
    member = await signed_in(env, "member@a.example")
    compose = f"/console/brands/{brand.id}/compose"
    page = await member.get(compose)
    assert "Schedule approved</button>" not in page.text and "publish:execute" in page.text
    form = await _form(member, compose)
    refused = await member.post(compose, data={**form, **_post(brand.id, x.id), "action": "approve"})  # forged
    assert refused.status_code == 403 and "publish:execute" in refused.text
    async with env.db.session(write=False) as s:
        assert (await s.exec(select(Schedule))).all() == []
    held = await member.post(compose, data={**form, **_post(brand.id, x.id), "action": "review"})
    assert held.status_code == 303, held.text
    async with env.db.session(write=False) as s:
        row = (await s.exec(select(Schedule))).one()
    assert (row.approval_status, row.status) == ("pending_review", "action_required")


async def test_the_live_check_writes_nothing_and_shows_blockers_as_they_come_and_go(env) -> None:
    _ws, brand, x, ig, key = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    image = await upload(env, key, brand.id, image_bytes(1080, 1080, "JPEG"), "image/jpeg", "cup.jpg")
    form = await _form(admin, f"/console/brands/{brand.id}/compose")
    check = f"/console/brands/{brand.id}/compose/check"
    body = {**form, "name": "", "integration_ids": [x.id, ig.id], "copy_mode": "per_platform",
            "copy.x.caption": "Short", "copy.instagram.caption": "Longer for Instagram",
            "set.instagram.post_type": "GRID_POST", "scheduled_at": WHEN}
    before = await env.row_counts()
    blocked = await admin.post(check, data=body)
    assert blocked.status_code == 200 and blocked.headers["content-type"] == "application/json"
    html = blocked.json()["html"]
    assert "Blocked" in html and "Instagram" in html and blocked.json()["can_schedule"] is False
    ready = await admin.post(check, data={**body, "media_ids": image["id"]})
    assert ready.json()["can_schedule"] is True, ready.json()["html"]
    assert "Ready: nothing blocks it." in ready.json()["html"] and "Longer for Instagram" in ready.json()["html"]
    too_long = await admin.post(check, data={**body, "media_ids": image["id"], "copy.x.caption": "x" * 300})
    assert too_long.json()["can_schedule"] is False
    assert re.search(r'class="pcount over"[^>]*><span class="n">300</span> / 280', too_long.json()["html"])
    assert await env.row_counts() == before  # write-free: no draft, no schedule, nothing
    assert (await admin.post(check, data={k: v for k, v in body.items() if k != "csrf"})).status_code == 403


async def test_editing_under_publication_intent_moves_to_draft_first(env) -> None:
    _ws, brand, x, _ig, _key = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    compose = f"/console/brands/{brand.id}/compose"
    form = await _form(admin, compose)
    held = await admin.post(compose, data={**form, **_post(brand.id, x.id), "action": "review"})
    sid = held.headers["location"].split("/schedules/")[1].split("?")[0]
    async with env.db.session(write=False) as s:
        item_id = (await s.get(Schedule, sid)).content_item_id
    edit = f"{compose}?content_item_id={item_id}&schedule_id={sid}"
    page = await admin.get(edit)
    assert "Move to draft and edit" in page.text
    found = await admin.get(f"{compose}?content_item_id={item_id}")  # not opened from it: found on the calendar
    assert f'/schedules/{sid}/edit"' in found.text
    form = await _form(admin, edit)
    refused = await admin.post(compose, data={**form, **_post(brand.id, x.id, caption="Changed"),
                                              "content_item_id": item_id, "schedule_id": sid, "action": "save"})
    assert refused.status_code == 409 and "Move to draft and edit" in refused.text  # the spec refuses; the way out
    moved = await admin.post(f"/console/brands/{brand.id}/schedules/{sid}/edit",
                             data={"csrf": form["csrf"], "idempotency_key": "console-move-1"})
    assert moved.status_code == 303 and "at=2026-03-05T10%3A30&notice=moved" in moved.headers["location"]
    async with env.db.session(write=False) as s:
        assert await s.get(Schedule, sid) is None
    form = await _form(admin, moved.headers["location"])
    again = await admin.post(compose, data={**form, **_post(brand.id, x.id, caption="Changed"),
                                            "content_item_id": item_id, "action": "review"})
    assert again.status_code == 303, again.text
    async with env.db.session(write=False) as s:
        assert (await s.get(ContentItem, item_id)).single_copy["caption"] == "Changed"


async def test_add_to_a_queue(env) -> None:
    _ws, brand, x, _ig, key = await _world(env)
    resp = await env.rest.post(f"/v1/brands/{brand.id}/queues", headers=env.auth(key), json={
        "name": "Weekday mornings", "mode": "times_of_day", "times_of_day": ["09:00"], "integration_ids": [x.id]})
    assert resp.status_code in (200, 201), resp.text
    queue_id = resp.json()["data"]["id"]
    admin = await signed_in(env, "admin@a.example")
    compose = f"/console/brands/{brand.id}/compose"
    form = await _form(admin, compose)
    queued = await admin.post(compose, data={**form, **_post(brand.id, x.id), "action": "queue", "queue_id": queue_id})
    assert queued.status_code == 303, queued.text
    queue = (await env.rest.get(f"/v1/brands/{brand.id}/queues/{queue_id}", headers=env.auth(key))).json()["data"]
    assert len(queue["content_item_ids"]) == 1


async def test_move_on_the_calendar_and_undo(env) -> None:
    _ws, brand, x, _ig, _key = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    compose = f"/console/brands/{brand.id}/compose"
    form = await _form(admin, compose)
    done = await admin.post(compose, data={**form, **_post(brand.id, x.id), "action": "approve"})
    sid = done.headers["location"].split("/schedules/")[1].split("?")[0]
    cal = f"/console/brands/{brand.id}/calendar?day=2026-03-05"
    week = await admin.get(cal)
    entry_match = re.search(rf'<a href="[^"]*/schedules/{sid}"[^>]*>.*?</a>', week.text, re.S)
    assert entry_match is not None
    entry = entry_match.group(0)
    assert 'draggable="true"' in entry and "10:30" in entry and "Spring roast" in entry and "st-scheduled" in entry
    assert 'title="X"' in entry  # the platform icon
    moved = await admin.post(f"/console/brands/{brand.id}/schedules/{sid}/reschedule", data={
        "csrf": csrf_of(week.text), "day": "2026-03-06", "view": "week", "back_day": "2026-03-05",
        "idempotency_key": "console-drag-1"})
    assert moved.status_code == 303, moved.text
    async with env.db.session(write=False) as s:
        assert (await s.get(Schedule, sid)).scheduled_at.isoformat().startswith("2026-03-06T10:30")
    after = await admin.get(moved.headers["location"])
    assert "Schedule moved." in after.text and "It was at 2026-03-05 10:30" in after.text
    undo = re.search(r'<form method="post" action="([^"]+)" class="notice undo">(.*?)</form>', after.text, re.S)
    assert undo is not None
    fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', undo.group(2)))
    back = await admin.post(unescape(undo.group(1)), data=fields)
    assert back.status_code == 303 and "notice=undone" in back.headers["location"]
    async with env.db.session(write=False) as s:
        assert (await s.get(Schedule, sid)).scheduled_at.isoformat().startswith("2026-03-05T10:30")
    listed = await admin.get(f"/console/brands/{brand.id}/calendar?view=list&day=2026-03-01")
    assert f'id="at-{sid}"' in listed.text and 'value="2026-03-05T10:30"' in listed.text  # the plain move form
    # a member sees no drag and is refused the move (reschedule needs publish:execute)
    member = await signed_in(env, "member@a.example")
    page = await member.get(cal)
    assert 'draggable="true"' not in page.text
    refused = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/reschedule", data={
        "csrf": csrf_of(page.text), "day": "2026-03-07", "idempotency_key": "console-drag-2"})
    assert refused.status_code == 403 and "publish:execute" in refused.text
    no_token = await admin.post(f"/console/brands/{brand.id}/schedules/{sid}/reschedule", data={"day": "2026-03-07"})
    assert no_token.status_code == 403
    async with env.db.session(write=False) as s:
        assert (await s.get(Schedule, sid)).scheduled_at.isoformat().startswith("2026-03-05T10:30")


async def test_markup_in_names_and_captions_is_escaped(env) -> None:
    _ws, brand, x, _ig, _key = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    compose = f"/console/brands/{brand.id}/compose"
    form = await _form(admin, compose)
    evil = '<script>alert(1)</script>'
    done = await admin.post(compose, data={**form, **_post(brand.id, x.id, name=f"Name {evil}",
                                                           caption=f'<img src=x onerror="alert(2)"> {evil}'),
                                           "action": "review"})
    assert done.status_code == 303, done.text
    async with env.db.session(write=False) as s:
        item_id = (await s.exec(select(ContentItem))).one().id
    pages = [await admin.get(f"{compose}?content_item_id={item_id}"),
             await admin.get(f"/console/brands/{brand.id}/calendar?day=2026-03-05"),
             await admin.get(f"/console/brands/{brand.id}/calendar?view=list&day=2026-03-01")]
    check = await admin.post(f"{compose}/check", data={**form, **_post(brand.id, x.id, caption=evil)})
    for html in [p.text for p in pages] + [check.json()["html"]]:
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_form_values_become_the_api_body_bounded() -> None:
    platforms = {"i1": "x", "i2": "tiktok", "i3": "threads"}
    body = cf.body_of({
        "name": "n" * 10_000, "integration_ids": ["i2", "i1", "i3", "nope"], "copy_mode": "per_platform",
        "copy.x.caption": "hi", "copy.x.hashtags": "#a, b #a", "set.tiktok.privacy_level": "SELF_ONLY",
        "set.tiktok.agreed_to_terms": "1", "set.tiktok.commercial_types": ["YOUR_BRAND", "bogus"],
        "set.threads.follow_up_reply": "Thanks!", "thread.threads": "two\n---\n\n---\nthree",
        "media_ids": [f"m{i}" for i in range(100)]}, platforms)
    assert body["intended_integration_ids"] == ["i1", "i2", "i3"]  # canonical order; unknown IDs dropped
    assert len(body["name"]) == cf.NAME_MAX + 1  # bounded, and still refused by the API as too long
    assert body["platform_copy"]["x"] == {"caption": "hi", "hashtags": ["a", "b"], "title": None}
    assert body["tiktok_settings"]["privacy_level"] == "SELF_ONLY" and body["tiktok_settings"]["agreed_to_terms"]
    assert body["tiktok_settings"]["commercial_types"] == ["YOUR_BRAND"]
    assert body["threads_settings"]["follow_up_reply"] == {"text": "Thanks!"}
    assert body["threads_settings"]["thread_parts"] == [{"text": "two"}, {"text": "three"}]
    assert len(body["x_settings"]["media_ids"]) == cf.MAX_MEDIA
    assert body["instagram_settings"] is None  # not chosen: cleared on an edit
    back = cf.values_of_body(body)
    assert back.threads["threads"] == "two\n---\nthree" and back.copy["x"]["hashtags"] == "a b"
