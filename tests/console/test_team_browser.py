"""Issue 31 in a real browser: Playwright driving Debian's Chromium against the app served in this process by
uvicorn (on a free port), so that respx can answer the networks' token endpoints as their references describe
them (cited in tests/console/test_team_pages.py). The network's authorize page itself is never fetched: the
browser's request to it is intercepted and recorded.

An admin configures an X app, connects X (authorize URL with our client ID, state, PKCE, redirect URI; the test
calls our callback with a code), disconnects and reconnects it; connects Tumblr through the chooser; invites a
member who accepts, signs in, is made admin and is deactivated (session and key refused at once); edits the
brand's voice, which `get_brand_context` serves over MCP at once. `UPDATE_SCREENSHOTS=1` writes the new pages'
screenshots to docs/console/.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest
import respx
import uvicorn

from providers import tumblr, x
from schemas.settings import Settings
from server.app import build_app
from server.cli import main
from server.dispatch import Dispatcher
from server.mcp_server.app import McpApp
from tests.console.support import PASSWORD
from tests.console.test_browser import CHROMIUM, CHROMIUM_ARGS, shot
from tools.runtime import Runtime

pytestmark = pytest.mark.slow

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is absent; console browser tests skipped", allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402

SECRET = "x-app-SECRET-write-only"
ACCESS = "x-access-SECRET"


def off_thread(fn: Any) -> Any:
    """Run `fn()` in a thread of its own: Playwright's sync API keeps an event loop running in this one."""
    out: list[Any] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=120)
    if errors:
        raise errors[0]
    return out[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    def __init__(self, base: str, settings: Settings, demo: dict[str, Any]) -> None:
        self.base, self.settings, self.demo = base, settings, demo
        self.brand = demo["brands"][0]["id"]
        self.key = demo["api_key"]["secret"]

    def in_thread(self, go: Any) -> Any:
        """Run `go(rt)` on a runtime of its own (its own engine and loop) against the same database."""
        async def run() -> Any:
            rt = Runtime.from_settings(self.settings)
            try:
                return await go(rt)
            finally:
                await rt.close()
        return off_thread(lambda: anyio.run(run))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("team-home")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    saved = dict(os.environ)
    os.environ.update(SOCIALPUB_HOME=str(home), SOCIALPUB_PUBLIC_URL=base, SOCIALPUB_RATE_LIMIT="0")
    os.environ.pop("SOCIALPUB_DATABASE_URL", None)
    try:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert off_thread(lambda: main(["init", "--demo", "--json"])) == 0
        demo = json.loads(out.getvalue())
        settings = Settings.from_env(worker_enabled=False)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    rt = Runtime.from_settings(settings)
    server = uvicorn.Server(uvicorn.Config(build_app(rt, run_worker=False), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield Served(base, settings, demo)
    finally:
        server.should_exit = True
        thread.join(timeout=20)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def new_page(chromium: Any) -> Page:
    return chromium.new_context(viewport={"width": 1100, "height": 760}).new_page()


def sign_in(page: Page, served: Served, email: str, password: str = PASSWORD) -> None:
    page.goto(f"{served.base}/console/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()


def authorize_request(page: Page, start: Any, prefix: str) -> dict[str, str]:
    """Click `start`, intercept the browser's request to the network's authorize page; its query."""
    seen: list[str] = []

    def answer(route: Any) -> None:
        seen.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body="<h1>Authorize socialpub?</h1>")

    page.route(f"{prefix}**", answer)
    start()
    expect(page.get_by_role("heading", name="Authorize socialpub?")).to_be_visible()
    page.unroute(f"{prefix}**")
    assert seen and seen[0].startswith(prefix), seen
    return {k: v[0] for k, v in parse_qs(urlsplit(seen[0]).query).items()}


def x_routes(router: respx.MockRouter) -> None:
    router.post(f"{x.API_URL}/2/oauth2/token").mock(return_value=httpx.Response(200, json={
        "token_type": "bearer", "expires_in": 7200, "access_token": ACCESS, "scope": " ".join(x.SCOPES),
        "refresh_token": "x-refresh-SECRET"}))
    router.get(f"{x.API_URL}/2/users/me").mock(return_value=httpx.Response(200, json={
        "data": {"id": "2244994945", "name": "Roastery on X", "username": "roastery"}}))


def test_admin_configures_x_connects_disconnects_reconnects(chromium: Any, served: Served) -> None:
    page = new_page(chromium)
    sign_in(page, served, served.demo["console"]["email"], served.demo["console"]["password"])
    accounts = f"{served.base}/console/brands/{served.brand}/accounts"
    page.goto(accounts)
    x_card = page.locator('section.card[data-provider="x"]')
    expect(x_card).to_contain_text("No X app is configured")
    x_card.get_by_role("link", name="network apps page").click()
    shot(page, "apps")
    card = page.locator("#app-x")
    expect(card.locator("#redirect-x")).to_have_value(f"{served.base}/connect/x/callback")
    expect(card).to_contain_text("tweet.write")
    card.get_by_label("Client ID").fill("x-client-id")
    card.get_by_label("Client secret").fill(SECRET)
    card.get_by_role("button", name="Save X app").click()
    expect(page.get_by_text("App saved")).to_be_visible()
    assert SECRET not in page.content()

    page.goto(accounts)
    q = authorize_request(page, lambda: page.get_by_role("button", name="Connect X").click(), x.AUTHORIZE_URL)
    assert q["client_id"] == "x-client-id" and q["redirect_uri"] == f"{served.base}/connect/x/callback"
    assert q["code_challenge_method"] == "S256" and q["code_challenge"] and q["state"]
    with respx.mock(assert_all_mocked=True) as router:
        x_routes(router)
        page.goto(f"{served.base}/connect/x/callback?state={q['state']}&code=code-1")
        expect(page.get_by_text("Account connected.")).to_be_visible()
    row = page.locator("tr", has_text="@roastery")
    expect(row).to_contain_text("connected")
    shot(page, "accounts-oauth")

    row.get_by_role("button", name="Disconnect").click()
    expect(page.get_by_text("Account disconnected")).to_be_visible()
    row = page.locator("tr", has_text="@roastery")
    q = authorize_request(page, lambda: row.get_by_role("button", name="Reconnect Roastery on X").click(),
                          x.AUTHORIZE_URL)
    with respx.mock(assert_all_mocked=True) as router:
        x_routes(router)
        page.goto(f"{served.base}/connect/x/callback?state={q['state']}&code=code-2")
        expect(page.get_by_text("Account connected.")).to_be_visible()
    expect(page.locator("tr", has_text="@roastery")).to_contain_text("connected")
    for path in ("/console/apps", f"/console/brands/{served.brand}/accounts"):
        page.goto(served.base + path)
        assert SECRET not in page.content()
    page.context.close()


def test_tumblr_through_the_chooser(chromium: Any, served: Served) -> None:
    page = new_page(chromium)
    sign_in(page, served, served.demo["console"]["email"], served.demo["console"]["password"])
    page.goto(f"{served.base}/console/apps")
    card = page.locator("#app-tumblr")
    card.get_by_label("Client ID").fill("tumblr-client")
    card.get_by_label("Client secret").fill(SECRET)
    card.get_by_role("button", name="Save Tumblr app").click()
    page.goto(f"{served.base}/console/brands/{served.brand}/accounts")
    q = authorize_request(page, lambda: page.get_by_role("button", name="Connect Tumblr").click(),
                          tumblr.AUTHORIZE_URL)
    with respx.mock(assert_all_mocked=True) as router:
        router.post(f"{tumblr.API_URL}/v2/oauth2/token").mock(return_value=httpx.Response(200, json={
            "access_token": ACCESS, "expires_in": 2520, "token_type": "bearer", "refresh_token": "r-SECRET"}))
        router.get(f"{tumblr.API_URL}/v2/user/info").mock(return_value=httpx.Response(200, json={
            "meta": {"status": 200, "msg": "OK"}, "response": {"user": {"name": "roaster", "blogs": [
                {"name": "roastery-news", "uuid": "t:news", "primary": False, "title": "News"},
                {"name": "roastery", "uuid": "t:main", "primary": True, "title": "Roastery"}]}}}))
        page.goto(f"{served.base}/connect/tumblr/callback?state={q['state']}&code=c-1")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Which Tumblr account")
    shot(page, "choose-account")
    page.get_by_label("@roastery-news").check()
    page.get_by_role("button", name="Connect this account").click()
    expect(page.get_by_text("Account connected.")).to_be_visible()
    expect(page.locator("tr", has_text="@roastery-news")).to_be_visible()
    page.context.close()


def test_invite_accept_promote_deactivate(chromium: Any, served: Served) -> None:
    admin = new_page(chromium)
    sign_in(admin, served, served.demo["console"]["email"], served.demo["console"]["password"])
    admin.get_by_role("link", name="Team").click()
    admin.get_by_label("Email").fill("writer@example.com")
    admin.get_by_label("Role").select_option("member")
    admin.get_by_role("button", name="Invite").click()
    link = admin.locator("#invite-link").input_value()
    shot(admin, "team")
    assert link.startswith(f"{served.base}/console/invitations/")

    member = new_page(chromium)
    member.goto(link)
    member.locator("#password").fill(PASSWORD)
    member.locator("#password_again").fill(PASSWORD)
    member.get_by_role("button", name="Set password and join").click()
    expect(member.get_by_text("Welcome")).to_be_visible()
    sign_in(member, served, "writer@example.com")
    expect(member.get_by_role("heading", level=1)).to_have_text("Demo workspace")
    expect(member.get_by_role("link", name="Team")).to_have_count(0)
    member.goto(f"{served.base}/console/team")
    expect(member.get_by_text("cannot manage the team")).to_be_visible()
    member.goto(f"{served.base}/console/keys")
    member.get_by_label("Name").fill("writer's key")
    member.get_by_label("posts:read").check()
    member.get_by_role("button", name="Create key").click()
    key = member.locator("#secret").input_value()
    assert httpx.get(f"{served.base}/v1/context", headers={"Authorization": f"Bearer {key}"}).status_code == 200

    admin.reload()
    admin.locator('tr[data-user="writer@example.com"]').get_by_label("Role of writer@example.com") \
        .select_option("admin")
    admin.get_by_role("button", name="Change role of writer@example.com").click()
    expect(admin.get_by_text("Role changed.")).to_be_visible()
    member.goto(f"{served.base}/console/team")
    expect(member.get_by_role("heading", level=1)).to_contain_text("Team of")

    admin.get_by_role("button", name="Deactivate writer@example.com").click()
    expect(admin.get_by_text("User deactivated")).to_be_visible()
    member.goto(f"{served.base}/console/workspace")
    expect(member).to_have_url(f"{served.base}/console/sign-in?next=%2Fconsole%2Fworkspace")
    assert httpx.get(f"{served.base}/v1/context", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    admin.context.close()
    member.context.close()


def test_brand_voice_edited_in_the_console_shows_over_mcp(chromium: Any, served: Served) -> None:
    page = new_page(chromium)
    sign_in(page, served, served.demo["console"]["email"], served.demo["console"]["password"])
    page.goto(f"{served.base}/console/brands/{served.brand}")
    page.get_by_role("navigation", name="Brand").get_by_role("link", name="Settings").click()
    page.get_by_label("Tone and audience").fill("Warm, plain; for people who brew at home.")
    page.get_by_label("Words to use and avoid, examples").fill("Use: crumb, roast. Avoid: artisanal.")
    page.get_by_label("Time zone").select_option("Europe/Lisbon")
    shot(page, "brand-settings")
    page.get_by_role("button", name="Save brand settings").click()
    expect(page.get_by_text("Brand settings saved")).to_be_visible()

    async def read(rt: Runtime) -> dict[str, Any]:
        from mcp.client import Client

        from server.mcp_server.selection import Selection
        from tools.toolsets import TOOLSETS

        app = McpApp(rt, Dispatcher(rt), selection=Selection(toolsets=tuple(t.name for t in TOOLSETS)),
                     key=served.key)
        async with Client(app.server, mode="legacy") as client:
            result = await client.call_tool("get_brand_context", {"brand_id": served.brand})
        return result.structured_content["data"]

    ctx = served.in_thread(read)
    assert ctx["voice"]["profile"] == "Warm, plain; for people who brew at home."
    assert ctx["voice"]["strategy"] == "Use: crumb, roast. Avoid: artisanal." and ctx["brand"]["timezone"] == \
        "Europe/Lisbon"
    page.context.close()
