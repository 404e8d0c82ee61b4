"""The operator console over HTTP (ASGI): sign-in, cookies, CSRF, fixation, throttling, workspace isolation,
keys, accounts and approval with the API's authority rules. Browser flows: tests/console/test_browser.py."""

from __future__ import annotations

import io
import json
import re

import pytest
from sqlmodel import select

from server.cli import main
from storage.tables.accounts import ApiKey
from storage.tables.console import ConsoleSession
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification
from storage.tables.publishing import Schedule
from tests.console.support import (
    PASSWORD,
    client,
    csrf_of,
    held_schedule,
    make_user,
    sign_in,
    signed_in,
    value_of,
)

pytestmark = pytest.mark.anyio

AT = "2026-03-05T10:30:00.000Z"  # three days after tests.support.START


async def _world(env):
    ws = await env.workspace("Workspace A")
    brand = await env.brand(ws, "Brand A")
    x = await env.integration(brand, "x")
    key = await env.key(ws, role="admin")
    await make_user(env, ws, "admin@a.example", "admin")
    await make_user(env, ws, "member@a.example", "member")
    return ws, brand, x, key


async def test_sign_in_sets_a_safe_cookie_and_every_page_renders(env) -> None:
    _, brand, x, key = await _world(env)
    sid = await held_schedule(env, brand, key, x.id, AT)
    browser = client(env)
    first = await browser.get("/console/workspace")
    assert first.status_code == 303 and first.headers["location"] == "/console/sign-in?next=%2Fconsole%2Fworkspace"
    resp = await sign_in(browser, "ADMIN@a.example")  # emails are case-insensitive
    assert resp.status_code == 303
    cookie = next(c for c in resp.headers.get_list("set-cookie") if c.startswith("socialpub_console="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/console" in cookie
    assert "Secure" not in cookie  # plain http (a local install); https below
    for path in ["/console/workspace", "/console/keys", f"/console/brands/{brand.id}",
                 f"/console/brands/{brand.id}/accounts", f"/console/brands/{brand.id}/calendar?day=2026-03-05",
                 f"/console/brands/{brand.id}/calendar?view=month&day=2026-03-05",
                 f"/console/brands/{brand.id}/schedules/{sid}", f"/console/brands/{brand.id}/history",
                 f"/console/brands/{brand.id}/notifications"]:
        page = await browser.get(path)
        assert page.status_code == 200, (path, page.text)
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["cache-control"] == "no-store"
        assert 'class="error"' not in page.text, path
    week = await browser.get(f"/console/brands/{brand.id}/calendar?day=2026-03-05")
    assert f"/schedules/{sid}" in week.text and "held" in week.text
    workspace = (await browser.get("/console/workspace")).text
    assert "Brand A" in workspace and "Agency" in workspace


async def test_cookie_is_secure_over_https(env) -> None:
    _ws, *_ = await _world(env)
    browser = client(env, "https://testserver")
    resp = await sign_in(browser, "admin@a.example")
    cookie = next(c for c in resp.headers.get_list("set-cookie") if c.startswith("socialpub_console="))
    assert "Secure" in cookie and "HttpOnly" in cookie


async def test_forms_without_a_valid_csrf_token_are_refused(env) -> None:
    _ws, brand, *_ = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    other = await signed_in(env, "member@a.example")
    before = await env.row_counts()
    form = {"name": "sneaky", "scopes": ["posts:read"], "restrict": "0"}
    missing = await admin.post("/console/keys", data=form)
    assert missing.status_code == 403 and "security token" in missing.text
    wrong = await admin.post("/console/keys", data={**form, "csrf": "A" * 43})
    assert wrong.status_code == 403
    # a valid token of another session is not valid in this one
    foreign = csrf_of((await other.get("/console/keys")).text)
    assert (await admin.post("/console/keys", data={**form, "csrf": foreign})).status_code == 403
    assert (await admin.post(f"/console/brands/{brand.id}/accounts/connect",
                             data={"platform": "x", "csrf": foreign})).status_code == 403
    # the sign-in form too: a token is bound to the browser's own pre-session cookie
    fresh = client(env)
    refused = await fresh.post("/console/sign-in", data={"email": "admin@a.example", "password": PASSWORD,
                                                         "csrf": foreign})
    assert refused.status_code == 403 and "socialpub_console=" not in refused.headers.get("set-cookie", "")
    assert await env.row_counts() == before
    # the real token works
    ok = await admin.post("/console/keys", data={**form, "csrf": csrf_of((await admin.get("/console/keys")).text)})
    assert ok.status_code == 303 and "sneaky" in (await admin.get(ok.headers["location"])).text


async def test_sign_in_issues_a_new_session_id_no_fixation(env) -> None:
    await _world(env)
    planted = "fixated-session-id-chosen-by-an-attacker"
    victim = client(env)
    victim.cookies.set("socialpub_console", planted, domain="testserver.local", path="/console")
    resp = await sign_in(victim, "admin@a.example")
    issued = victim.cookies.get("socialpub_console")
    assert resp.status_code == 303 and issued and issued != planted  # the planted value is never adopted
    me = await victim.get("/console/workspace")
    assert me.status_code == 200 and "admin@a.example" in me.text
    # the planted value authenticates nobody, and a second sign-in of the same user gets its own ID
    attacker = client(env)
    attacker.cookies.set("socialpub_console", planted, domain="testserver.local", path="/console")
    assert (await attacker.get("/console/workspace")).status_code == 303
    second = await signed_in(env, "admin@a.example")
    assert second.cookies.get("socialpub_console") not in (issued, planted)
    async with env.db.session(write=False) as s:
        stored = {row.id for row in (await s.exec(select(ConsoleSession))).all()}
    assert len(stored) == 2 and issued not in stored  # only hashes are stored
    # sign-out ends the session server-side: replaying the old cookie value is refused
    out = await victim.post("/console/sign-out", data={"csrf": csrf_of(me.text)})
    assert out.status_code == 303
    replay = client(env)
    replay.cookies.set("socialpub_console", issued, domain="testserver.local", path="/console")
    assert (await replay.get("/console/workspace")).status_code == 303


async def test_sign_in_is_throttled(env) -> None:
    await _world(env)
    browser = client(env)
    for _ in range(5):
        assert (await sign_in(browser, "admin@a.example", "wrong password!")).status_code == 401
    throttled = await sign_in(browser, "admin@a.example")  # even the right password now waits
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) >= 1
    assert "socialpub_console=" not in throttled.headers.get("set-cookie", "")
    assert (await sign_in(client(env), "member@a.example")).status_code == 303  # another account is unaffected


async def test_users_of_one_workspace_never_see_another(env) -> None:
    _, brand_a, _x_a, _key_a = await _world(env)
    ws_b = await env.workspace("Workspace B")
    brand_b = await env.brand(ws_b, "Secret brand B")
    x_b = await env.integration(brand_b, "x")
    key_b = await env.key(ws_b, role="admin")
    sid_b = await held_schedule(env, brand_b, key_b, x_b.id, AT)
    key_b_id = env.key_row(key_b).id
    admin = await signed_in(env, "admin@a.example")
    csrf = csrf_of((await admin.get("/console/keys")).text)
    assert "Secret brand B" not in (await admin.get("/console/workspace")).text
    assert key_b_id not in (await admin.get("/console/keys")).text
    for path in [f"/console/brands/{brand_b.id}", f"/console/brands/{brand_b.id}/accounts",
                 f"/console/brands/{brand_b.id}/calendar", f"/console/brands/{brand_b.id}/schedules/{sid_b}",
                 f"/console/brands/{brand_b.id}/history", f"/console/brands/{brand_b.id}/notifications"]:
        assert (await admin.get(path)).status_code == 404, path
    before = await env.row_counts()
    for path, data in [(f"/console/brands/{brand_b.id}/schedules/{sid_b}/approve", {}),
                       (f"/console/brands/{brand_a.id}/schedules/{sid_b}/approve", {}),  # B's Schedule via A's brand
                       (f"/console/brands/{brand_b.id}/accounts/connect", {"platform": "x"}),
                       (f"/console/brands/{brand_a.id}/accounts/{x_b.id}/disconnect", {}),
                       (f"/console/keys/{key_b_id}/revoke", {})]:
        resp = await admin.post(path, data={**data, "csrf": csrf})
        assert resp.status_code == 404, (path, resp.status_code)
    assert await env.row_counts() == before
    async with env.db.session(write=False) as s:
        assert (await s.get(Schedule, sid_b)).approval_status == "pending_review"
        assert (await s.get(ApiKey, key_b_id)).revoked_at is None


async def test_approval_needs_the_publish_authority(env) -> None:
    _, brand, x, key = await _world(env)
    sid = await held_schedule(env, brand, key, x.id, AT)
    member = await signed_in(env, "member@a.example")
    page = await member.get(f"/console/brands/{brand.id}/schedules/{sid}")
    assert page.status_code == 200 and "/approve" not in page.text and "publish:execute" in page.text
    refused = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/approve",
                                data={"csrf": csrf_of(page.text), "idempotency_key": "console-m"})
    assert refused.status_code == 403 and "INSUFFICIENT_SCOPE" in refused.text
    async with env.db.session(write=False) as s:
        assert (await s.get(Schedule, sid)).approval_status == "pending_review"
    admin = await signed_in(env, "admin@a.example")
    page = await admin.get(f"/console/brands/{brand.id}/schedules/{sid}")
    assert "/approve" in page.text and "Ready: nothing blocks it." in page.text
    form = {"csrf": csrf_of(page.text), "idempotency_key": value_of(page.text, "idempotency_key")}
    ok = await admin.post(f"/console/brands/{brand.id}/schedules/{sid}/approve", data=form)
    assert ok.status_code == 303 and ok.headers["location"].endswith("notice=approved")
    again = await admin.post(f"/console/brands/{brand.id}/schedules/{sid}/approve", data=form)
    assert again.status_code == 303  # a double submit replays the same approval
    async with env.db.session(write=False) as s:
        row = await s.get(Schedule, sid)
        console_key = (await s.exec(select(ApiKey).where(ApiKey.name == "Console: admin@a.example"))).one()
    assert row.approval_status == "approved" and row.status == "scheduled"
    assert row.approved_by_key == console_key.id  # recorded like any key's approval


async def test_reject_needs_a_reason_cancels_and_tells_the_author(env) -> None:
    _, brand, x, key = await _world(env)
    sid = await held_schedule(env, brand, key, x.id, AT)
    member = await signed_in(env, "member@a.example")
    page = await member.get(f"/console/brands/{brand.id}/schedules/{sid}")
    form = {"csrf": csrf_of(page.text), "idempotency_key": "console-r"}
    bare = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/reject", data=form)
    assert bare.status_code == 422 and "Say why" in bare.text  # no reason: nothing happens
    async with env.db.session(write=False) as s:
        assert (await s.get(Schedule, sid)).status == "action_required"
    resp = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/reject",
                             data={**form, "reason": "Wrong <b>price</b> in the caption"})
    assert resp.status_code == 303, resp.text
    again = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/reject",
                              data={**form, "reason": "Wrong <b>price</b> in the caption"})
    assert again.status_code == 303  # a double submit replays: recorded and told once
    async with env.db.session(write=False) as s:
        row = await s.get(Schedule, sid)
        author = env.key_row(key).user_id
        notes = (await s.exec(select(Notification).where(Notification.type == "post_rejected"))).all()
    assert row.status == "cancelled" and row.approval_status == "rejected"
    assert "Wrong <b>price</b> in the caption" in row.blocking_reason["message"]
    assert [n.user_id for n in notes] == [author] and "Wrong <b>price</b>" in notes[0].message
    # the author's agent reads why over REST; the page shows it as text
    api = await env.rest.get(f"/v1/brands/{brand.id}/schedules/{sid}", headers=env.auth(key))
    assert "Wrong <b>price</b>" in api.json()["data"]["blocking_reason"]["message"]
    shown = await member.get(f"/console/brands/{brand.id}/schedules/{sid}")
    assert "Wrong &lt;b&gt;price&lt;/b&gt;" in shown.text and "<b>price" not in shown.text


async def test_keys_created_in_the_console_work_are_bounded_and_revocable(env) -> None:
    _ws, brand, *_ = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    page = await admin.get("/console/keys")
    assert "Console: admin@a.example" not in page.text  # the console's own keys are not listed
    assert "publish:execute" in page.text and "Publishing permission" in page.text  # the spec's descriptions
    created = await admin.post("/console/keys", data={
        "csrf": csrf_of(page.text), "name": "Agent", "scopes": ["brands:read", "posts:read"], "restrict": "1",
        "brand_ids": [brand.id]})
    # POST/redirect/GET: the secret travels sealed (never in the clear, never in the URL) to one GET that shows it
    assert created.status_code == 303 and created.headers["location"] == "/console/keys"
    assert "socialpub_live_" not in created.text + created.headers["location"] + created.headers["set-cookie"]
    handed_over = admin.cookies.get("socialpub_console_new_key")
    shown = await admin.get(created.headers["location"])
    assert shown.status_code == 200 and shown.headers["cache-control"] == "no-store"
    shown_key = re.search(r'value="(socialpub_live_[^"]+)"', shown.text)
    assert shown_key, shown.text
    secret = shown_key.group(1)
    assert "Key “Agent” created" in shown.text
    reload = await admin.get("/console/keys")  # a reload neither shows the secret nor creates another key
    assert reload.text.count(secret) == 0 and "Key “Agent” created" not in reload.text
    assert reload.text.count(">Agent</td>") == 1
    # the sealed value is bound to the session: replayed in another session of the same user it shows nothing
    assert handed_over and admin.cookies.get("socialpub_console_new_key") is None
    second = await signed_in(env, "admin@a.example")
    for browser in (second, admin):
        browser.cookies.set("socialpub_console_new_key", handed_over, domain="testserver.local", path="/console/keys")
    assert secret not in (await second.get("/console/keys")).text
    assert secret in (await admin.get("/console/keys")).text  # (control: the cookie does reach the server)
    ctx = await env.rest.get("/v1/context", headers=env.auth(secret))
    assert ctx.status_code == 200
    assert ctx.json()["data"]["api_key"]["brand_ids"] == [brand.id]
    assert ctx.json()["data"]["api_key"]["scopes"] == ["brands:read", "posts:read"]
    listed = (await admin.get("/console/keys")).text
    assert "Agent" in listed and "never" not in listed.split("Agent")[1].split("</tr>")[0]  # last used shown
    key_id = (await env.rest.get("/v1/context", headers=env.auth(secret))).json()["data"]["api_key"]["id"]
    revoked = await admin.post(f"/console/keys/{key_id}/revoke", data={"csrf": csrf_of(listed)})
    assert revoked.status_code == 303
    assert (await env.rest.get("/v1/context", headers=env.auth(secret))).status_code == 401
    # a member cannot grant what the role does not hold
    member = await signed_in(env, "member@a.example")
    page = await member.get("/console/keys")
    refused = await member.post("/console/keys", data={"csrf": csrf_of(page.text), "name": "Escalate",
                                                       "scopes": ["publish:execute"], "restrict": "0"})
    assert refused.status_code == 403 and "cannot grant" in refused.text


async def test_sandbox_accounts_connect_fault_and_disconnect(env) -> None:
    _, brand, x, _ = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    page = await admin.get(f"/console/brands/{brand.id}/accounts")
    assert 'data-provider="sandbox"' in page.text
    csrf = csrf_of(page.text)
    ok = await admin.post(f"/console/brands/{brand.id}/accounts/connect", data={"csrf": csrf, "platform": "threads"})
    assert ok.status_code == 303
    targets = (await admin.get(f"/console/brands/{brand.id}/accounts")).text
    assert "Brand A on Threads" in targets
    resp = await admin.post(f"/console/brands/{brand.id}/accounts/{x.id}/faults",
                            data={"csrf": csrf, "operation": "publish", "kind": "expired_credentials", "times": "1"})
    assert resp.status_code == 303
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, x.id)).provider_state["faults"] == {"publish": "expired_credentials:1"}
    resp = await admin.post(f"/console/brands/{brand.id}/accounts/{x.id}/status",
                            data={"csrf": csrf, "status": "expired"})
    assert resp.status_code == 303
    resp = await admin.post(f"/console/brands/{brand.id}/accounts/{x.id}/disconnect", data={"csrf": csrf})
    assert resp.status_code == 303
    async with env.db.session(write=False) as s:  # the one disconnect: credentials gone, the row kept
        gone = await s.get(Integration, x.id)
        assert gone.credentials is None and gone.status == "needs_reauth"
    # members may look but not change accounts
    member = await signed_in(env, "member@a.example")
    page = await member.get(f"/console/brands/{brand.id}/accounts")
    assert page.status_code == 200 and "/accounts/connect" not in page.text
    refused = await member.post(f"/console/brands/{brand.id}/accounts/connect",
                                data={"csrf": csrf_of(page.text), "platform": "x"})
    assert refused.status_code == 403


def test_users_create_cli(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SOCIALPUB_HOME", str(tmp_path))
    monkeypatch.delenv("SOCIALPUB_DATABASE_URL", raising=False)
    assert main(["init"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["users", "create", "--email", "Ops@Example.com", "--role", "admin", "--password-stdin",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["email"] == "ops@example.com" and out["role"] == "admin"
    assert out["console_url"].endswith("/console/") and PASSWORD not in json.dumps(out)
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["users", "create", "--email", "ops@example.com", "--password-stdin"]) == 2
    assert "already exists" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["users", "create", "--email", "x@example.com", "--password-stdin"]) == 2
    assert "password" in capsys.readouterr().err


def test_docs_show_every_console_screenshot() -> None:
    from pathlib import Path
    docs = Path(__file__).resolve().parents[2] / "docs"
    shown = set(re.findall(r"\(console/([a-z-]+\.png)\)", (docs / "console.md").read_text()))
    assert shown == {p.name for p in (docs / "console").glob("*.png")}
