"""The operator-app OAuth networks through their public surfaces: a TikTok connect completed at
`GET /connect/tiktok/callback` (TikTok's `client_key` authorize parameter and its own code exchange, respx
answering TikTok per its reference), the stored account's credentials sealed with the app's client credentials
for refreshes; and TikTok's `creator_info` served live as the targets dynamic options (and its failures as the
spec's explicit errors, never stale choices)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx

from providers import tiktok
from storage import vault
from storage.tables.integrations import Integration
from tests.networks.support import Flow, assert_no_secrets
from tools.networks import apps, oauth

pytestmark = pytest.mark.anyio
OK = {"code": "ok", "message": "", "log_id": "1"}
SECRET = "tt-app-secret-SECRET"
ACCESS = "act.connected-SECRET"


async def _connect_tiktok(env, flow) -> Integration:
    await apps.set_app(env.rt, "tiktok", "ck-123", SECRET)
    started = await oauth.start(env.rt, flow.brand.id, "tiktok")
    q = {k: v[0] for k, v in parse_qs(urlsplit(started["authorize_url"]).query).items()}
    assert started["authorize_url"].startswith(tiktok.AUTHORIZE_URL)
    # TikTok Login Kit for Web (https://developers.tiktok.com/doc/login-kit-web/, "Configure your authorization
    # URL"): `scope` is a comma-separated string; a space-joined one fails the connect on the real service.
    assert q["client_key"] == "ck-123" and q["code_challenge_method"] == "S256"
    assert q["scope"] == "user.info.basic,video.publish,video.upload,video.list" and " " not in q["scope"]
    with respx.mock(assert_all_mocked=True) as router:
        token = router.post(f"{tiktok.API_URL}/v2/oauth/token/").mock(return_value=httpx.Response(200, json={
            "access_token": ACCESS, "expires_in": 86400, "open_id": "-000open", "refresh_expires_in": 31536000,
            "refresh_token": "rft.connected-SECRET", "scope": "user.info.basic,video.publish", "token_type": "Bearer"}))
        router.get(f"{tiktok.API_URL}/v2/user/info/").mock(return_value=httpx.Response(200, json={
            "data": {"user": {"open_id": "-000open", "display_name": "Roastery", "username": "roastery"}},
            "error": OK}))
        done = await env.rest.get("/connect/tiktok/callback", params={"state": q["state"], "code": "auth-code-1"})
        form = {k: v[0] for k, v in parse_qs(token.calls[0].request.content.decode()).items()}
    assert done.status_code == 200 and "connected" in done.text, done.text
    assert form["client_key"] == "ck-123" and form["client_secret"] == SECRET and form["code"] == "auth-code-1"
    assert form["grant_type"] == "authorization_code" and form["redirect_uri"] == started["redirect_uri"]
    assert_no_secrets([done.text], [SECRET, ACCESS])
    async with env.db.session(write=False) as s:
        from sqlmodel import select

        [row] = (await s.exec(select(Integration).where(Integration.platform == "tiktok",
                                                         Integration.provider == "tiktok"))).all()
    return row


async def test_tiktok_connect_through_the_callback_stores_a_sealed_account(env) -> None:
    flow = await Flow(env).setup()
    row = await _connect_tiktok(env, flow)
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None
    assert row.provider_account_id == "-000open" and row.username == "roastery"
    assert creds["access_token"] == ACCESS and creds["refresh_token"] == "rft.connected-SECRET"
    assert creds["client_id"] == "ck-123" and creds["client_secret"] == SECRET and creds["expires_at"]
    assert ACCESS not in json.dumps(row.credentials)


async def test_tiktok_creator_info_is_the_live_dynamic_options(env) -> None:
    flow = await Flow(env).setup()
    row = await _connect_tiktok(env, flow)
    path = f"/v1/brands/{flow.brand.id}/targets/{row.id}/dynamic-options"
    with respx.mock(assert_all_mocked=True) as router:
        creator = router.post(f"{tiktok.API_URL}/v2/post/publish/creator_info/query/").mock(
            return_value=httpx.Response(200, json={"data": {
                "privacy_level_options": ["PUBLIC_TO_EVERYONE", "SELF_ONLY"], "comment_disabled": False,
                "duet_disabled": True, "stitch_disabled": False, "max_video_post_duration_sec": 600}, "error": OK}))
        got = await flow.request("GET", path)
        assert creator.calls[0].request.headers["authorization"] == f"Bearer {ACCESS}"
        data = got["data"]
        assert [o["value"] for o in data["options"]] == ["PUBLIC_TO_EVERYONE", "SELF_ONLY"]
        assert data["constraints"] == {"comments_disabled": False, "duets_disabled": True, "stitches_disabled": False}

        creator.mock(return_value=httpx.Response(200, json={"data": {"privacy_level_options": "everyone"},
                                                            "error": OK}))
        bad = await env.rest.post(path, headers=env.auth(flow.key))
        assert bad.status_code >= 400 and "DEPENDENCY_UNAVAILABLE" in bad.text and "SELF_ONLY" not in bad.text
        creator.mock(return_value=httpx.Response(401, json={"data": {}, "error": {
            "code": "access_token_invalid", "message": "expired", "log_id": "1"}}))
        gone = await env.rest.post(path, headers=env.auth(flow.key))
        assert gone.status_code >= 400 and "reconnect_integration" in gone.text
    assert_no_secrets([json.dumps(got), bad.text, gone.text], [SECRET, ACCESS])


async def test_instagram_account_selection_among_the_candidates(env) -> None:
    from providers.base import Connection
    from storage.tables.brands import Brand
    from tools.networks import connect as networks
    from tools.operator import actions as operator

    flow = await Flow(env).setup()
    async with env.db.session(write=True) as s:
        row = await operator.connect_integration(
            s, env.clock.now(), await s.get(Brand, flow.brand.id), "instagram", provider="instagram",
            settings=env.rt.settings, connection=Connection(
                provider_account_id="1784101", username="first", display_name="First", credentials={"access_token": "t"},
                state={"username": "first", "candidates": [{"id": "1784101", "username": "first"},
                                                           {"id": "1784102", "username": "second"}]}))
    chosen = await networks.select_account(env.rt, row.id, "1784102")
    assert chosen.provider_account_id == "1784102" and chosen.username == "second"
    assert chosen.provider_state is not None and chosen.provider_state["username"] == "second"
    with pytest.raises(networks.ConnectError, match="1784101, 1784102"):
        await networks.select_account(env.rt, row.id, "999")
