"""YouTube, Pinterest, Tumblr and Google Business Profile connects through their public surfaces: the CLI's
`integrations connect --oauth` (a subprocess) prints each network's authorize URL with its documented scopes;
the callback `GET /connect/{platform}/callback` exchanges the code (respx answering each network per its
reference) and stores a sealed account with its refresh token and the app's client credentials; a reconnect
whose token answer carries no refresh token keeps the stored one; Tumblr blogs and Business Profile locations
are selectable; and Pinterest's boards are served live as the targets dynamic options, each failure rule an
explicit error (reconnection needed, malformed provider data, dependency failure), never stale choices."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx
from sqlmodel import select

from providers import google, google_business, pinterest, tumblr, youtube
from storage import vault
from storage.tables.integrations import Integration
from tests.networks.support import Flow, assert_no_secrets
from tools.networks import apps, oauth
from tools.networks import connect as networks

pytestmark = pytest.mark.anyio
SECRET = "app-client-secret-SECRET"
ACCESS = "access-connected-SECRET"
REFRESH = "refresh-connected-SECRET"
CLI = str(Path(sys.executable).parent / "socialpub")
AUTHORIZE = {"youtube": google.AUTHORIZE_URL, "google_business": google.AUTHORIZE_URL,
             "pinterest": pinterest.AUTHORIZE_URL, "tumblr": tumblr.AUTHORIZE_URL}


def test_cli_connect_prints_each_networks_authorize_url(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(tmp_path), SOCIALPUB_PUBLIC_URL="https://pub.example")
    for platform in AUTHORIZE:
        env[f"SOCIALPUB_{platform.upper()}_CLIENT_ID"] = f"id-{platform}"
        env[f"SOCIALPUB_{platform.upper()}_CLIENT_SECRET"] = SECRET

    def run(*argv: str) -> str:
        done = subprocess.run([CLI, *argv], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
        return done.stdout

    brand = json.loads(run("init", "--demo", "--json"))["brands"][0]["id"]
    for platform, endpoint in AUTHORIZE.items():
        out = json.loads(run("integrations", "connect", "--brand", brand, "--platform", platform, "--oauth", "--json"))
        url = urlsplit(out["authorize_url"])
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        assert f"{url.scheme}://{url.netloc}{url.path}" == endpoint
        assert q["client_id"] == f"id-{platform}" and q["response_type"] == "code" and q["state"]
        assert q["redirect_uri"] == f"https://pub.example/connect/{platform}/callback"
        if platform == "pinterest":  # no PKCE: Pinterest's described code exchange has no code_verifier
            assert "code_challenge" not in q and "code_challenge_method" not in q
        else:
            assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43
        scopes = {"youtube": " ".join(youtube.SCOPES), "google_business": " ".join(google_business.SCOPES),
                  "pinterest": ",".join(pinterest.SCOPES), "tumblr": " ".join(tumblr.SCOPES)}[platform]
        assert q["scope"] == scopes
        if platform in ("youtube", "google_business"):  # a refresh token on every consent
            assert q["access_type"] == "offline" and q["prompt"] == "consent"
        if platform == "tumblr":
            assert "offline_access" in q["scope"].split()


def _mock(router: respx.MockRouter, platform: str, *, refresh: bool = True) -> respx.Route:
    """The network's token endpoint and account reads, as its reference describes them."""
    token = {"access_token": ACCESS, "expires_in": 3599, "token_type": "Bearer",
             **({"refresh_token": REFRESH} if refresh else {})}
    if platform in ("youtube", "google_business"):
        route = router.post(google.TOKEN_URL).mock(return_value=httpx.Response(200, json=token))
    elif platform == "pinterest":
        route = router.post(f"{pinterest.API_URL}/v5/oauth/token").mock(return_value=httpx.Response(200, json=token))
    else:
        route = router.post(f"{tumblr.API_URL}/v2/oauth2/token").mock(return_value=httpx.Response(200, json=token))
    if platform == "youtube":
        router.get(f"{youtube.API_URL}/youtube/v3/channels").mock(return_value=httpx.Response(200, json={"items": [{
            "id": "UCroastery", "snippet": {"title": "Roastery", "customUrl": "@roastery"},
            "contentDetails": {"relatedPlaylists": {"uploads": "UUroastery"}}}]}))
    elif platform == "pinterest":
        router.get(f"{pinterest.API_URL}/v5/user_account").mock(return_value=httpx.Response(200, json={
            "id": "2783136121146311751", "username": "roastery", "account_type": "BUSINESS",
            "business_name": "Roastery"}))
    elif platform == "tumblr":
        router.get(f"{tumblr.API_URL}/v2/user/info").mock(return_value=httpx.Response(200, json={
            "meta": {"status": 200, "msg": "OK"}, "response": {"user": {"name": "roaster", "blogs": [
                {"name": "roastery-news", "uuid": "t:news", "primary": False, "title": "News"},
                {"name": "roastery", "uuid": "t:main", "primary": True, "title": "Roastery"}]}}}))
    else:
        router.get(f"{google_business.ACCOUNTS_URL}/v1/accounts").mock(return_value=httpx.Response(200, json={
            "accounts": [{"name": "accounts/1092", "accountName": "Roastery", "type": "PERSONAL"}]}))
        router.get(f"{google_business.INFO_URL}/v1/accounts/1092/locations").mock(return_value=httpx.Response(
            200, json={"locations": [{"name": "locations/11", "title": "Roastery Main St"},
                                     {"name": "locations/12", "title": "Roastery Harbour"}]}))
    return route


async def _connect(env, flow, platform: str, *, integration_id: str | None = None,
                   refresh: bool = True) -> tuple[Integration, dict[str, str]]:
    await apps.set_app(env.rt, platform, f"id-{platform}", SECRET)
    started = await oauth.start(env.rt, flow.brand.id, platform, integration_id=integration_id)
    state = parse_qs(urlsplit(started["authorize_url"]).query)["state"][0]
    with respx.mock(assert_all_mocked=True) as router:
        token = _mock(router, platform, refresh=refresh)
        done = await env.rest.get(f"/connect/{platform}/callback", params={"state": state, "code": "auth-code-1"})
        request = token.calls[0].request
    assert done.status_code == 200 and "connected" in done.text, done.text
    assert_no_secrets([done.text], [SECRET, ACCESS, REFRESH])
    form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
    assert form["grant_type"] == "authorization_code" and form["code"] == "auth-code-1"
    assert form["redirect_uri"] == started["redirect_uri"]
    assert ("code_verifier" not in form) if platform == "pinterest" else form["code_verifier"]
    if platform == "pinterest":  # HTTP Basic client authentication (OpenAPI security `basic` on /oauth/token)
        basic = base64.b64encode(f"id-{platform}:{SECRET}".encode()).decode()
        assert request.headers["authorization"] == f"Basic {basic}" and "client_secret" not in form
    else:
        assert form["client_id"] == f"id-{platform}" and form["client_secret"] == SECRET
    async with env.db.session(write=False) as s:
        [row] = (await s.exec(select(Integration).where(Integration.platform == platform,
                                                        Integration.provider == platform))).all()
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None
    return row, creds


@pytest.mark.parametrize("platform", list(AUTHORIZE))
async def test_callback_stores_a_sealed_account_and_reconnect_keeps_the_refresh_token(env, platform) -> None:
    flow = await Flow(env).setup()
    row, creds = await _connect(env, flow, platform)
    assert creds["access_token"] == ACCESS and creds["refresh_token"] == REFRESH and creds["expires_at"]
    assert creds["client_id"] == f"id-{platform}" and creds["client_secret"] == SECRET
    assert ACCESS not in json.dumps(row.credentials) and REFRESH not in json.dumps(row.credentials)
    expected = {"youtube": ("UCroastery", "@roastery"), "pinterest": ("2783136121146311751", "roastery"),
                "tumblr": ("t:main", "roastery"), "google_business": ("accounts/1092/locations/11", "Roastery Main St")}
    assert (row.provider_account_id, row.username) == expected[platform]

    again, creds = await _connect(env, flow, platform, integration_id=row.id, refresh=False)
    assert again.id == row.id and again.status == "connected"
    assert creds["refresh_token"] == REFRESH  # a token answer without one never wipes the stored refresh token


@pytest.mark.parametrize(("platform", "other", "name"), [("tumblr", "t:news", "roastery-news"),
                                                         ("google_business", "accounts/1092/locations/12",
                                                          "Roastery Harbour")])
async def test_blog_and_location_selection(env, platform, other, name) -> None:
    flow = await Flow(env).setup()
    row, _ = await _connect(env, flow, platform)
    chosen = await networks.select_account(env.rt, row.id, other)
    assert chosen.provider_account_id == other and chosen.username == name
    assert chosen.provider_state is not None
    assert chosen.provider_state["username"] == name  # the Tumblr permalink names the chosen blog
    with pytest.raises(networks.ConnectError, match="not one of the accounts"):
        await networks.select_account(env.rt, row.id, "t:someone-else")


async def test_pinterest_boards_are_the_live_dynamic_options(env) -> None:
    flow = await Flow(env).setup()
    row, _ = await _connect(env, flow, "pinterest")
    path = f"/v1/brands/{flow.brand.id}/targets/{row.id}/dynamic-options"
    bodies = []
    with respx.mock(assert_all_mocked=True) as router:
        boards = router.get(f"{pinterest.API_URL}/v5/boards").mock(return_value=httpx.Response(200, json={
            "items": [{"id": "549755885175", "name": "Spring roasts", "privacy": "PUBLIC"},
                      {"id": "549755885176", "name": "Brewing", "privacy": "SECRET"}], "bookmark": None}))
        got = await flow.request("GET", path)
        request = boards.calls[0].request
        assert request.headers["authorization"] == f"Bearer {ACCESS}"
        assert parse_qs(request.url.query.decode()) == {"page_size": ["250"]}  # boards/list: 1-250
        assert got["data"]["kind"] == "pinterest_boards"
        assert got["data"]["options"] == [{"value": "549755885175", "label": "Spring roasts"},
                                          {"value": "549755885176", "label": "Brewing"}]

        boards.mock(return_value=httpx.Response(200, json={"items": [], "bookmark": None}))
        empty = await flow.request("GET", path)  # an account without boards yet is a valid answer
        assert empty["data"]["options"] == []

        boards.mock(return_value=httpx.Response(200, json={"items": [{"id": "549755885175"}]}))  # no name
        bad = await env.rest.get(path, headers=env.auth(flow.key))
        assert bad.status_code >= 400 and "provider_malformed_data" in bad.text and "Spring" not in bad.text

        boards.mock(return_value=httpx.Response(503))
        down = await env.rest.get(path, headers=env.auth(flow.key))
        assert down.status_code >= 400 and "DEPENDENCY_UNAVAILABLE" in down.text and "provider_unavailable" in down.text
        assert "Spring" not in down.text  # never the earlier (stale) choices

        boards.mock(return_value=httpx.Response(401, json={"code": 2, "message": "Authentication failed."}))
        gone = await env.rest.post(path, headers=env.auth(flow.key))
        assert gone.status_code >= 400 and "reconnect_integration" in gone.text
        bodies += [json.dumps(got), bad.text, down.text, gone.text]
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, row.id)).status == "needs_reauth"  # the refresh route records it
    assert_no_secrets(bodies, [SECRET, ACCESS, REFRESH])
