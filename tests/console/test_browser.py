"""The console in a real browser: Playwright driving Debian's Chromium against `socialpub serve` (a subprocess on a
free port with a scratch SOCIALPUB_HOME, worker on).

Skipped with the reason when /usr/bin/chromium is absent, except under CI (`CI` set), where that fails.
`UPDATE_SCREENSHOTS=1` writes the page screenshots shown in docs/console.md to docs/console/.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from PIL import Image

from tests.console.support import PASSWORD, X_POST

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "console"
BIN = Path(sys.executable).parent / "socialpub"

pytestmark = pytest.mark.slow  # a served subprocess, Chromium, and a wait for the worker to publish

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: CI must `apt-get install -y chromium` for the console tests")
    pytest.skip(f"{CHROMIUM} is absent (apt-get install -y chromium); console browser tests skipped",
                allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402  (after the skip)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(env: dict[str, str], *argv: str, stdin: str | None = None) -> dict[str, Any]:
    done = subprocess.run([str(BIN), *argv, "--json"], env=env, input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


class Server:
    def __init__(self, base: str, key: str, brand: str, x: str, demo_sign_in: dict[str, Any], home: str = "") -> None:
        self.base, self.key, self.brand, self.x, self.demo_sign_in = base, key, brand, x, demo_sign_in
        self.home = home
        self.api = httpx.Client(base_url=f"{base}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30)

    def held_schedule(self, seconds_ahead: int) -> str:
        item = self.api.post(f"/brands/{self.brand}/content-items", json=X_POST)
        assert item.status_code == 201, item.text
        when = (datetime.now(UTC) + timedelta(seconds=seconds_ahead)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        resp = self.api.post(f"/brands/{self.brand}/schedules", headers={"Idempotency-Key": f"held-{time.time_ns()}"},
                             json={"content_item_id": item.json()["data"]["content_item"]["id"],
                                   "integration_ids": [self.x], "scheduled_at": when,
                                   "approval_status": "pending_review"})
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]["schedule"]["id"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("console-home")
    port = _free_port()
    env = {**os.environ, "SOCIALPUB_HOME": str(home), "SOCIALPUB_PUBLIC_URL": f"http://127.0.0.1:{port}"}
    env.pop("SOCIALPUB_DATABASE_URL", None)
    demo = _cli(env, "init", "--demo")
    _cli(env, "users", "create", "--email", "admin@example.com", "--role", "admin", "--password-stdin",
         stdin=PASSWORD + "\n")
    _cli(env, "users", "create", "--email", "member@example.com", "--role", "member", "--password-stdin",
         stdin=PASSWORD + "\n")
    with serving(env, home, port) as base:
        key = demo["api_key"]["secret"]
        brand = demo["brands"][0]["id"]
        targets = httpx.get(f"{base}/v1/brands/{brand}/targets", headers={"Authorization": f"Bearer {key}"}).json()
        x = next(t["integration_id"] for t in targets["data"]["targets"]
                 if t["platform"] == "x" and t["connection_status"] == "connected")
        yield Server(base, key, brand, x, demo["console"], str(home))


@contextmanager
def serving(env: dict[str, str], home: Path, port: int) -> Iterator[str]:
    """`socialpub serve` on `port` until the block ends; yields its base URL once it answers."""
    proc = subprocess.Popen([str(BIN), "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(home / "serve.log", "w"))  # noqa: SIM115
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # start-up is ~1 s idle, but far slower on a loaded 2-core runner
        with httpx.Client(timeout=1) as client:  # one client: `httpx.get` builds an SSL context each call (~20 ms)
            while True:
                try:
                    if client.get(f"{base}/v1/plans").status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None:
                    raise RuntimeError((home / "serve.log").read_text())
                if time.monotonic() > deadline:
                    raise RuntimeError("socialpub serve did not answer in 30 s")
                time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1100, "height": 760})
    yield context.new_page()
    context.close()


def shot(page: Page, name: str) -> None:
    if os.environ.get("UPDATE_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        image = Image.open(io.BytesIO(page.screenshot(full_page=False)))
        # a 64-colour palette keeps text crisp at a third of the size: the docs stay small
        image.convert("RGB").quantize(64).save(SHOTS / f"{name}.png", optimize=True)


def sign_in(page: Page, server: Server, email: str) -> None:
    page.goto(f"{server.base}/console/")
    expect(page).to_have_url(f"{server.base}/console/sign-in")  # from /console/: no next
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Demo workspace")


def test_sign_in_with_the_keyboard_and_see_every_page(page: Page, server: Server) -> None:
    page.goto(f"{server.base}/console/sign-in")
    shot(page, "sign-in")
    page.get_by_label("Email").focus()  # labels are wired to inputs; the form submits with Enter
    page.keyboard.type("admin@example.com")
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", level=1)).to_have_text("Demo workspace")
    expect(page.get_by_text("Plan: Agency")).to_be_visible()
    shot(page, "workspace")
    page.get_by_role("link", name="Acme Coffee Roasters").click()
    expect(page.get_by_role("heading", level=2, name="Voice")).to_be_visible()
    shot(page, "brand")
    for tab in ["History", "Notifications", "Calendar"]:
        page.get_by_role("navigation", name="Brand").get_by_role("link", name=tab).click()
        expect(page.get_by_role("heading", level=1)).to_have_text(tab)
    page.get_by_role("link", name="Month").click()
    expect(page.locator("table.calendar.month")).to_be_visible()


def test_the_demo_prints_a_working_first_sign_in(page: Page, server: Server) -> None:
    demo = server.demo_sign_in
    assert demo["url"] == f"{server.base}/console/" and demo["password"]
    page.goto(demo["url"])
    page.get_by_label("Email").fill(demo["email"])
    page.get_by_label("Password").fill(demo["password"])
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Demo workspace")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You are signed out.")).to_be_visible()


def test_create_a_key_and_use_it(page: Page, server: Server) -> None:
    sign_in(page, server, "admin@example.com")
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("Browser agent")
    page.get_by_label("brands:read").check()
    page.get_by_label("posts:read").check()
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_label("Secret").input_value()
    assert secret.startswith("socialpub_live_")
    page.get_by_role("button", name="Copy").click()  # the one script: copy to the clipboard
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    shot(page, "keys-created")
    resp = httpx.get(f"{server.base}/v1/context", headers={"Authorization": f"Bearer {secret}"})
    assert resp.status_code == 200 and resp.json()["data"]["api_key"]["scopes"] == ["brands:read", "posts:read"]
    assert page.url == f"{server.base}/console/keys"  # POST/redirect/GET
    page.reload()  # a reload is that GET again: no second key, and the secret is never shown again; last use is
    assert secret not in page.content()
    row = page.get_by_role("row").filter(has_text="Browser agent")
    expect(row).to_have_count(1)
    expect(row).not_to_contain_text("never")
    shot(page, "keys")
    row.get_by_role("button", name="Revoke Browser agent").click()
    expect(page.get_by_text("API key revoked.")).to_be_visible()
    assert httpx.get(f"{server.base}/v1/context", headers={"Authorization": f"Bearer {secret}"}).status_code == 401


def test_connect_a_sandbox_account(page: Page, server: Server) -> None:
    sign_in(page, server, "admin@example.com")
    page.get_by_role("link", name="accounts").first.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Connected accounts")
    before = page.get_by_role("row").filter(has_text="Pinterest").count()
    page.get_by_label("Network").select_option("pinterest")
    page.get_by_role("button", name="Connect sandbox account").click()
    expect(page.get_by_text("Account connected.")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="Pinterest")).to_have_count(before + 1)
    shot(page, "accounts")
    connect = page.get_by_role("heading", level=2, name="Connect an account")
    connect.scroll_into_view_if_needed()
    for network in ["Mastodon", "Bluesky", "Telegram", "Discord"]:  # a form per network the server can connect
        expect(page.get_by_role("button", name=f"Connect {network}")).to_be_visible()
    page.evaluate("window.scrollTo(0, document.querySelector('h2').getBoundingClientRect().top + scrollY - 10)")
    shot(page, "accounts-connect")
    targets = server.api.get(f"/brands/{server.brand}/targets").json()["data"]["targets"]
    assert len([t for t in targets if t["platform"] == "pinterest" and t.get("integration_id")]) == before + 1
    # expiring it notifies the workspace; the notification shows unread, then read
    row = page.get_by_role("row").filter(has_text="Pinterest").last
    row.get_by_role("combobox").select_option("expired")
    row.get_by_role("button", name="Set status").click()
    expect(page.get_by_text("Account status changed.")).to_be_visible()
    page.get_by_role("navigation", name="Brand").get_by_role("link", name="Notifications").click()
    expect(page.locator(".notes li.unread").first).to_be_visible()
    shot(page, "notifications")
    page.get_by_role("button", name="Mark all read").click()
    expect(page.get_by_text("Notifications marked read.")).to_be_visible()
    expect(page.locator(".notes li.unread")).to_have_count(0)


def test_a_member_cannot_approve(page: Page, server: Server) -> None:
    sid = server.held_schedule(3600)
    sign_in(page, server, "member@example.com")
    page.goto(f"{server.base}/console/brands/{server.brand}/schedules/{sid}")
    expect(page.get_by_text("Approving needs the publish authority")).to_be_visible()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    shot(page, "schedule-member")
    schedule = server.api.get(f"/brands/{server.brand}/schedules/{sid}").json()["data"]
    assert schedule["approval_status"] == "pending_review"


def test_approve_a_held_schedule_and_the_worker_publishes_it(page: Page, server: Server) -> None:
    sid = server.held_schedule(25)
    sign_in(page, server, "admin@example.com")
    page.goto(f"{server.base}/console/brands/{server.brand}/calendar")
    page.locator(f"a[href$='/schedules/{sid}']").click()
    expect(page.get_by_text("Ready: nothing blocks it.")).to_be_visible()
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text("Schedule approved")).to_be_visible()
    deadline = time.monotonic() + 90
    status = None
    while time.monotonic() < deadline:
        status = server.api.get(f"/brands/{server.brand}/schedules/{sid}").json()["data"]["status"]
        if status in ("published", "failed", "partially_published"):
            break
        time.sleep(0.25)
    assert status == "published"
    page.get_by_role("navigation", name="Brand").get_by_role("link", name="History").click()
    link = page.get_by_role("link", name="open post").first
    expect(link).to_be_visible()
    assert (link.get_attribute("href") or "").startswith("https://")
    shot(page, "history")
    page.get_by_role("navigation", name="Brand").get_by_role("link", name="Calendar").click()
    expect(page.locator(f"a[href$='/schedules/{sid}']")).to_contain_text("published")
    shot(page, "calendar-week")
    page.get_by_role("link", name="Month").click()
    expect(page.locator(f"a[href$='/schedules/{sid}']")).to_be_visible()
    shot(page, "calendar-month")


def _targets(server: Server) -> dict[str, str]:
    rows = server.api.get(f"/brands/{server.brand}/targets").json()["data"]["targets"]
    return {t["platform"]: t["integration_id"] for t in rows
            if t.get("integration_id") and t["connection_status"] == "connected"}


def _wait_for_run(server: Server, sid: str) -> str | None:
    deadline = time.monotonic() + 180
    status = None
    while time.monotonic() < deadline:
        status = server.api.get(f"/brands/{server.brand}/schedules/{sid}").json()["data"]["status"]
        if status in ("published", "failed", "partially_published"):
            break
        time.sleep(0.25)
    return status


def test_review_a_held_post_then_approve_it_and_the_worker_publishes_it(page: Page, server: Server) -> None:
    """An agent key holds a post over REST; a member finds it in Review but cannot approve; an admin sees its
    caption, accounts and per-network previews there, approves it, and the worker publishes it to the sandbox."""
    ids = _targets(server)
    item = server.api.post(f"/brands/{server.brand}/content-items", json={
        "name": "Ethiopia Guji is back", "copy_mode": "per_platform",
        "platform_copy": {
            "x": {"caption": "Ethiopia Guji is back ☕ Blueberry, jasmine, honey. https://acme-coffee.example/guji",
                  "hashtags": ["coffee"], "title": None},
            "bluesky": {"caption": "Ethiopia Guji is back: blueberry, jasmine, honey. Brew it as a pour-over.",
                        "hashtags": [], "title": None}},
        "x_settings": {"thread_parts": [{"text": "Brew tip: 15 g to 250 g water at 94 °C, 3 minutes."}]},
        "bluesky_settings": {}})
    assert item.status_code == 201, item.text
    when = (datetime.now(UTC) + timedelta(seconds=150)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    resp = server.api.post(f"/brands/{server.brand}/schedules", headers={"Idempotency-Key": f"rv-{time.time_ns()}"},
                           json={"content_item_id": item.json()["data"]["content_item"]["id"],
                                 "integration_ids": sorted([ids["x"], ids["bluesky"]]), "scheduled_at": when,
                                 "approval_status": "pending_review"})
    assert resp.status_code == 201, resp.text
    sid = resp.json()["data"]["schedule"]["id"]
    sign_in(page, server, "member@example.com")
    page.get_by_role("link", name="Review").click()
    entry = page.get_by_role("region", name="Ethiopia Guji is back")
    expect(entry.get_by_text("Approving needs the publish authority")).to_be_visible()
    expect(entry.get_by_role("button", name="Approve")).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, server, "admin@example.com")
    expect(page.locator("header.top .count")).to_be_visible()
    page.get_by_role("link", name="Review").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Review")
    entry = page.get_by_role("region", name="Ethiopia Guji is back")
    expect(entry.get_by_text("Blueberry, jasmine, honey.").first).to_be_visible()
    expect(entry.get_by_role("article", name="X preview: Acme Coffee Roasters on X")).to_be_visible()
    expect(entry.get_by_role("article", name="Bluesky preview: Acme Coffee Roasters on Bluesky")).to_be_visible()
    expect(entry.locator(".pcard-x .part")).to_have_count(2)  # the thread as a chain
    entry.scroll_into_view_if_needed()
    shot(page, "review")
    entry.get_by_role("link", name="Ethiopia Guji is back").click()
    expect(page.get_by_text("Ready: nothing blocks it.")).to_be_visible()
    shot(page, "schedule-review")
    page.get_by_role("button", name="Approve").click()
    expect(page.get_by_text("Schedule approved")).to_be_visible()
    assert _wait_for_run(server, sid) == "published"


def test_a_failed_post_says_what_happened(page: Page, server: Server) -> None:
    ids = _targets(server)
    env = {**os.environ, "SOCIALPUB_HOME": server.home}
    env.pop("SOCIALPUB_DATABASE_URL", None)
    _cli(env, "sandbox", "set", ids["threads"], "--fault", "publish=rejected")
    try:
        item = server.api.post(f"/brands/{server.brand}/content-items", json={
            "name": "Cold brew season", "copy_mode": "single", "bluesky_settings": {}, "threads_settings": {},
            "single_copy": {"caption": "Cold brew season starts today.", "hashtags": [], "title": None}})
        when = (datetime.now(UTC) + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        resp = server.api.post(f"/brands/{server.brand}/schedules", headers={"Idempotency-Key": f"f-{time.time_ns()}"},
                               json={"content_item_id": item.json()["data"]["content_item"]["id"],
                                     "integration_ids": sorted([ids["bluesky"], ids["threads"]]),
                                     "scheduled_at": when, "approval_status": "approved"})
        assert resp.status_code == 201, resp.text
        sid = resp.json()["data"]["schedule"]["id"]
        assert _wait_for_run(server, sid) == "partially_published"
    finally:
        _cli(env, "sandbox", "set", ids["threads"], "--clear")
    sign_in(page, server, "admin@example.com")
    page.goto(f"{server.base}/console/brands/{server.brand}/schedules/{sid}")
    outcome = page.get_by_role("region", name="What happened")
    expect(outcome.get_by_role("row").filter(has_text="Threads")).to_contain_text("The platform refused this post")
    expect(outcome.get_by_role("row").filter(has_text="Bluesky").get_by_role("link", name="open post")).to_be_visible()
    expect(outcome.get_by_role("link", name="Edit and reschedule")).to_be_visible()
    expect(page.get_by_text("Preflight (as if approved now)")).to_have_count(0)
    shot(page, "schedule-failed")


def test_authorize_an_mcp_client_on_the_consent_page(page: Page, server: Server) -> None:
    redirect = "http://127.0.0.1:9/callback"
    reg = httpx.post(f"{server.base}/register", json={"redirect_uris": [redirect], "client_name": "Browser agent app",
                                                      "token_endpoint_auth_method": "none"})
    client_id = reg.json()["client_id"]
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    start = httpx.get(f"{server.base}/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect, "code_challenge": challenge,
        "code_challenge_method": "S256", "state": "s1", "scope": "brands:read posts:read",
        "resource": f"{server.base}/mcp"})
    assert start.status_code == 302
    page.route("http://127.0.0.1:9/**", lambda route: route.fulfill(body="back in the app"))
    page.goto(start.headers["location"])  # not signed in: sign in, then back to the consent page
    page.get_by_label("Email").fill("admin@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Browser agent app")
    page.get_by_label("Only these brands:").check()
    page.get_by_label("Acme Coffee Roasters").check()
    shot(page, "consent")
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url("http://127.0.0.1:9/callback?**")
    query = parse_qs(urlsplit(page.url).query)
    assert query["state"] == ["s1"]
    token = httpx.post(f"{server.base}/token", data={
        "grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": redirect,
        "client_id": client_id, "code_verifier": verifier, "resource": f"{server.base}/mcp"})
    assert token.status_code == 200, token.text
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    resp = httpx.post(f"{server.base}/mcp", json=init, headers={
        "Authorization": f"Bearer {token.json()['access_token']}", "Accept": "application/json, text/event-stream"})
    assert resp.status_code == 200, resp.text


def test_check_an_account_without_javascript(browser: Any, server: Server) -> None:
    """The Check button is a plain form: it works with JavaScript off, and the page shows the check's result."""
    context = browser.new_context(viewport={"width": 1100, "height": 760}, java_script_enabled=False)
    page = context.new_page()
    try:
        sign_in(page, server, "admin@example.com")
        page.goto(f"{server.base}/console/brands/{server.brand}/accounts")
        row = page.get_by_role("row").filter(has_text=server.x)
        row.get_by_role("button", name="Check").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Account check: ok")
        expect(page.get_by_role("cell", name="X_POST")).to_be_visible()
        shot(page, "account-check")
        env = {**os.environ, "SOCIALPUB_HOME": server.home}
        env.pop("SOCIALPUB_DATABASE_URL", None)
        _cli(env, "sandbox", "set", server.x, "--fault", "check=missing_scope")
        page.get_by_role("link", name="Back to the accounts").click()
        page.get_by_role("row").filter(has_text=server.x).get_by_role("button", name="Check").click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Account check: problem")
        expect(page.get_by_text("missing_scopes")).to_be_visible()
        _cli(env, "sandbox", "set", server.x, "--clear")
    finally:
        context.close()
