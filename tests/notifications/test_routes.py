"""Notifications: the producer API, the list route (visibility, paging, filter), settings GET/PATCH/DELETE,
and the email outbox following effective preferences."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from schemas.notifications import CATEGORIES
from schemas.scopes import ROLE_SCOPES
from server.cli import main
from storage.tables.accounts import User
from storage.tables.notifications import EmailOutbox, Notification
from tools.notifications import notify
from tools.operator import actions as operator

pytestmark = pytest.mark.anyio

ALL_ON = dict.fromkeys(CATEGORIES, True)


def user_of(env, secret: str) -> str:
    return env.key_row(secret).user_id


async def produce(env, brand, type_: str = "post_published", category: str = "post_published", **kw):
    async with env.db.session(write=True) as s:
        return await notify.notify(s, env.clock.now(), brand, type_, category, kw.pop("title", "Post published"),
                                   kw.pop("message", "Spring launch is live on Instagram."), **kw)


async def outbox(env, **where) -> list[EmailOutbox]:
    async with env.db.session(write=False) as s:
        query = select(EmailOutbox)
        for k, v in where.items():
            query = query.where(getattr(EmailOutbox, k) == v)
        return list((await s.exec(query.order_by(EmailOutbox.id))).all())


async def list_(env, secret: str, brand_id: str, query: str = ""):
    return await env.rest.get(f"/v1/brands/{brand_id}/notifications{query}", headers=env.auth(secret))


# -- list ----------------------------------------------------------------------------------------------------


async def test_list_shape_visibility_and_no_read_marking(world) -> None:
    env = world.env
    me = world.full_key
    other = await env.key(world.ws, name="colleague")
    await produce(env, world.brand_a, title="Post <b>published</b>")
    await produce(env, world.brand_b, "post_failed", "post_failed", title="B failed")
    # a notification addressed only to the colleague
    await produce(env, world.brand_a, "credits_low", "credits_low", title="Only colleague",
                  audience=[user_of(env, other)])

    before = await env.row_counts()
    resp = await list_(env, me, world.brand_a.id)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["has_more"] is False and data["next_cursor"] is None
    [item] = data["items"]
    assert set(item) == {"id", "brand_id", "type", "category", "title", "message", "is_read", "read_at",
                         "created_at"}
    assert item["brand_id"] == world.brand_a.id and item["type"] == "post_published"
    assert item["category"] == "post_published" and item["title"] == "Post <b>published</b>"
    assert item["is_read"] is False and item["read_at"] is None and item["created_at"] == "2026-03-02T09:00:00.000Z"
    # reading is write-free and never marks read
    assert await env.row_counts() == before
    again = (await list_(env, me, world.brand_a.id)).json()["data"]["items"]
    assert again[0]["is_read"] is False

    # brand B's notification is only on brand B's route
    b_items = (await list_(env, me, world.brand_b.id)).json()["data"]["items"]
    assert [i["title"] for i in b_items] == ["B failed"]
    # the colleague sees their own copy plus the one addressed to them, never mine
    theirs = (await list_(env, other, world.brand_a.id)).json()["data"]["items"]
    assert [i["title"] for i in theirs] == ["Only colleague", "Post <b>published</b>"]
    assert not {i["id"] for i in theirs} & {item["id"]}
    # a key restricted to brand B cannot read brand A's notifications at all
    assert (await list_(env, world.key_b_only, world.brand_a.id)).status_code == 404

    # same body through direct dispatch (MCP's path)
    direct = await env.call("list_notifications", me, brand_id=world.brand_a.id)
    assert direct.body["data"] == data


async def test_paging_filter_and_cursor_errors(world) -> None:
    env = world.env
    me = world.full_key
    other = await env.key(world.ws, name="other")
    for i in range(5):
        env.clock.advance(minutes=1)
        await produce(env, world.brand_a, title=f"n{i}")
    page1 = (await list_(env, me, world.brand_a.id, "?limit=2")).json()["data"]
    assert [i["title"] for i in page1["items"]] == ["n4", "n3"] and page1["has_more"] is True
    assert page1["next_cursor"] == page1["items"][-1]["id"]
    page2 = (await list_(env, me, world.brand_a.id, f"?limit=2&cursor={page1['next_cursor']}")).json()["data"]
    assert [i["title"] for i in page2["items"]] == ["n2", "n1"]
    page3 = (await list_(env, me, world.brand_a.id, f"?limit=2&cursor={page2['next_cursor']}")).json()["data"]
    assert [i["title"] for i in page3["items"]] == ["n0"] and page3["has_more"] is False
    assert page3["next_cursor"] is None
    default = (await list_(env, me, world.brand_a.id)).json()["data"]
    assert len(default["items"]) == 5

    # unread filter: mark two read (the dashboard's action), then filter
    async with env.db.session(write=True) as s:
        ids = [page1["items"][0]["id"], page2["items"][0]["id"]]
        assert await notify.mark_read(s, env.clock.now(), user_of(env, me), ids=ids) == 2
    unread = (await list_(env, me, world.brand_a.id, "?filter=unread")).json()["data"]["items"]
    assert [i["title"] for i in unread] == ["n3", "n1", "n0"]
    everything = (await list_(env, me, world.brand_a.id, "?filter=all")).json()["data"]["items"]
    read = [i for i in everything if i["is_read"]]
    assert [i["title"] for i in read] == ["n4", "n2"] and all(i["read_at"] for i in read)
    # a cursor from an item that is now read still pages the unread list
    unread2 = (await list_(env, me, world.brand_a.id, f"?filter=unread&limit=1&cursor={page1['items'][0]['id']}"))
    assert [i["title"] for i in unread2.json()["data"]["items"]] == ["n3"]

    # limits and bad values
    for query, path in (("?limit=0", "$.limit"), ("?limit=51", "$.limit"), ("?filter=read", "$.filter"),
                        ("?limit=abc", "$.limit")):
        resp = await list_(env, me, world.brand_a.id, query)
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == "INVALID_QUERY", query
        assert err["issues"][0]["field_path"] == path
    assert (await list_(env, me, world.brand_a.id, "?limit=50")).status_code == 200
    # cursors that are garbage, of another user, or of another brand
    theirs = (await list_(env, other, world.brand_a.id)).json()["data"]["items"][0]["id"]
    await produce(env, world.brand_b)
    b_id = (await list_(env, me, world.brand_b.id)).json()["data"]["items"][0]["id"]
    for cursor in ("nope", theirs, b_id, "ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV"):
        resp = await list_(env, me, world.brand_a.id, f"?cursor={cursor}")
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == "INVALID_CURSOR", cursor
        assert err["issues"][0]["field_path"] == "$.cursor"


async def test_scopes_are_enforced(world) -> None:
    env = world.env
    reader = await env.key(world.ws, scopes=["notifications:read"], name="reader")
    assert (await list_(env, reader, world.brand_a.id)).status_code == 200
    resp = await env.rest.patch(f"/v1/brands/{world.brand_a.id}/notification-settings",
                                json={"email_notifications": {"post_failed": False}}, headers=env.auth(reader))
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["notifications:write"]
    writer = await env.key(world.ws, scopes=["notifications:write"], name="writer")
    resp = await list_(env, writer, world.brand_a.id)
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["notifications:read"]


# -- settings ------------------------------------------------------------------------------------------------


def settings_url(brand_id: str) -> str:
    return f"/v1/brands/{brand_id}/notification-settings"


async def test_settings_get_patch_delete(world) -> None:
    env = world.env
    me = world.full_key
    url = settings_url(world.brand_a.id)
    before = await env.row_counts()
    resp = await env.rest.get(url, headers=env.auth(me))
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data == {
        "brand": {"id": world.brand_a.id, "name": "Brand A", "workspace_id": world.ws.id,
                  "workspace_name": world.ws.name},
        "account_settings": ALL_ON, "effective_settings": ALL_ON, "override_record": None,
        "override_settings": None, "is_inherited": True,
    }
    assert await env.row_counts() == before  # write-free

    resp = await env.rest.patch(url, json={"email_notifications": {"post_published": False}}, headers=env.auth(me))
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["is_inherited"] is False
    assert data["effective_settings"] == {**ALL_ON, "post_published": False}
    assert data["override_settings"] == data["effective_settings"]
    assert data["account_settings"] == ALL_ON
    record = data["override_record"]
    assert record["is_active"] is True and record["user_id"] == user_of(env, me)
    assert record["workspace_id"] == world.ws.id and record["brand_id"] == world.brand_a.id
    assert record["email_notifications"] == data["effective_settings"]
    assert record["created_at"] == record["updated_at"] == "2026-03-02T09:00:00.000Z"

    # a second PATCH changes only what it sends
    env.clock.advance(minutes=5)
    data = (await env.rest.patch(url, json={"email_notifications": {"credits_low": False, "post_failed": True}},
                                 headers=env.auth(me))).json()["data"]
    assert data["effective_settings"] == {**ALL_ON, "post_published": False, "credits_low": False}
    assert data["override_record"]["id"] == record["id"]
    assert data["override_record"]["updated_at"] == "2026-03-02T09:05:00.000Z"
    # GET shows the same state
    assert (await env.rest.get(url, headers=env.auth(me))).json()["data"] == data
    # other brands and other users are untouched
    assert (await env.rest.get(settings_url(world.brand_b.id), headers=env.auth(me))).json()["data"]["is_inherited"]
    other = await env.key(world.ws, name="other")
    assert (await env.rest.get(url, headers=env.auth(other))).json()["data"]["override_record"] is None

    # DELETE disables the override at once and returns the inherited settings; the record is kept
    env.clock.advance(minutes=5)
    resp = await env.rest.delete(url, headers=env.auth(me))
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["is_inherited"] is True and data["effective_settings"] == ALL_ON
    assert data["override_settings"] is None
    assert data["override_record"]["is_active"] is False and data["override_record"]["id"] == record["id"]
    # reverting again changes nothing
    before = await env.row_counts()
    assert (await env.rest.delete(url, headers=env.auth(me))).json()["data"] == data
    assert await env.row_counts() == before

    # a PATCH after a revert starts again from the account defaults (old override values do not come back)
    data = (await env.rest.patch(url, json={"email_notifications": {"post_failed": False}},
                                 headers=env.auth(me))).json()["data"]
    assert data["effective_settings"] == {**ALL_ON, "post_failed": False}
    assert data["override_record"]["is_active"] is True and data["override_record"]["id"] == record["id"]

    # parity with direct dispatch
    direct = await env.call("get_notification_settings", me, brand_id=world.brand_a.id)
    assert direct.body["data"] == data


async def test_settings_refusals_write_nothing(world) -> None:
    env = world.env
    url = settings_url(world.brand_a.id)
    before = await env.row_counts()
    cases = [
        ({}, "$.email_notifications", "REQUIRED"),
        ({"email_notifications": {}}, "$.email_notifications", "INVALID_VALUE"),
        ({"email_notifications": {"post_failed": "no"}}, "$.email_notifications.post_failed", "INVALID_VALUE"),
        ({"email_notifications": {"post_failed": None}}, "$.email_notifications.post_failed", "INVALID_VALUE"),
        ({"email_notifications": {"newsletter": True}}, "$.email_notifications.newsletter", "UNKNOWN_FIELD"),
        ({"email_notifications": {"post_failed": False}, "extra": 1}, "$.extra", "UNKNOWN_FIELD"),
        ({"email_notifications": [True]}, "$.email_notifications", "INVALID_VALUE"),
    ]
    for body, path, code in cases:
        resp = await env.rest.patch(url, json=body, headers=env.auth(world.full_key))
        err = resp.json()["error"]
        assert resp.status_code == 400 and err["code"] == "MALFORMED_REQUEST", body
        assert any(i["field_path"] == path and i["code"] == code for i in err["issues"]), (body, err["issues"])
    # an idempotency key is not accepted on these routes
    resp = await env.rest.patch(url, json={"email_notifications": {"post_failed": False}},
                                headers=env.auth(world.full_key, Idempotency_Key="k1"))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_HEADER"
    assert await env.row_counts() == before


# -- outbox --------------------------------------------------------------------------------------------------


async def test_outbox_follows_effective_preferences(world) -> None:
    env = world.env
    me, colleague = world.full_key, await env.key(world.ws, name="colleague")
    mine, theirs = user_of(env, me), user_of(env, colleague)
    async with env.db.session(write=True) as s:
        (await s.get(User, theirs)).email = "colleague@example.com"
        # my account defaults: credits_low off
        await notify.set_account_defaults(s, env.clock.now(), await s.get(User, mine), {"credits_low": False})

    # my brand A override: post_failed off
    await env.rest.patch(settings_url(world.brand_a.id), json={"email_notifications": {"post_failed": False}},
                         headers=env.auth(me))
    result = await produce(env, world.brand_a, "post_failed", "post_failed", title="Failed")
    rows = await outbox(env, category="post_failed")
    assert {r.user_id for r in rows} == {theirs, user_of(env, world.key_b_only)}
    assert result.notifications == 3 and result.emails == 2
    theirs_row = next(r for r in rows if r.user_id == theirs)
    assert theirs_row.to_email == "colleague@example.com" and theirs_row.status == "pending"
    assert theirs_row.subject == "[Brand A] Failed" and theirs_row.brand_id == world.brand_a.id
    async with env.db.session(write=False) as s:
        note = await s.get(Notification, theirs_row.notification_id)
        assert note.user_id == theirs and note.category == "post_failed"

    # the override is per brand: on brand B my account default (on) applies
    await produce(env, world.brand_b, "post_failed", "post_failed")
    assert mine in {r.user_id for r in await outbox(env, category="post_failed", brand_id=world.brand_b.id)}

    # account default off for credits_low; a brand override can turn it back on for one brand
    await produce(env, world.brand_a, "credits_low", "credits_low")
    assert mine not in {r.user_id for r in await outbox(env, category="credits_low")}
    await env.rest.patch(settings_url(world.brand_a.id), json={"email_notifications": {"credits_low": True}},
                         headers=env.auth(me))
    await produce(env, world.brand_a, "credits_low", "credits_low")
    assert len([r for r in await outbox(env, category="credits_low") if r.user_id == mine]) == 1

    # DELETE reverts to the defaults: post_failed on again, credits_low off again
    await env.rest.delete(settings_url(world.brand_a.id), headers=env.auth(me))
    await produce(env, world.brand_a, "credits_low", "credits_low")
    await produce(env, world.brand_a, "post_failed", "post_failed")
    assert len([r for r in await outbox(env, category="credits_low") if r.user_id == mine]) == 1
    assert len([r for r in await outbox(env, category="post_failed", brand_id=world.brand_a.id)
                if r.user_id == mine]) == 1

    # in-app notifications are created regardless of email preferences
    items = (await list_(env, me, world.brand_a.id)).json()["data"]["items"]
    assert [i["category"] for i in items].count("credits_low") == 3


async def test_producer_rules_audience_and_dedupe(world) -> None:
    env = world.env
    # The world's two admins: full_key's owner, and key_b_only's (every scope needs an admin owner).
    admins = sorted([user_of(env, world.full_key), user_of(env, world.key_b_only)])
    member = await env.key(world.ws, scopes=ROLE_SCOPES["member"], name="member", role="member")
    res = await produce(env, world.brand_a.id, "planner_needs_you", "planner_action_required", audience="admins")
    assert res.notifications == 2
    async with env.db.session(write=False) as s:
        rows = (await s.exec(select(Notification).where(Notification.type == "planner_needs_you"))).all()
    assert sorted(r.user_id for r in rows) == admins and user_of(env, member) not in admins
    # unknown users and users of other workspaces are never notified
    other_ws = await env.workspace()
    stranger = await env.key(other_ws, name="stranger")
    assert (await produce(env, world.brand_a, audience=[user_of(env, stranger)])).notifications == 0

    with pytest.raises(ValueError, match="category"):
        await produce(env, world.brand_a, "x_happened", "newsletter")
    with pytest.raises(ValueError, match="snake_case"):
        await produce(env, world.brand_a, "Bad Type", "post_failed")
    # titles and messages are bounded
    await produce(env, world.brand_a, "long_one", "post_failed", title="t" * 500, message="m" * 5000)
    item = (await list_(env, world.full_key, world.brand_a.id)).json()["data"]["items"][0]
    assert len(item["title"]) == 200 and len(item["message"]) == 2000 and item["title"].endswith("…")


async def test_integration_turning_expired_notifies_once_a_day(world) -> None:
    env = world.env
    tiktok = world.integrations["tiktok"]
    async with env.db.session(write=True) as s:
        await operator.set_integration_status(s, env.clock.now(), tiktok.id, "expired")
    items = (await list_(env, world.full_key, world.brand_a.id)).json()["data"]["items"]
    [item] = items
    assert item["type"] == "integration_needs_refresh" and item["category"] == "integration_refresh"
    assert "TikTok" in item["title"] and "reconnect" in item["message"].lower()
    assert "token" not in json.dumps(item).lower()
    # expired -> needs_reauth is not a new problem; connected -> expired again within a day is deduplicated
    async with env.db.session(write=True) as s:
        await operator.set_integration_status(s, env.clock.now(), tiktok.id, "needs_reauth")
        await operator.set_integration_status(s, env.clock.now(), tiktok.id, "connected")
        await operator.set_integration_status(s, env.clock.now(), tiktok.id, "expired")
    assert len((await list_(env, world.full_key, world.brand_a.id)).json()["data"]["items"]) == 1
    env.clock.advance(hours=25)
    async with env.db.session(write=True) as s:
        await operator.set_integration_status(s, env.clock.now(), tiktok.id, "connected")
        await operator.set_integration_status(s, env.clock.now(), tiktok.id, "needs_reauth")
    assert len((await list_(env, world.full_key, world.brand_a.id)).json()["data"]["items"]) == 2
    # the brand B key's owner sees nothing about brand A on brand B
    assert (await list_(env, world.key_b_only, world.brand_b.id)).json()["data"]["items"] == []
    with pytest.raises(operator.OperatorError):
        async with env.db.session(write=True) as s:
            await operator.set_integration_status(s, env.clock.now(), tiktok.id, "broken")


# -- CLI -------------------------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    return tmp_path


def run_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_cli_status_defaults_and_mark_read(home, capsys) -> None:
    demo = run_json(capsys, "init", "--demo")
    brand_id, user_id = demo["brands"][0]["id"], demo["api_key"]["user_id"]
    acct = run_json(capsys, "integrations", "connect", "--brand", brand_id, "--platform", "x", "--sandbox")
    out = run_json(capsys, "integrations", "set-status", "--integration", acct["id"], "--status", "expired")
    assert out["status"] == "expired"
    defaults = run_json(capsys, "notifications", "defaults", "--user", user_id, "--off", "post_published,credits_low")
    assert defaults["email_notifications"] == {**ALL_ON, "post_published": False, "credits_low": False}
    assert run_json(capsys, "notifications", "mark-read", "--user", user_id, "--brand", brand_id)["marked_read"] == 1
    assert run_json(capsys, "notifications", "mark-read", "--user", user_id)["marked_read"] == 0
    assert main(["notifications", "defaults", "--user", user_id, "--on", "newsletter"]) == 2
    assert "unknown categories: newsletter" in capsys.readouterr().err
    assert main(["notifications", "defaults", "--user", user_id, "--on", "credits_low", "--off", "credits_low"]) == 2
    assert main(["integrations", "set-status", "--integration", "int_x", "--status", "expired"]) == 2
    assert "no integration int_x" in capsys.readouterr().err


async def test_concurrent_first_patches_make_one_override(world) -> None:
    import anyio

    env = world.env
    url = settings_url(world.brand_a.id)
    statuses: list[int] = []

    async def patch(category: str) -> None:
        resp = await env.rest.patch(url, json={"email_notifications": {category: False}},
                                    headers=env.auth(world.full_key))
        statuses.append(resp.status_code)

    async with anyio.create_task_group() as tg:
        for category in CATEGORIES[:4]:
            tg.start_soon(patch, category)
    assert statuses == [200] * 4
    counts = await env.row_counts()
    assert counts["notification_brand_overrides"] == 1
    data = (await env.rest.get(url, headers=env.auth(world.full_key))).json()["data"]
    # every PATCH changed only its own boolean, and none was lost
    assert data["effective_settings"] == {**ALL_ON, **dict.fromkeys(CATEGORIES[:4], False)}


async def test_patch_that_loses_the_insert_race_merges_into_the_winner(world, monkeypatch) -> None:
    """The first lookup misses (as when a concurrent first PATCH has not committed yet); the insert then hits
    the unique (user, brand) constraint, and the PATCH merges into the committed override instead."""
    from tools.notifications import routes as notifications
    env = world.env
    url = settings_url(world.brand_a.id)
    await env.rest.patch(url, json={"email_notifications": {"post_published": False}},
                         headers=env.auth(world.full_key))
    real = notifications._override
    calls = []

    async def stale_first(call, **kw):
        calls.append(kw)
        return None if len(calls) == 1 else await real(call, **kw)

    monkeypatch.setattr(notifications, "_override", stale_first)
    resp = await env.rest.patch(url, json={"email_notifications": {"credits_low": False}},
                                headers=env.auth(world.full_key))
    assert resp.status_code == 200, resp.text
    assert len(calls) == 2
    data = resp.json()["data"]
    assert data["effective_settings"] == {**ALL_ON, "post_published": False, "credits_low": False}
    assert (await env.row_counts())["notification_brand_overrides"] == 1
