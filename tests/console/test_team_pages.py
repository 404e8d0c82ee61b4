"""Issue 31 over HTTP (ASGI): the team page (invite -> accept -> sign in -> role -> deactivate), the network apps
page, OAuth connects started from the accounts page and landing back on it (X; Tumblr through the chooser), brand
settings read back over MCP, and the refusals (members, other workspaces, CSRF, the secret never shown).
Browser flows: tests/console/test_team_browser.py.

The networks' token endpoints are answered by respx as their references describe them:
X: POST https://api.x.com/2/oauth2/token, HTTP Basic client authentication, JSON {token_type, expires_in,
access_token, scope, refresh_token} (https://docs.x.com/fundamentals/authentication/oauth-2-0/user-access-token);
GET /2/users/me -> {"data": {id, name, username}} (https://docs.x.com/x-api/users/get-my-user).
Tumblr: POST https://api.tumblr.com/v2/oauth2/token, GET /v2/user/info with the user's blogs
(https://www.tumblr.com/docs/en/api/v2#oauth2-authorization, #userinfo--get-a-users-information).
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx
from mcp.types import TextResourceContents
from sqlmodel import select

from providers import tumblr, x
from storage.tables.integrations import Integration
from tests.console.support import PASSWORD, client, csrf_of, make_user, sign_in, signed_in
from tests.mcp.support import in_memory

pytestmark = pytest.mark.anyio
SECRET = "x-client-SECRET-never-shown"
ACCESS, REFRESH = "x-access-SECRET", "x-refresh-SECRET"


async def _world(env):
    ws = await env.workspace("Workspace A")
    brand = await env.brand(ws, "Brand A")
    await make_user(env, ws, "admin@a.example", "admin")
    return ws, brand


async def post(browser: httpx.AsyncClient, page: str, action: str, **data) -> httpx.Response:
    html = (await browser.get(page)).text
    return await browser.post(action, data={"csrf": csrf_of(html), **data})


async def test_invite_accept_role_and_deactivate(env) -> None:
    _ws, brand = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    team = await admin.get("/console/team")
    assert team.status_code == 200 and "admin@a.example" in team.text and "Invite" in team.text

    resp = await post(admin, "/console/team", "/console/team/invite", email="New@A.example", role="member")
    assert resp.status_code == 303 and resp.headers["location"] == "/console/team?notice=invited"
    shown = await admin.get(resp.headers["location"])
    link_match = re.search(r'id="invite-link" value="([^"]+)"', shown.text)
    assert link_match is not None
    link = link_match.group(1)
    assert "Invitation created." in shown.text
    assert link.startswith("http://testserver/console/invitations/")
    assert link not in (await admin.get("/console/team")).text  # shown once

    # the invited person sets a password (a browser with no session), then signs in
    guest = client(env)
    path = urlsplit(link).path
    page = await guest.get(path)
    assert page.status_code == 200 and "new@a.example" in page.text
    differ = await guest.post(path, data={"csrf": csrf_of(page.text), "password": PASSWORD, "password_again": "x"})
    assert differ.status_code == 422 and "differ" in differ.text
    no_csrf = await guest.post(path, data={"password": PASSWORD, "password_again": PASSWORD})
    assert no_csrf.status_code == 403
    done = await guest.post(path, data={"csrf": csrf_of(page.text), "password": PASSWORD,
                                        "password_again": PASSWORD, "name": "New Person"})
    assert done.status_code == 303 and done.headers["location"] == "/console/sign-in?notice=welcome"
    again = await guest.get(path)
    assert again.status_code == 404 and "already used" in again.text  # single use

    member = await signed_in(env, "new@a.example")
    assert (await member.get("/console/workspace")).status_code == 200
    for path in ("/console/team", "/console/apps", f"/console/brands/{brand.id}/settings"):
        refused = await member.get(path)
        assert refused.status_code == 403, path
    refused = await post(member, "/console/workspace", "/console/team/invite", email="x@a.example")
    assert refused.status_code == 403
    refused = await post(member, "/console/workspace", "/console/apps/x", client_id="id", client_secret="s")
    assert refused.status_code == 403
    refused = await post(member, "/console/workspace", f"/console/brands/{brand.id}/settings", name="Hijack")
    assert refused.status_code == 403

    listed = (await admin.get("/console/team")).text
    user_id_match = re.search(r'data-user="new@a.example">.*?<code>(usr_[^<]+)</code>', listed, re.S)
    assert user_id_match is not None
    user_id = user_id_match.group(1)
    resp = await post(admin, "/console/team", f"/console/team/{user_id}/role", role="admin")
    assert resp.status_code == 303
    assert (await member.get("/console/team")).status_code == 200  # an admin now, at once

    # a key the member made acts until deactivation, then both it and the session are refused at once
    created = await post(member, "/console/keys", "/console/keys", name="mine", scopes="posts:read")
    assert created.status_code == 303
    secret_match = re.search(r"(socialpub_live_[A-Za-z0-9_\-]+)", (await member.get("/console/keys")).text)
    assert secret_match is not None
    secret = secret_match.group(1)
    assert (await env.rest.get("/v1/context", headers=env.auth(secret))).status_code == 200
    resp = await post(admin, "/console/team", f"/console/team/{user_id}/deactivate")
    assert resp.status_code == 303
    assert (await env.rest.get("/v1/context", headers=env.auth(secret))).status_code == 401
    gone = await member.get("/console/workspace")
    assert gone.status_code == 303 and gone.headers["location"].startswith("/console/sign-in")
    assert (await sign_in(client(env), "new@a.example")).status_code == 401

    # the last admin cannot be demoted or deactivated (from the page either)
    me_id_match = re.search(r'data-user="admin@a.example">.*?<code>(usr_[^<]+)</code>', listed, re.S)
    assert me_id_match is not None
    me_id = me_id_match.group(1)
    refused = await post(admin, "/console/team", f"/console/team/{me_id}/deactivate")
    assert refused.status_code == 422 and "last admin" in refused.text


async def test_refusals_across_workspaces_and_without_csrf(env) -> None:
    _, brand = await _world(env)
    other_ws = await env.workspace("Workspace B")
    other = await env.brand(other_ws, "Brand B")
    await make_user(env, other_ws, "admin@b.example", "admin")
    a = await signed_in(env, "admin@a.example")
    listed = (await a.get("/console/team")).text
    a_id_match = re.search(r"<code>(usr_[^<]+)</code>", listed)
    assert a_id_match is not None
    a_id = a_id_match.group(1)
    b = await signed_in(env, "admin@b.example")
    assert "admin@a.example" not in (await b.get("/console/team")).text
    for action, data in ((f"/console/team/{a_id}/role", {"role": "member"}),
                         (f"/console/team/{a_id}/deactivate", {})):
        refused = await post(b, "/console/team", action, **data)
        assert refused.status_code == 422 and "no user" in refused.text
    assert (await b.get(f"/console/brands/{brand.id}/settings")).status_code == 404
    refused = await post(b, "/console/team", f"/console/brands/{brand.id}/settings", name="Hijack")
    assert refused.status_code == 404
    # every new form refuses a post without a CSRF token
    for action in ("/console/team/invite", f"/console/team/{a_id}/role", f"/console/team/{a_id}/brands",
                   f"/console/team/{a_id}/deactivate", "/console/apps/x", f"/console/brands/{other.id}/settings",
                   f"/console/brands/{other.id}/accounts/oauth/x"):
        refused = await b.post(action, data={"role": "member", "email": "z@b.example", "client_id": "i"})
        assert refused.status_code == 403 and "security token" in refused.text, action


async def _set_app(admin: httpx.AsyncClient, platform: str, client_id: str) -> None:
    resp = await post(admin, "/console/apps", f"/console/apps/{platform}", client_id=client_id, client_secret=SECRET)
    assert resp.status_code == 303, resp.text


async def test_x_connect_from_the_accounts_page(env, caplog) -> None:
    _, brand = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    accounts = await admin.get(f"/console/brands/{brand.id}/accounts")
    assert "No X app is configured" in accounts.text and "/console/apps#app-x" in accounts.text
    apps = await admin.get("/console/apps")
    assert "http://testserver/connect/x/callback" in apps.text and "tweet.write" in apps.text
    await _set_app(admin, "x", "x-client-id")
    apps = await admin.get("/console/apps")
    assert "x-client-id" in apps.text and "configured" in apps.text

    accounts = await admin.get(f"/console/brands/{brand.id}/accounts")
    assert "https://x.com" in accounts.headers["content-security-policy"]
    sent = await admin.post(f"/console/brands/{brand.id}/accounts/oauth/x", data={"csrf": csrf_of(accounts.text)})
    assert sent.status_code == 303
    target = urlsplit(sent.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == x.AUTHORIZE_URL
    q = {k: v[0] for k, v in parse_qs(target.query).items()}
    assert q["client_id"] == "x-client-id" and q["redirect_uri"] == "http://testserver/connect/x/callback"
    assert q["response_type"] == "code" and q["code_challenge_method"] == "S256" and len(q["state"]) >= 32
    assert q["scope"] == " ".join(x.SCOPES)

    with respx.mock(assert_all_mocked=True, assert_all_called=True) as router:
        token = router.post(f"{x.API_URL}/2/oauth2/token").mock(return_value=httpx.Response(200, json={
            "token_type": "bearer", "expires_in": 7200, "access_token": ACCESS, "scope": " ".join(x.SCOPES),
            "refresh_token": REFRESH}))
        router.get(f"{x.API_URL}/2/users/me").mock(return_value=httpx.Response(200, json={
            "data": {"id": "2244994945", "name": "Roastery", "username": "roastery"}}))
        back = await env.rest.get("/connect/x/callback", params={"state": q["state"], "code": "code-1"})
    assert back.status_code == 303
    assert back.headers["location"] == f"/console/brands/{brand.id}/accounts?notice=connected"
    request = token.calls[0].request
    form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
    assert form["code"] == "code-1" and form["redirect_uri"] == q["redirect_uri"] and form["code_verifier"]
    assert request.headers["authorization"] == "Basic " + base64.b64encode(f"x-client-id:{SECRET}".encode()).decode()
    page = await admin.get(back.headers["location"])
    assert "Account connected." in page.text and "roastery" in page.text

    # a refused connect (replayed state) lands back on the page with the message
    replay = await env.rest.get("/connect/x/callback", params={"state": q["state"], "code": "code-1"})
    assert replay.status_code == 303
    shown = await admin.get(replay.headers["location"])
    assert "already used" in shown.text and shown.status_code == 200
    forged = await admin.get(f"/console/brands/{brand.id}/accounts?connect_error=made-up")
    assert "made-up" not in forged.text

    async with env.db.session(write=False) as s:
        row = (await s.exec(select(Integration).where(Integration.platform == "x"))).one()
    resp = await post(admin, f"/console/brands/{brand.id}/accounts",
                      f"/console/brands/{brand.id}/accounts/{row.id}/disconnect")
    assert resp.status_code == 303
    resp = await post(admin, f"/console/brands/{brand.id}/accounts",
                      f"/console/brands/{brand.id}/accounts/{row.id}/reconnect-oauth")
    assert resp.status_code == 303 and resp.headers["location"].startswith(x.AUTHORIZE_URL)
    state = parse_qs(urlsplit(resp.headers["location"]).query)["state"][0]
    with respx.mock(assert_all_mocked=True) as router:
        router.post(f"{x.API_URL}/2/oauth2/token").mock(return_value=httpx.Response(200, json={
            "token_type": "bearer", "expires_in": 7200, "access_token": ACCESS, "scope": " ".join(x.SCOPES)}))
        router.get(f"{x.API_URL}/2/users/me").mock(return_value=httpx.Response(200, json={
            "data": {"id": "2244994945", "name": "Roastery", "username": "roastery"}}))
        back = await env.rest.get("/connect/x/callback", params={"state": state, "code": "code-2"})
    assert back.headers["location"].endswith("notice=connected")
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, row.id)).status == "connected"

    # the client secret never appears in a page, a response or the log
    for path in ("/console/apps", f"/console/brands/{brand.id}/accounts", "/console/team", "/console/workspace"):
        assert SECRET not in (await admin.get(path)).text
    assert SECRET not in caplog.text and ACCESS not in caplog.text


async def test_tumblr_connect_through_the_chooser(env) -> None:
    _, brand = await _world(env)
    admin = await signed_in(env, "admin@a.example")
    await _set_app(admin, "tumblr", "tumblr-client")
    resp = await post(admin, f"/console/brands/{brand.id}/accounts", f"/console/brands/{brand.id}/accounts/oauth/tumblr")
    q = {k: v[0] for k, v in parse_qs(urlsplit(resp.headers["location"]).query).items()}
    with respx.mock(assert_all_mocked=True) as router:
        router.post(f"{tumblr.API_URL}/v2/oauth2/token").mock(return_value=httpx.Response(200, json={
            "access_token": ACCESS, "expires_in": 2520, "token_type": "bearer", "refresh_token": REFRESH}))
        router.get(f"{tumblr.API_URL}/v2/user/info").mock(return_value=httpx.Response(200, json={
            "meta": {"status": 200, "msg": "OK"}, "response": {"user": {"name": "roaster", "blogs": [
                {"name": "roastery-news", "uuid": "t:news", "primary": False, "title": "News"},
                {"name": "roastery", "uuid": "t:main", "primary": True, "title": "Roastery"}]}}}))
        back = await env.rest.get("/connect/tumblr/callback", params={"state": q["state"], "code": "c"})
    assert back.status_code == 303 and back.headers["location"].endswith("/choose")
    chooser = await admin.get(back.headers["location"])
    assert chooser.status_code == 200 and "roastery-news" in chooser.text and "t:main" in chooser.text
    done = await admin.post(back.headers["location"], data={"csrf": csrf_of(chooser.text), "account": "t:news"})
    assert done.status_code == 303 and done.headers["location"].endswith("notice=connected")
    async with env.db.session(write=False) as s:
        row = (await s.exec(select(Integration).where(Integration.platform == "tumblr"))).one()
    assert row.provider_account_id == "t:news"


async def test_brand_settings_show_in_brand_context_over_mcp(env) -> None:
    ws, brand = await _world(env)
    key = await env.key(ws, role="admin")
    admin = await signed_in(env, "admin@a.example")
    page = await admin.get(f"/console/brands/{brand.id}/settings")
    assert page.status_code == 200 and 'name="voice_profile"' in page.text
    bad = await admin.post(f"/console/brands/{brand.id}/settings", data={
        "csrf": csrf_of(page.text), "name": "Brand A", "timezone": "Mars/Base", "voice_profile": "Kept as typed"})
    assert bad.status_code == 422 and "unknown IANA timezone" in bad.text and "Kept as typed" in bad.text
    resp = await admin.post(f"/console/brands/{brand.id}/settings", data={
        "csrf": csrf_of(page.text), "name": "Brand A", "timezone": "Europe/Lisbon", "website": "https://a.example",
        "voice_profile": "Warm, plain; for home bakers.", "voice_strategy": "Use: crumb. Avoid: artisanal.",
        "colors": "#112233"})
    assert resp.status_code == 303
    async with in_memory(env, key) as mcp:
        result = await mcp.read_resource(f"socialpub://brands/{brand.id}/context")
        assert isinstance(result.contents[0], TextResourceContents)
        ctx = json.loads(result.contents[0].text)
        tool = await mcp.call_tool("get_brand_context", {"brand_id": brand.id})
    assert ctx["voice"]["profile"] == "Warm, plain; for home bakers." and ctx["brand"]["timezone"] == "Europe/Lisbon"
    assert ctx["voice"]["strategy"] == "Use: crumb. Avoid: artisanal." and ctx["identity"]["colors"] == ["#112233"]
    assert tool.structured_content["data"]["voice"]["profile"] == "Warm, plain; for home bakers."


async def test_root_sends_browsers_to_the_console_and_errors_link_back(env) -> None:
    _, brand = await _world(env)
    html = await env.rest.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert html.status_code == 303 and html.headers["location"] == "/console/"
    api = await env.rest.get("/", headers={"Accept": "application/json"})
    assert api.status_code == 404 and api.json()["error"]["code"] == "NOT_FOUND"
    admin = await signed_in(env, "admin@a.example")
    missing = await admin.get(f"/console/brands/{brand.id}/schedules/sch_nope")
    assert f'href="/console/brands/{brand.id}/schedules/sch_nope"' in missing.text
    referer = f"http://testserver/console/brands/{brand.id}/accounts"
    page = await admin.get(f"/console/brands/{brand.id}/accounts")
    refused = await admin.post(f"/console/brands/{brand.id}/accounts/oauth/x", data={"csrf": csrf_of(page.text)},
                               headers={"Referer": referer})
    assert refused.status_code == 422 and f'href="/console/brands/{brand.id}/accounts"' in refused.text
    workspace = (await admin.get("/console/workspace")).text
    assert "Media storage per brand" in workspace and "bytes per brand" not in workspace
