"""MCP authorization server, the RFC rules over HTTP (uvicorn): redirect URIs at registration (RFC 7591 §2 and
§3.2.2, RFC 6749 §3.1.2, RFC 8252 §7.3, RFC 9700 §2.1 / §4.1), public-client revocation (RFC 7009 §2.1), grant
revocation on a reused code or rotated refresh token (RFC 6749 §4.1.2 and §10.5, RFC 9700 §4.14.2), and the
resource at the token endpoint (RFC 8707 §2.2). Refusals are checked to change nothing."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlmodel import select

from storage.tables.oauth import OAuthSpentToken
from tests.conftest import _env
from tests.console.support import csrf_of, make_user, sign_in, value_of
from tests.console.test_oauth import PUBLIC, REDIRECT, pkce
from tests.mcp.support import serving
from tools import retention

pytestmark = pytest.mark.anyio

RESOURCE = f"{PUBLIC}/mcp"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
async def oenv(backend, tmp_path) -> AsyncIterator:
    async for env in _env(backend, tmp_path, public_url=PUBLIC):
        yield env


class Session:
    """A served app, an OAuth client's HTTP connection and a signed-in user's browser."""

    def __init__(self, http: httpx.AsyncClient, browser: httpx.AsyncClient) -> None:
        self.http, self.browser = http, browser

    async def register(self, **extra) -> dict:
        body = {"redirect_uris": [REDIRECT], "client_name": "Agent", "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], **extra}
        reg = await self.http.post("/register", json=body)
        assert reg.status_code == 201, reg.text
        return reg.json()

    async def code(self, client_id: str) -> tuple[str, str]:
        """A fresh authorization code (and its PKCE verifier) the user granted through the consent page."""
        verifier, challenge = pkce()
        start = await self.http.get("/authorize", params={
            "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
            "code_challenge_method": "S256", "state": "s", "scope": "brands:read", "resource": RESOURCE})
        assert start.status_code == 302, start.text
        consent = await self.browser.get(start.headers["location"].removeprefix(PUBLIC))
        assert consent.status_code == 200, consent.text
        answer = await self.browser.post("/console/oauth/consent", data={
            "csrf": csrf_of(consent.text), "decision": "allow", "scopes": ["brands:read"], "restrict": "0",
            "request": value_of(consent.text, "request")})
        assert answer.status_code == 303, answer.text
        return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0], verifier

    async def exchange(self, client: dict, code: str, verifier: str, **extra) -> httpx.Response:
        data = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "client_id": client["client_id"], "code_verifier": verifier, **extra}
        if client.get("client_secret"):
            data["client_secret"] = client["client_secret"]
        return await self.http.post("/token", data=data)

    async def tokens(self, client: dict) -> dict:
        code, verifier = await self.code(client["client_id"])
        resp = await self.exchange(client, code, verifier, resource=RESOURCE)
        assert resp.status_code == 200, resp.text
        return resp.json()

    async def refresh(self, client: dict, refresh_token: str, **extra) -> httpx.Response:
        data = {"grant_type": "refresh_token", "client_id": client["client_id"], "refresh_token": refresh_token,
                **extra}
        if client.get("client_secret"):
            data["client_secret"] = client["client_secret"]
        return await self.http.post("/token", data=data)

    async def live(self, access_token: str) -> bool:
        resp = await self.http.post("/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {access_token}",
                                                                "Accept": "application/json, text/event-stream"})
        assert resp.status_code in (200, 401), resp.text
        return resp.status_code == 200


@asynccontextmanager
async def session(env) -> AsyncIterator[Session]:
    ws = await env.workspace()
    await env.brand(ws, "Brand A")
    await make_user(env, ws, "admin@a.example", "admin")
    async with serving(env.app) as base, httpx.AsyncClient(base_url=base, timeout=20) as http, \
            httpx.AsyncClient(base_url=base, timeout=20) as browser:
        assert (await sign_in(browser, "admin@a.example")).status_code == 303
        yield Session(http, browser)


# -- registration: redirect URIs -------------------------------------------------------------------------------

REFUSED_REDIRECTS = [
    "http://evil.example/cb",               # plain http off loopback
    "http://192.168.1.5/cb",                # plain http to a private address is still not loopback
    "http://127.0.0.1.nip.io/cb",           # a name that merely starts like loopback
    "http://localhost.evil.example/cb",
    "javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "file:///etc/passwd",
    "ftp://files.example/cb",
    "com.example.app:/callback",            # private-use schemes: not offered (https or loopback only)
    "https://app.example/cb#frag",          # RFC 6749 §3.1.2: no fragment
    "https://app.example/cb#",              # not even an empty one
    "https://user:secret@app.example/cb",   # userinfo
    "https://user@app.example/cb",
    "http://user@127.0.0.1:8080/cb",
    "https:///cb",                          # no host
    "https:app.example/cb",
    "/relative/cb",
    "https://app.example\\@evil.example/cb",
    "https://app .example/cb",
    "https://app.example/c\nb",
    "https://app.example:99999/cb",         # no such port
    "https://" + "a" * 2100 + ".example/cb",
]

ACCEPTED_REDIRECTS = [
    "https://app.example/oauth/callback",
    "https://app.example:8443/cb?x=1",
    "HTTPS://App.Example/cb",
    "http://127.0.0.1:8765/callback",
    "http://127.0.0.1/callback",
    "http://[::1]:8765/callback",
    "http://localhost:3000/callback",
    "http://LOCALHOST/callback",
]


@pytest.mark.parametrize("uri", REFUSED_REDIRECTS)
async def test_registration_refuses_an_unsafe_redirect_uri(oenv, uri) -> None:
    before = (await oenv.row_counts())["oauth_clients"]
    for uris in ([uri], ["https://good.example/cb", uri]):  # one bad URI spoils the registration
        resp = await oenv.rest.post("/register", json={"redirect_uris": uris, "token_endpoint_auth_method": "none"},
                                    headers={"Origin": "https://inspector.example"})
        assert resp.status_code == 400, (uri, resp.text)
        assert resp.headers["access-control-allow-origin"] == "*"  # a browser client can read why
        body = resp.json()
        assert body["error"] == "invalid_redirect_uri", (uri, body)
        assert body["error_description"]
    assert (await oenv.row_counts())["oauth_clients"] == before


async def test_registration_accepts_https_and_loopback_redirect_uris(oenv) -> None:
    resp = await oenv.rest.post("/register", json={"redirect_uris": ACCEPTED_REDIRECTS,
                                                   "token_endpoint_auth_method": "none"})
    assert resp.status_code == 201, resp.text
    assert len(resp.json()["redirect_uris"]) == len(ACCEPTED_REDIRECTS)


async def test_registration_bounds_the_redirect_uri_list(oenv) -> None:
    many = [f"https://app.example/cb{n}" for n in range(21)]
    resp = await oenv.rest.post("/register", json={"redirect_uris": many, "token_endpoint_auth_method": "none"})
    assert resp.status_code == 400 and resp.json()["error"] == "invalid_redirect_uri"
    resp = await oenv.rest.post("/register", json={"redirect_uris": many[:20], "token_endpoint_auth_method": "none"})
    assert resp.status_code == 201, resp.text


# -- revocation (RFC 7009) --------------------------------------------------------------------------------------

async def test_a_public_client_revokes_without_a_client_secret(oenv) -> None:
    async with session(oenv) as s:
        client = await s.register()
        other = await s.register(client_name="Other")
        tokens = await s.tokens(client)
        assert await s.live(tokens["access_token"])
        # another client may not revoke it: refused, and the token lives on
        foreign = await s.http.post("/revoke", data={"token": tokens["access_token"],
                                                     "client_id": other["client_id"]})
        assert foreign.status_code == 400 and foreign.json()["error"] == "unauthorized_client"
        assert await s.live(tokens["access_token"])
        # an unknown client, a missing token: refused
        unknown = await s.http.post("/revoke", data={"token": tokens["access_token"], "client_id": "nope"})
        assert unknown.status_code == 401 and unknown.json()["error"] == "invalid_client"
        missing = await s.http.post("/revoke", data={"client_id": client["client_id"]})
        assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"
        assert await s.live(tokens["access_token"])
        # RFC 7009 §2.1: client_id alone, no client_secret at all
        revoked = await s.http.post("/revoke", data={"token": tokens["access_token"],
                                                     "token_type_hint": "access_token",
                                                     "client_id": client["client_id"]})
        assert revoked.status_code == 200, revoked.text
        assert revoked.headers["cache-control"] == "no-store"
        assert not await s.live(tokens["access_token"])
        assert (await s.refresh(client, tokens["refresh_token"])).status_code == 400  # the whole grant ended
        # an unknown or already revoked token: 200 (RFC 7009 §2.2), an unknown hint is ignored
        for token, hint in ((tokens["refresh_token"], "refresh_token"), ("socialpub_oat_unknown", "id_token")):
            again = await s.http.post("/revoke", data={"token": token, "token_type_hint": hint,
                                                       "client_id": client["client_id"]})
            assert again.status_code == 200, again.text


async def test_a_confidential_client_must_authenticate_to_revoke(oenv) -> None:
    async with session(oenv) as s:
        client = await s.register(token_endpoint_auth_method="client_secret_post")
        assert client["client_secret"]
        tokens = await s.tokens(client)
        for data in ({}, {"client_secret": ""}, {"client_secret": "wrong"}):
            refused = await s.http.post("/revoke", data={"token": tokens["refresh_token"],
                                                         "client_id": client["client_id"], **data})
            assert refused.status_code == 401 and refused.json()["error"] == "invalid_client", data
        assert await s.live(tokens["access_token"])
        done = await s.http.post("/revoke", data={"token": tokens["refresh_token"], "client_id": client["client_id"],
                                                  "client_secret": client["client_secret"]})
        assert done.status_code == 200
        assert not await s.live(tokens["access_token"])


# -- grant reuse ----------------------------------------------------------------------------------------------

async def test_a_reused_code_revokes_the_tokens_issued_from_it(oenv) -> None:
    async with session(oenv) as s:
        client = await s.register()
        code, verifier = await s.code(client["client_id"])
        first = await s.exchange(client, code, verifier)
        assert first.status_code == 200, first.text
        tokens = first.json()
        assert await s.live(tokens["access_token"])
        again = await s.exchange(client, code, verifier)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
        assert not await s.live(tokens["access_token"])
        assert (await s.refresh(client, tokens["refresh_token"])).status_code == 400
        # another grant of the same client and user is untouched
        other = await s.tokens(client)
        assert await s.live(other["access_token"])
        # a code presented by a client it was not issued to revokes nothing
        code2, verifier2 = await s.code(client["client_id"])
        third = await s.exchange(client, code2, verifier2)
        stranger = await s.register(client_name="Stranger")
        assert (await s.exchange(stranger, code2, verifier2)).status_code == 400
        assert await s.live(third.json()["access_token"])


async def test_a_reused_refresh_token_revokes_the_whole_grant(oenv) -> None:
    async with session(oenv) as s:
        client = await s.register()
        first = await s.tokens(client)
        rotated = await s.refresh(client, first["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        second = rotated.json()
        assert await s.live(second["access_token"])
        other = await s.tokens(client)  # a separate grant
        replay = await s.refresh(client, first["refresh_token"])
        assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
        assert not await s.live(second["access_token"])
        assert (await s.refresh(client, second["refresh_token"])).status_code == 400
        assert await s.live(other["access_token"])
        assert (await s.refresh(client, other["refresh_token"])).status_code == 200

    # spent codes and tokens are remembered until they would have expired, then swept
    async with oenv.db.session(write=True) as db:
        grant_id = (await db.exec(select(OAuthSpentToken.grant_id))).first()
        db.add(OAuthSpentToken(token_hash="0" * 64, grant_id=grant_id, expires_at=int(time.time()) - 5))
    kept = await oenv.row_counts()
    assert (await retention.sweep(oenv.rt))["oauth_spent_tokens"] == 1
    assert (await oenv.row_counts())["oauth_spent_tokens"] == kept["oauth_spent_tokens"] - 1 >= 4


# -- resource indicators at the token endpoint (RFC 8707) -----------------------------------------------------

async def test_token_with_another_resource_is_invalid_target(oenv) -> None:
    async with session(oenv) as s:
        client = await s.register()
        code, verifier = await s.code(client["client_id"])
        for resource in ("https://elsewhere.example/mcp", f"{PUBLIC}/v1", "not a uri", f"{RESOURCE}#x"):
            refused = await s.exchange(client, code, verifier, resource=resource)
            assert refused.status_code == 400 and refused.json()["error"] == "invalid_target", (resource, refused.text)
        # several indicators, one of them foreign
        both = await s.http.post("/token", content=(
            f"grant_type=authorization_code&code={code}&redirect_uri={REDIRECT}&client_id={client['client_id']}"
            f"&code_verifier={verifier}&resource={RESOURCE}&resource=https://elsewhere.example/mcp"),
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert both.status_code == 400 and both.json()["error"] == "invalid_target"
        # refused without spending the code: the right resource (or none) still gets the tokens
        ok = await s.exchange(client, code, verifier, resource=RESOURCE)
        assert ok.status_code == 200, ok.text
        tokens = ok.json()
        refused = await s.refresh(client, tokens["refresh_token"], resource="https://elsewhere.example/mcp")
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_target"
        assert await s.live(tokens["access_token"])
        fine = await s.refresh(client, tokens["refresh_token"], resource=RESOURCE + "/")
        assert fine.status_code == 200, fine.text
        assert (await s.refresh(client, fine.json()["refresh_token"])).status_code == 200
