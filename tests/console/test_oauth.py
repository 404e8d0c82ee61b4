"""MCP authorization end to end over real HTTP (uvicorn): discovery (RFC 9728, RFC 8414), dynamic registration
(RFC 7591), authorization code with PKCE through the console's consent page, a tool call with the token,
refresh, revocation → 401; and the refusals (bad PKCE, foreign resource, reused code, REST)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import _env
from tests.console.support import csrf_of, make_user, sign_in, value_of
from tests.mcp.support import envelope, http_client, serving

pytestmark = pytest.mark.anyio

PUBLIC = "http://127.0.0.1:8000"  # the issuer and resource names; requests go to the served port
REDIRECT = "http://127.0.0.1:9/callback"


@pytest.fixture
async def oenv(backend, tmp_path) -> AsyncIterator:
    async for env in _env(backend, tmp_path, public_url=PUBLIC):
        yield env


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def authorize(http: httpx.AsyncClient, browser: httpx.AsyncClient, client_id: str, challenge: str,
                    scope: str = "brands:read posts:read", resource: str = f"{PUBLIC}/mcp") -> httpx.Response:
    resp = await http.get("/authorize", params={
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
        "code_challenge_method": "S256", "state": "st-1", "scope": scope, "resource": resource})
    return resp


async def test_mcp_authorization_end_to_end(oenv) -> None:
    env = oenv
    ws = await env.workspace()
    brand = await env.brand(ws, "Brand A")
    await env.brand(ws, "Brand B")
    await make_user(env, ws, "admin@a.example", "admin")
    async with serving(env.app) as base, httpx.AsyncClient(base_url=base, timeout=20) as http, \
            httpx.AsyncClient(base_url=base, timeout=20) as browser:
        # 401 from /mcp names the protected resource metadata
        refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                  headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 401
        assert (f'resource_metadata="{PUBLIC}/.well-known/oauth-protected-resource/mcp"'
                in refused.headers["www-authenticate"])
        prm = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert prm["resource"] == f"{PUBLIC}/mcp" and prm["authorization_servers"] == [f"{PUBLIC}/"]
        assert (await http.get("/.well-known/oauth-protected-resource")).json() == prm
        meta = (await http.get("/.well-known/oauth-authorization-server")).json()
        assert meta["code_challenge_methods_supported"] == ["S256"]
        assert {"authorization_code", "refresh_token"} <= set(meta["grant_types_supported"])
        assert meta["registration_endpoint"] == f"{PUBLIC}/register"

        reg = await http.post("/register", json={"redirect_uris": [REDIRECT], "client_name": "Test agent",
                                                 "token_endpoint_auth_method": "none",
                                                 "grant_types": ["authorization_code", "refresh_token"],
                                                 "response_types": ["code"]})
        assert reg.status_code == 201, reg.text
        client_id = reg.json()["client_id"]
        assert "client_secret" not in reg.json() or reg.json()["client_secret"] is None

        verifier, challenge = pkce()
        start = await authorize(http, browser, client_id, challenge)
        assert start.status_code == 302
        consent_url = start.headers["location"]
        assert consent_url.startswith(f"{PUBLIC}/console/oauth/consent?request=")
        consent_path = consent_url.removeprefix(PUBLIC)
        # not signed in: sign in first, then back to the consent page
        bounced = await browser.get(consent_path)
        assert bounced.status_code == 303 and "/console/sign-in?next=" in bounced.headers["location"]
        page = await browser.get(bounced.headers["location"])
        assert 'name="next"' in page.text
        next_value = value_of(page.text, "next").replace("&amp;", "&")
        signed = await browser.post("/console/sign-in", data={"csrf": csrf_of(page.text), "email": "admin@a.example",
                                                              "password": "correct horse battery staple",
                                                              "next": next_value})
        assert signed.status_code == 303 and signed.headers["location"] == consent_path
        consent = await browser.get(consent_path)
        assert consent.status_code == 200 and "Test agent" in consent.text and "posts:read" in consent.text
        assert "form-action 'self' http://127.0.0.1:9" in consent.headers["content-security-policy"]
        request_token = value_of(consent.text, "request")
        answer = await browser.post("/console/oauth/consent", data={
            "csrf": csrf_of(consent.text), "request": request_token, "decision": "allow",
            "scopes": ["brands:read", "posts:read"], "restrict": "1", "brand_ids": [brand.id]})
        assert answer.status_code == 303, answer.text
        back = urlsplit(answer.headers["location"])
        assert f"{back.scheme}://{back.netloc}{back.path}" == REDIRECT
        query = parse_qs(back.query)
        assert query["state"] == ["st-1"]
        code = query["code"][0]

        wrong = await http.post("/token", data={"grant_type": "authorization_code", "code": code,
                                                "redirect_uri": REDIRECT, "client_id": client_id,
                                                "code_verifier": "x" * 50, "resource": f"{PUBLIC}/mcp"})
        assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
        token = await http.post("/token", data={"grant_type": "authorization_code", "code": code,
                                                "redirect_uri": REDIRECT, "client_id": client_id,
                                                "code_verifier": verifier, "resource": f"{PUBLIC}/mcp"})
        assert token.status_code == 200, token.text
        tokens = token.json()
        assert tokens["token_type"] == "Bearer" and tokens["expires_in"] > 0 and tokens["refresh_token"]

        # a tool call with the token: the authority is exactly what was granted
        async with http_client(base + "/mcp", tokens["access_token"]) as mcp:
            ctx = envelope(await mcp.call_tool("get_context", {}))["data"]
        assert ctx["api_key"]["scopes"] == ["brands:read", "posts:read"]
        assert [b["id"] for b in ctx["brands"]] == [brand.id]
        # the token is for /mcp only: the REST API does not take it
        assert (await http.get("/v1/context", headers={"Authorization": f"Bearer {tokens['access_token']}"})
                ).status_code == 401

        # refresh rotates both tokens
        refreshed = await http.post("/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                    "refresh_token": tokens["refresh_token"]})
        assert refreshed.status_code == 200, refreshed.text
        new = refreshed.json()
        assert new["access_token"] != tokens["access_token"] and new["refresh_token"] != tokens["refresh_token"]
        old = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                              headers={"Authorization": f"Bearer {tokens['access_token']}",
                                       "Accept": "application/json, text/event-stream"})
        assert old.status_code == 401
        async with http_client(base + "/mcp", new["access_token"]) as mcp:
            assert envelope(await mcp.call_tool("get_context", {}))["success"] is True

        # the grant is listed beside API keys; revoking the token ends it
        keys_page = (await browser.get("/console/keys")).text
        assert "MCP: Test agent" in keys_page
        # a public client revokes with its client_id alone (RFC 7009; more in test_oauth_rfcs.py)
        revoked = await http.post("/revoke", data={"token": new["refresh_token"], "client_id": client_id})
        assert revoked.status_code == 200
        after = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Authorization": f"Bearer {new['access_token']}",
                                         "Accept": "application/json, text/event-stream"})
        assert after.status_code == 401 and "resource_metadata=" in after.headers["www-authenticate"]
        assert (await http.post("/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                "refresh_token": new["refresh_token"]})).status_code == 400
        again = await http.post("/token", data={"grant_type": "authorization_code", "code": code,
                                                "redirect_uri": REDIRECT, "client_id": client_id,
                                                "code_verifier": verifier})
        assert again.status_code == 400  # a code works once (a replay revokes its grant: test_oauth_rfcs.py)

        # refusals: a foreign resource indicator, a denied consent
        _, challenge2 = pkce()
        foreign = await authorize(http, browser, client_id, challenge2, resource="https://elsewhere.example/mcp")
        assert foreign.status_code == 302 and "error=invalid_target" in foreign.headers["location"]
        start = await authorize(http, browser, client_id, challenge2)
        consent = await browser.get(start.headers["location"].removeprefix(PUBLIC))
        denied = await browser.post("/console/oauth/consent", data={
            "csrf": csrf_of(consent.text), "decision": "deny",
            "request": value_of(consent.text, "request")})
        assert denied.status_code == 303 and "error=access_denied" in denied.headers["location"]
        # and a consent without the CSRF token changes nothing
        assert (await browser.post("/console/oauth/consent", data={"decision": "allow"})).status_code == 403


async def test_a_member_cannot_grant_what_the_role_lacks(oenv) -> None:
    env = oenv
    ws = await env.workspace()
    await make_user(env, ws, "member@a.example", "member")
    async with serving(env.app) as base, httpx.AsyncClient(base_url=base, timeout=20) as http, \
            httpx.AsyncClient(base_url=base, timeout=20) as browser:
        reg = await http.post("/register", json={"redirect_uris": [REDIRECT], "client_name": "Greedy",
                                                 "token_endpoint_auth_method": "none"})
        client_id = reg.json()["client_id"]
        _, challenge = pkce()
        start = await authorize(http, browser, client_id, challenge, scope="posts:read publish:execute")
        assert (await sign_in(browser, "member@a.example")).status_code == 303
        consent = await browser.get(start.headers["location"].removeprefix(PUBLIC))
        assert "your role cannot grant it" in consent.text
        refused = await browser.post("/console/oauth/consent", data={
            "csrf": csrf_of(consent.text), "decision": "allow", "restrict": "0",
            "request": value_of(consent.text, "request"),
            "scopes": ["posts:read", "publish:execute"]})
        assert refused.status_code == 403 and "publish:execute" in refused.text


async def test_registration_is_rate_limited_per_address(oenv) -> None:
    from server.mounts.oauth import REGISTRATIONS_PER_HOUR
    body = {"redirect_uris": [REDIRECT], "client_name": "Flood", "token_endpoint_auth_method": "none"}
    for _ in range(REGISTRATIONS_PER_HOUR):
        assert (await oenv.rest.post("/register", json=body)).status_code == 201
    refused = await oenv.rest.post("/register", json=body)
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert (await oenv.row_counts())["oauth_clients"] == REGISTRATIONS_PER_HOUR
