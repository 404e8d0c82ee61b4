"""Each adapter's read-only `check` at the request level (respx): no local server exists for these networks (the
Mastodon one runs against mastodon-mock in test_check.py), so the requests are asserted against each network's
reference, cited in the adapter next to the call: the introspection or lookup endpoint, its method, and that no
check ever writes (only GETs, plus the documented introspection POSTs of Google and LinkedIn). Every answer shape
below is the reference's example. No credential may appear in what a check reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import respx

from providers.base import Account, CheckResult
from providers.bluesky import BlueskyProvider
from providers.discord import DiscordProvider
from providers.facebook import FacebookProvider
from providers.google_business import GoogleBusinessProvider
from providers.instagram import InstagramProvider
from providers.linkedin import LinkedInProvider
from providers.pinterest import PinterestProvider
from providers.telegram import TelegramProvider
from providers.threads import ThreadsProvider
from providers.tiktok import TikTokProvider
from providers.tumblr import TumblrProvider
from providers.versions import GRAPH
from providers.x import XProvider
from providers.youtube import YouTubeProvider

pytestmark = pytest.mark.anyio
TOKEN = "planted-access-token-55aa"
SECRET = "planted-client-secret-77bb"
TOKENINFO = "https://oauth2.test/tokeninfo"


def account(platform: str, account_id: str, **credentials: Any) -> Account:
    return Account(integration_id=f"int_{platform}", platform=platform, status="connected",
                   provider_account_id=account_id,
                   credentials={"access_token": TOKEN, "client_id": "app", "client_secret": SECRET, **credentials},
                   state={})


@dataclass
class Case:
    name: str
    provider: Callable[[], Any]
    account: Account
    ok: Callable[[respx.MockRouter], object]  # routes of a healthy account (what it returns is ignored)
    bad: Callable[[respx.MockRouter], object]  # routes of a refused token
    granted: tuple[str, ...] | None
    source: str
    who: str


def _google_ok(router: respx.MockRouter, scope: str) -> None:
    router.post(TOKENINFO).mock(return_value=httpx.Response(200, json={
        "azp": "app", "aud": "app", "scope": scope, "exp": "1999999999", "expires_in": "3599"}))


def _bad(router: respx.MockRouter, method: str, url: str, status: int = 401, body: Any = None) -> None:
    router.route(method=method, url__startswith=url).mock(return_value=httpx.Response(status, json=body or {}))


YT = "https://www.googleapis.com/auth/youtube"
CASES = [
    Case("x", lambda: XProvider(api_url="https://x.test"),
         account("x", "42", scope="tweet.read users.read offline.access"),
         lambda r: r.get("https://x.test/2/users/me").mock(return_value=httpx.Response(200, json={
             "data": {"id": "42", "name": "Roastery", "username": "roastery"}})),
         lambda r: _bad(r, "GET", "https://x.test/2/users/me"),
         ("tweet.read", "users.read", "offline.access"), "token_response", "@roastery"),
    Case("tiktok", lambda: TikTokProvider(api_url="https://tiktok.test"),
         account("tiktok", "open1", scope="user.info.basic,video.publish"),
         lambda r: r.get("https://tiktok.test/v2/user/info/").mock(return_value=httpx.Response(200, json={
             "data": {"user": {"open_id": "open1", "display_name": "Roastery"}},
             "error": {"code": "ok", "message": "", "log_id": "x"}})),
         lambda r: _bad(r, "GET", "https://tiktok.test/v2/user/info/", 401, {
             "data": {}, "error": {"code": "access_token_invalid", "message": "", "log_id": "x"}}),
         ("user.info.basic", "video.publish"), "token_response", "Roastery"),
    Case("pinterest", lambda: PinterestProvider(api_url="https://pinterest.test"),
         account("pinterest", "p1", scope="boards:read,pins:read,pins:write,user_accounts:read"),
         lambda r: r.get("https://pinterest.test/v5/user_account").mock(return_value=httpx.Response(200, json={
             "id": "p1", "username": "roastery", "account_type": "BUSINESS"})),
         lambda r: _bad(r, "GET", "https://pinterest.test/v5/user_account"),
         ("boards:read", "pins:read", "pins:write", "user_accounts:read"), "token_response", "roastery"),
    Case("tumblr", lambda: TumblrProvider(api_url="https://tumblr.test"),
         account("tumblr", "t0001", scope="basic write offline_access"),
         lambda r: r.get("https://tumblr.test/v2/user/info").mock(return_value=httpx.Response(200, json={
             "meta": {"status": 200, "msg": "OK"}, "response": {"user": {"name": "roastery", "blogs": [
                 {"name": "roastery", "uuid": "t0001", "primary": True}]}}})),
         lambda r: _bad(r, "GET", "https://tumblr.test/v2/user/info"),
         ("basic", "write", "offline_access"), "token_response", "t0001"),
    Case("youtube", lambda: _google(YouTubeProvider(api_url="https://yt.test")), account("youtube", "UC1"),
         lambda r: (_google_ok(r, f"{YT}.upload {YT}.readonly"),
                    r.get("https://yt.test/youtube/v3/channels").mock(return_value=httpx.Response(200, json={
                        "kind": "youtube#channelListResponse", "items": [{"kind": "youtube#channel", "id": "UC1"}]}))),
         lambda r: _bad(r, "POST", TOKENINFO, 400, {"error": "invalid_token"}),
         (f"{YT}.upload", f"{YT}.readonly"), "introspected", "UC1"),
    Case("google_business", lambda: _google(GoogleBusinessProvider(api_url="https://gbp.test")),
         account("google_business", "accounts/1/locations/2"),
         lambda r: (_google_ok(r, "https://www.googleapis.com/auth/business.manage"),
                    r.get("https://mybusinessbusinessinformation.googleapis.com/v1/locations/2").mock(
                        return_value=httpx.Response(200, json={"name": "locations/2", "title": "Roastery"}))),
         lambda r: _bad(r, "POST", TOKENINFO, 400, {"error": "invalid_token"}),
         ("https://www.googleapis.com/auth/business.manage",), "introspected", "Roastery"),
    Case("instagram", lambda: InstagramProvider(graph_url=f"https://graph.test/{GRAPH.version}"), account("instagram", "17841"),
         lambda r: (r.get(f"https://graph.test/{GRAPH.version}/me/permissions").mock(return_value=httpx.Response(200, json={
             "data": [{"permission": "instagram_basic", "status": "granted"},
                      {"permission": "instagram_content_publish", "status": "declined"},
                      {"permission": "pages_show_list", "status": "granted"}]})),
                    r.get(f"https://graph.test/{GRAPH.version}/17841").mock(return_value=httpx.Response(200, json={
                        "id": "17841", "username": "roastery"}))),
         lambda r: _bad(r, "GET", f"https://graph.test/{GRAPH.version}/", 400, {
             "error": {"message": "Error validating access token", "type": "OAuthException", "code": 190}}),
         ("instagram_basic", "pages_show_list"), "introspected", "@roastery"),
    Case("facebook", lambda: FacebookProvider(graph_url=f"https://graph.test/{GRAPH.version}"),
         account("facebook", "page1", page_tokens={"page1": "planted-page-token-99"}),
         lambda r: (r.get(f"https://graph.test/{GRAPH.version}/me/permissions").mock(return_value=httpx.Response(200, json={
             "data": [{"permission": p, "status": "granted"} for p in ("pages_show_list", "pages_read_engagement",
                                                                       "pages_manage_posts")]})),
                    r.get(f"https://graph.test/{GRAPH.version}/page1").mock(return_value=httpx.Response(200, json={
                        "id": "page1", "name": "Roastery Page"}))),
         lambda r: _bad(r, "GET", f"https://graph.test/{GRAPH.version}/", 400, {
             "error": {"message": "Error validating access token", "type": "OAuthException", "code": 190}}),
         ("pages_show_list", "pages_read_engagement", "pages_manage_posts"), "introspected", "Roastery Page"),
    Case("threads", lambda: ThreadsProvider(api_url="https://threads.test"), account("threads", "th1"),
         lambda r: (r.get("https://threads.test/v1.0/me").mock(return_value=httpx.Response(200, json={
             "id": "th1", "username": "roastery"})),
                    r.get("https://threads.test/v1.0/debug_token").mock(return_value=httpx.Response(200, json={
                        "data": {"type": "USER", "application": "App", "expires_at": 1999999999, "is_valid": True,
                                 "issued_at": 1747070132, "scopes": ["threads_basic", "threads_content_publish"],
                                 "user_id": "th1"}}))),
         lambda r: _bad(r, "GET", "https://threads.test/v1.0/", 400, {
             "error": {"message": "Invalid OAuth access token", "type": "OAuthException", "code": 190}}),
         ("threads_basic", "threads_content_publish"), "introspected", "@roastery"),
    Case("linkedin", lambda: _introspect(LinkedInProvider(api_url="https://li.test")),
         account("linkedin", "urn:li:person:abc"),
         lambda r: (r.post("https://li-oauth.test/introspectToken").mock(return_value=httpx.Response(200, json={
             "active": True, "client_id": "app", "authorized_at": 1700000000, "created_at": 1700000000,
             "status": "active", "expires_at": 1999999999, "scope": "openid,profile,w_member_social",
             "auth_type": "3L"})),
                    r.get("https://li.test/v2/userinfo").mock(return_value=httpx.Response(200, json={
                        "sub": "abc", "name": "Ada Roaster"}))),
         lambda r: r.post("https://li-oauth.test/introspectToken").mock(return_value=httpx.Response(200, json={
             "active": False, "status": "revoked"})),
         ("openid", "profile", "w_member_social"), "introspected", "Ada Roaster"),
]


def _google(provider: Any) -> Any:
    provider.tokeninfo_url = TOKENINFO
    return provider


def _introspect(provider: Any) -> Any:
    provider.introspect_url = "https://li-oauth.test/introspectToken"
    return provider


def _assert_read_only(router: respx.MockRouter) -> None:
    for call in router.calls:
        request = call.request
        assert request.method == "GET" or str(request.url) in (TOKENINFO, "https://li-oauth.test/introspectToken"), \
            request.url
        if request.method == "POST":  # the token travels in the form, never in the URL
            assert TOKEN not in str(request.url) and TOKEN in request.content.decode()


def _no_secrets(result: CheckResult) -> None:
    text = json.dumps({k: v for k, v in vars(result).items() if k != "failure"}, default=str)
    for secret in (TOKEN, SECRET, "planted-page-token-99"):
        assert secret not in text


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_check_reads_the_token_scopes_and_account(case: Case) -> None:
    with respx.mock(assert_all_called=True) as router:
        case.ok(router)
        result = await case.provider().check(case.account)
        _assert_read_only(router)
    assert result.failure is None, result.failure and result.failure.message
    assert result.token_valid is True and result.reachable is True, result
    assert result.granted_scopes == case.granted and result.scopes_source == case.source
    assert result.account == case.who
    _no_secrets(result)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_check_reports_a_refused_token(case: Case) -> None:
    with respx.mock(assert_all_called=False) as router:
        case.bad(router)
        result = await case.provider().check(case.account)
        _assert_read_only(router)
    assert result.token_valid is False, result
    _no_secrets(result)


BOT = "123456:planted-bot-token"


async def test_telegram_check_reads_the_bots_rights_in_the_channel() -> None:
    base = "https://tg.test"
    acct = Account(integration_id="int_tg", platform="telegram", status="connected", provider_account_id="-100",
                   credentials={"bot_token": BOT}, state={"chat_id": "-100", "api_base": base})

    def routes(router: respx.MockRouter, member: dict[str, Any]) -> None:
        router.post(f"{base}/bot{BOT}/getMe").mock(return_value=httpx.Response(200, json={
            "ok": True, "result": {"id": 99, "is_bot": True, "username": "roast_bot"}}))
        router.post(f"{base}/bot{BOT}/getChat").mock(return_value=httpx.Response(200, json={
            "ok": True, "result": {"id": -100, "type": "channel", "title": "Roastery news"}}))
        router.post(f"{base}/bot{BOT}/getChatMember").mock(return_value=httpx.Response(200, json={
            "ok": True, "result": {"user": {"id": 99}, **member}}))

    with respx.mock() as router:
        routes(router, {"status": "administrator", "can_post_messages": True})
        ok = await TelegramProvider().check(acct)
        assert json.loads(router.calls[-1].request.content) == {"chat_id": "-100", "user_id": 99}
    assert ok.token_valid is True and ok.reachable is True and ok.account == "Roastery news"
    assert ok.scopes_source == "not_applicable"
    with respx.mock() as router:
        routes(router, {"status": "administrator", "can_post_messages": False})
        cannot = await TelegramProvider().check(acct)
    assert cannot.token_valid is True and cannot.reachable is False and "may not post" in cannot.notes[0]
    with respx.mock() as router:
        router.post(f"{base}/bot{BOT}/getMe").mock(return_value=httpx.Response(401, json={
            "ok": False, "error_code": 401, "description": "Unauthorized"}))
        refused = await TelegramProvider().check(acct)
    assert refused.token_valid is False
    for result in (ok, cannot, refused):
        assert BOT not in json.dumps(vars(result), default=str) + (result.failure.message if result.failure else "")


async def test_discord_check_gets_the_webhook() -> None:
    pasted = "https://discord.com/api/webhooks/1122/planted-webhook-token"
    url = "https://discord.com/api/v10/webhooks/1122/planted-webhook-token"  # the pinned version's path
    acct = Account(integration_id="int_dc", platform="discord", status="connected", provider_account_id="1122",
                   credentials={"webhook_url": pasted}, state={"channel_id": "777"})
    with respx.mock() as router:
        router.get(url).mock(return_value=httpx.Response(200, json={
            "id": "1122", "type": 1, "channel_id": "777", "guild_id": "5", "name": "Roastery hook"}))
        ok = await DiscordProvider().check(acct)
    assert ok.token_valid is True and ok.reachable is True and ok.account == "Roastery hook"
    with respx.mock() as router:
        router.get(url).mock(return_value=httpx.Response(404, json={"message": "Unknown Webhook", "code": 10015}))
        gone = await DiscordProvider().check(acct)
    assert gone.token_valid is False and gone.failure is not None
    assert "planted-webhook-token" not in json.dumps(vars(gone), default=str) + gone.failure.message


async def test_bluesky_check_gets_the_session_without_renewing_it() -> None:
    acct = Account(integration_id="int_bs", platform="bluesky", status="connected", provider_account_id="did:plc:a",
                   credentials={"service": "https://pds.test", "did": "did:plc:a", "handle": "a.test",
                                "access_jwt": "planted.access.jwt", "refresh_jwt": "planted.refresh.jwt",
                                "app_password": "planted-app-password"}, state={})
    with respx.mock() as router:
        router.get("https://pds.test/xrpc/com.atproto.server.getSession").mock(return_value=httpx.Response(
            200, json={"did": "did:plc:a", "handle": "a.test", "active": True}))
        ok = await BlueskyProvider().check(acct)
        assert [c.request.method for c in router.calls] == ["GET"]
    assert ok.token_valid is True and ok.reachable is True and ok.account == "@a.test"
    with respx.mock() as router:  # an expired access JWT: reported, never renewed (a renewal rotates tokens)
        router.get("https://pds.test/xrpc/com.atproto.server.getSession").mock(return_value=httpx.Response(
            400, json={"error": "ExpiredToken", "message": "Token has expired"}))
        expired = await BlueskyProvider().check(acct)
        assert len(router.calls) == 1
    assert expired.token_valid is None and expired.failure is None and "renews" in expired.notes[0]
    assert acct.credentials_changed is False
