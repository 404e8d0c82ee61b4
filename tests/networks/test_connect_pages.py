"""Facebook Pages, Threads and LinkedIn connects completed at `GET /connect/{platform}/callback` (respx answering
the networks per their references, cited in tests/networks/cases/), and what follows a connect: Facebook's Page
selection (the Page tokens stored sealed, the selected Page's token used to publish, kept across a reconnect)
and LinkedIn's 60-day token without a refresh token (a reconnect notice a week ahead, `expired` at expiry)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx
from sqlmodel import select

from providers import facebook, linkedin, threads
from providers.base import Account, PostRequest
from storage import vault
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification
from tests.networks.support import Flow, assert_no_secrets
from tools.networks import apps, oauth, tokens
from tools.networks import connect as networks

pytestmark = pytest.mark.anyio
SECRET = "app-secret-SECRET"
SHORT, LONG = "short-lived-SECRET", "long-lived-SECRET"
PAGE_A, PAGE_B = "page-a-token-SECRET", "page-b-token-SECRET"


async def _callback(env, platform: str, integration_id: str | None = None) -> tuple[dict, str]:
    flow = await Flow(env).setup()
    await apps.set_app(env.rt, platform, f"{platform}-app", SECRET)
    started = await oauth.start(env.rt, flow.brand.id, platform, integration_id=integration_id)
    q = {k: v[0] for k, v in parse_qs(urlsplit(started["authorize_url"]).query).items()}
    return q, started["redirect_uri"]


async def _row(env, platform: str) -> Integration:
    async with env.db.session(write=False) as s:
        [row] = (await s.exec(select(Integration).where(Integration.platform == platform,
                                                         Integration.provider == platform))).all()
    return row


def _form(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


async def test_threads_connect_exchanges_for_a_long_lived_token(env) -> None:
    q, redirect = await _callback(env, "threads")
    with respx.mock(assert_all_mocked=True) as router:
        code = router.post(f"{threads.API_URL}/oauth/access_token").mock(
            return_value=httpx.Response(200, json={"access_token": SHORT, "user_id": 25000000000000001}))
        long = router.get(f"{threads.API_URL}/access_token").mock(return_value=httpx.Response(
            200, json={"access_token": LONG, "token_type": "bearer", "expires_in": 5183944}))
        me = router.get(f"{threads.API_URL}/v1.0/me").mock(return_value=httpx.Response(
            200, json={"id": "25000000000000001", "username": "roastery", "name": "Roastery"}))
        done = await env.rest.get("/connect/threads/callback", params={"state": q["state"], "code": "code-1"})
        assert done.status_code == 200 and "connected" in done.text, done.text
        form = _form(code.calls[0].request)
        assert form["client_id"] == "threads-app" and form["client_secret"] == SECRET and form["code"] == "code-1"
        assert form["grant_type"] == "authorization_code" and form["redirect_uri"] == redirect
        assert parse_qs(long.calls[0].request.url.query.decode()) == {
            "grant_type": ["th_exchange_token"], "client_secret": [SECRET], "access_token": [SHORT]}
        assert me.calls[0].request.headers["authorization"] == f"Bearer {LONG}"
    row = await _row(env, "threads")
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None
    assert row.provider_account_id == "25000000000000001" and row.username == "roastery"
    assert creds["access_token"] == LONG and creds["expires_at"] and creds["client_secret"] == SECRET
    assert_no_secrets([done.text, json.dumps(row.credentials)], [SECRET, SHORT, LONG])


def _facebook_routes(router: respx.MockRouter) -> None:
    router.post(f"{facebook.GRAPH_URL}/oauth/access_token").mock(
        return_value=httpx.Response(200, json={"access_token": SHORT, "token_type": "bearer", "expires_in": 5000}))
    router.get(f"{facebook.GRAPH_URL}/oauth/access_token").mock(
        return_value=httpx.Response(200, json={"access_token": LONG, "token_type": "bearer", "expires_in": 5183944}))
    router.get(f"{facebook.GRAPH_URL}/me/accounts", name="pages").mock(return_value=httpx.Response(200, json={"data": [
        {"id": "101", "name": "Roastery Lisbon", "access_token": PAGE_A, "category": "Cafe"},
        {"id": "102", "name": "Roastery Porto", "access_token": PAGE_B, "category": "Cafe"}]}))


async def test_facebook_pages_are_candidates_and_the_selected_page_publishes(env) -> None:
    q, _ = await _callback(env, "facebook")
    with respx.mock(assert_all_mocked=True) as router:
        _facebook_routes(router)
        done = await env.rest.get("/connect/facebook/callback", params={"state": q["state"], "code": "code-1"})
        assert router.routes["pages"].calls[0].request.headers["authorization"] == f"Bearer {LONG}"
    assert done.status_code == 200 and "connected" in done.text, done.text
    row = await _row(env, "facebook")
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None
    assert row.provider_account_id == "101" and creds["page_tokens"] == {"101": PAGE_A, "102": PAGE_B}
    assert row.provider_state is not None and [c["id"] for c in row.provider_state["candidates"]] == ["101", "102"]
    assert PAGE_A not in json.dumps(row.credentials) and PAGE_A not in done.text

    chosen = await networks.select_account(env.rt, row.id, "102")
    assert chosen.provider_account_id == "102" and chosen.username == "Roastery Porto"
    account = Account(integration_id=row.id, platform="facebook", status="connected", provider_account_id="102",
                      credentials=creds)
    with respx.mock(assert_all_mocked=True) as router:
        feed = router.post(f"{facebook.GRAPH_URL}/102/feed").mock(return_value=httpx.Response(200, json={"id": "102_1"}))
        router.get(f"{facebook.GRAPH_URL}/102_1").mock(return_value=httpx.Response(200, json={"id": "102_1"}))
        result = await facebook.FacebookProvider().publish(account, PostRequest(
            platform="facebook", post_type="FB_TEXT", text="Hello Porto"))
    assert feed.calls[0].request.headers["authorization"] == f"Bearer {PAGE_B}" and result.publish_id == "102_1"

    q, _ = await _callback(env, "facebook", integration_id=row.id)  # reconnect keeps the selected Page
    with respx.mock(assert_all_mocked=True) as router:
        _facebook_routes(router)
        again = await env.rest.get("/connect/facebook/callback", params={"state": q["state"], "code": "code-2"})
    assert again.status_code == 200, again.text
    row = await _row(env, "facebook")
    assert row.provider_account_id == "102" and row.username == "Roastery Porto"


async def test_linkedin_without_refresh_token_gets_a_notice_then_expires(env) -> None:
    q, redirect = await _callback(env, "linkedin")
    with respx.mock(assert_all_mocked=True) as router:
        code = router.post(linkedin.TOKEN_URL).mock(return_value=httpx.Response(
            200, json={"access_token": LONG, "expires_in": 5184000, "scope": "openid,profile,w_member_social"}))
        router.get(f"{linkedin.API_URL}/v2/userinfo").mock(return_value=httpx.Response(
            200, json={"sub": "782bbtaQ", "name": "Ana Roaster", "picture": "https://media.licdn.test/a.jpg"}))
        acls = router.get(f"{linkedin.API_URL}/rest/organizationAcls").mock(return_value=httpx.Response(
            403, json={"status": 403, "serviceErrorCode": 100, "message": "Not enough permissions"}))
        done = await env.rest.get("/connect/linkedin/callback", params={"state": q["state"], "code": "code-1"})
        assert done.status_code == 200 and "connected" in done.text, done.text
        form = _form(code.calls[0].request)
        assert form["grant_type"] == "authorization_code" and form["client_id"] == "linkedin-app"
        assert form["client_secret"] == SECRET and form["redirect_uri"] == redirect
        assert acls.calls[0].request.headers["linkedin-version"] == linkedin.VERSION
    row = await _row(env, "linkedin")
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None
    assert row.provider_account_id == "urn:li:person:782bbtaQ" and "refresh_token" not in creds

    async def notes() -> list[Notification]:
        async with env.db.session(write=False) as s:
            return list((await s.exec(select(Notification).where(
                Notification.category == "integration_refresh"))).all())

    env.clock.advance(days=40)  # 20 days left: nothing yet
    await tokens.refresh_due(env.rt, "w1")
    assert await notes() == []
    env.clock.advance(days=15)  # 5 days left: one reconnect notice, the account still publishes
    assert await tokens.refresh_due(env.rt, "w1") == 1
    await tokens.refresh_due(env.rt, "w1")
    [notice] = await notes()
    assert notice.type == "integration_expiring" and "Reconnect LinkedIn soon" in notice.title
    assert (await _row(env, "linkedin")).status == "connected"
    env.clock.advance(days=6)  # expired: marked so, with the usual reconnect notification
    assert await tokens.refresh_due(env.rt, "w1") == 1
    assert (await _row(env, "linkedin")).status == "expired"
    assert sorted(n.type for n in await notes()) == ["integration_expiring", "integration_needs_refresh"]
    assert_no_secrets([done.text, *(n.message for n in await notes())], [SECRET, LONG])


async def test_linkedin_duplicate_refusal_is_the_earlier_post_and_text_is_little_format() -> None:
    """LinkedIn answers a post that duplicates a recent one with 422 naming it (Posts API error handling): that
    post is the earlier attempt's, recorded instead of failing; any other 422 is a refusal."""
    assert linkedin.little_text("Roast (light) #coffee @home a#b") == \
        "Roast \\(light\\) {hashtag|\\#|coffee} \\@home a\\#b"
    account = Account(integration_id="i", platform="linkedin", status="connected",
                      provider_account_id="urn:li:person:782bbtaQ", credentials={"access_token": LONG})
    post = PostRequest(platform="linkedin", post_type="LI_TEXT", text="Hello")
    provider = linkedin.LinkedInProvider(api_url="https://li.test")
    with respx.mock(assert_all_mocked=True) as router:
        route = router.post("https://li.test/rest/posts").mock(return_value=httpx.Response(422, json={
            "status": 422, "message": "Content is a duplicate of urn:li:share:7100000000000000001"}))
        result = await provider.publish(account, post)
        assert result.publish_id == "urn:li:share:7100000000000000001"
        route.mock(return_value=httpx.Response(422, json={"status": 422, "message": "Invalid commentary"}))
        with pytest.raises(linkedin.ProviderError) as caught:
            await provider.publish(account, post)
    assert caught.value.kind == "rejected" and "Invalid" not in (caught.value.safe_reason or "")
