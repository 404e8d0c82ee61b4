"""The Google Business Profile contract case. Facts from the My Business API v4 reference
(https://developers.google.com/my-business/reference/rest/v4/accounts.locations.localPosts: `create`
`POST /v4/{parent=accounts/*/locations/*}/localPosts` with a LocalPost, answered with the LocalPost (`name`
accounts/{a}/locations/{l}/localPosts/{id}, `state` LIVE|PROCESSING|REJECTED, `searchUrl`, `createTime`);
`list` `GET …/localPosts` → `localPosts[]`, `nextPageToken`) and Google's token endpoint
(https://developers.google.com/identity/protocols/oauth2/web-server#offline).

LOCAL_POST below is transcribed from that reference's LocalPost resource (writable fields and the
LocalPostTopicType / ActionType enums); the create request is validated against it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.google_business import GoogleBusinessProvider

API = "https://gbp.test"
TOKEN_URL = "https://oauth2.google.test/token"
LOCATION = "accounts/109283746501/locations/4417998877"
TOKEN = "ya29.gbp-access-SECRET"
REFRESH = "1//gbp-refresh-SECRET"
CLIENT_SECRET = "GOCSPX-gbp-client-SECRET"
POST_NAME = f"{LOCATION}/localPosts/9081726354"
SEARCH_URL = "https://local.google.com/place?id=1&use=posts&lpsid=9081726354"

LOCAL_POST = {"languageCode": str, "summary": str, "callToAction": dict, "event": dict, "media": list,
              "topicType": ("LOCAL_POST_TOPIC_TYPE_UNSPECIFIED", "STANDARD", "EVENT", "OFFER", "ALERT"),
              "alertType": str, "offer": dict}
ACTION_TYPES = ("BOOK", "ORDER", "SHOP", "LEARN_MORE", "SIGN_UP", "CALL")


def valid_local_post(body: Any) -> None:
    assert isinstance(body, dict) and "topicType" in body  # topicType is required
    for key, value in body.items():
        rule = LOCAL_POST.get(key)
        assert rule is not None, f"{key} is not a writable LocalPost field"
        assert value in rule if isinstance(rule, tuple) else isinstance(value, rule), (key, value)
    if "callToAction" in body:
        assert body["callToAction"]["actionType"] in ACTION_TYPES
    for item in body.get("media", []):
        assert set(item) <= {"mediaFormat", "sourceUrl"}  # sourceUrl is the only data field for a LocalPost


class GoogleBusinessCase:
    platform = "google_business"
    provider_name = "google_business"
    supports = {"text"}  # What's new: text only in this service (the registry)
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]
    processed_before_write = True
    text_kind = "text"

    def provider(self) -> GoogleBusinessProvider:
        return GoogleBusinessProvider(api_url=API, token_url=TOKEN_URL)

    def account(self) -> Account:
        return Account(integration_id="int_gbp", platform="google_business", status="connected",
                       provider_account_id=LOCATION, state={"username": "Roastery Main St"},
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "gcid.apps",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"})

    def post(self, kind: str) -> PostRequest:
        return PostRequest(platform="google_business", post_type="GBP_UPDATE",
                           text="Spring roast is here: taste it this week #coffee", idempotency_token="tok_1")

    async def draft_settings(self, env: Any, flow: Any) -> None:
        return None  # Google Business Profile has no settings object (copy only)

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.post(f"{API}/v4/{LOCATION}/localPosts", name="create").mock(
            side_effect=lambda request: httpx.Response(200, json={
                **json.loads(request.content), "name": POST_NAME, "state": "LIVE", "searchUrl": SEARCH_URL,
                "createTime": "2026-11-24T00:00:00.123Z", "updateTime": "2026-11-24T00:00:00.123Z"}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        request = router.routes["create"].calls[0].request
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["content-type"] == "application/json"
        body = json.loads(request.content)
        valid_local_post(body)
        assert body == {"languageCode": "en", "topicType": "STANDARD", "summary": post.text}
        assert result.publish_id == POST_NAME and result.permalink_url == SEARCH_URL

    def published_id(self) -> str:
        return POST_NAME

    def permalink(self, post_id: str) -> str:
        return SEARCH_URL

    def first_write(self) -> str:
        return "create"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        def item(post_id: str, summary: str, created: str) -> dict[str, Any]:
            return {"name": f"{LOCATION}/localPosts/{post_id}", "summary": summary, "topicType": "STANDARD",
                    "state": "LIVE", "createTime": created, "searchUrl": f"{SEARCH_URL}&x={post_id}"}
        posts = [item("1", "Another update", "2026-12-01T00:02:00Z"), item("2", post.text, "2020-01-01T00:00:00Z")]
        if present:
            posts.insert(0, item("42", post.text, "2026-12-01T00:01:00.5Z"))
        router.get(f"{API}/v4/{LOCATION}/localPosts", name="recent").mock(
            return_value=httpx.Response(200, json={"localPosts": posts}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        assert parse_qs(request.url.query.decode()) == {"pageSize": ["100"]}
        assert request.headers["authorization"] == f"Bearer {TOKEN}"

    def recovered_id(self) -> str:
        return f"{LOCATION}/localPosts/42"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "ya29.new", "expires_in": 3599, "token_type": "Bearer",
                                           "scope": "https://www.googleapis.com/auth/business.manage"}) \
            if ok else httpx.Response(400, json={"error": "invalid_grant", "error_description": "Bad Request"})
        router.post(TOKEN_URL, name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        form = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.content.decode()).items()}
        assert form == {"grant_type": "refresh_token", "refresh_token": REFRESH, "client_id": "gcid.apps",
                        "client_secret": CLIENT_SECRET}
        assert fresh["access_token"] == "ya29.new" and fresh["refresh_token"] == REFRESH

    def processing_failure_words(self) -> str:
        return ""
