"""The X contract case. Facts from the X API v2 reference (docs.x.com): `POST /2/tweets` (JSON `text`,
`media.media_ids`, `reply.in_reply_to_tweet_id`; 201 `{"data": {"id", "text"}}`); media upload
`POST /2/media/upload/initialize` (JSON `media_type`, `total_bytes`, `media_category`) → `data.id`,
`POST /2/media/upload/{id}/append` (multipart `media` + `segment_index`), `POST /2/media/upload/{id}/finalize`
(`data.processing_info` with `state` pending|in_progress|succeeded|failed and `check_after_secs`),
`GET /2/media/upload?command=STATUS&media_id=…`; `GET /2/users/{id}/tweets` (`start_time`, `max_results` 5-100);
OAuth 2.0 token endpoint `POST /2/oauth2/token` with HTTP Basic client authentication for confidential clients."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.x import XProvider
from tests.networks.contract import image, video

API = "https://api.x.test"
TOKEN = "x-access-token-SECRET"
REFRESH = "x-refresh-token-SECRET"
CLIENT_SECRET = "x-client-secret-SECRET"


def _json(request: httpx.Request) -> Any:
    return json.loads(request.content)


class XCase:
    platform = "x"
    provider_name = "x"
    supports = {"text", "media", "thread", "async_media"}
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]

    processed_before_write = True  # media processing ends before the request that creates the post
    text_kind = "text"

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        return {}

    def provider(self) -> XProvider:
        return XProvider(api_url=API, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_x", platform="x", status="connected", provider_account_id="2244994945",
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "cid",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"},
                       state={"username": "roastery"})

    def post(self, kind: str) -> PostRequest:
        media = {"media": [image()], "async_media": [video()]}.get(kind, [])
        parts = [{"text": "Part two", "media": []}, {"text": "Part three", "media": [image()]}] \
            if kind == "thread" else []
        return PostRequest(platform="x", post_type="X_POST", text="Spring roast is here https://ex.test/r",
                           media=media, thread_parts=parts, idempotency_token="tok_1")

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        ids = iter(["1800000000000000001", "1800000000000000002", "1800000000000000003"])
        router.post(f"{API}/2/tweets", name="create").mock(
            side_effect=lambda request: httpx.Response(201, json={"data": {"id": next(ids),
                                                                          "text": _json(request)["text"]}}))
        router.post(f"{API}/2/media/upload/initialize", name="init").mock(return_value=httpx.Response(
            200, json={"data": {"id": "1880028106020515840", "media_key": "3_1880028106020515840",
                                "expires_after_secs": 86400}}))
        router.post(f"{API}/2/media/upload/1880028106020515840/append", name="append").mock(
            return_value=httpx.Response(200, json={"data": {"expires_at": 1}}))
        info = {"state": "pending", "check_after_secs": 1} if kind == "async_media" else None
        final = {"id": "1880028106020515840", "media_key": "3_1880028106020515840", "size": 1}
        router.post(f"{API}/2/media/upload/1880028106020515840/finalize", name="finalize").mock(
            return_value=httpx.Response(200, json={"data": {**final, **({"processing_info": info} if info else {})}}))
        states = {"ok": [{"state": "in_progress", "check_after_secs": 1}, {"state": "succeeded"}],
                  "failed": [{"state": "failed", "error": {"code": 1, "name": "InvalidMedia",
                                                           "message": "unsupported codec <script>"}}],
                  "stuck": [{"state": "in_progress", "check_after_secs": 1}] * 50}[processing]
        answers = iter(states)
        router.get(f"{API}/2/media/upload", name="status").mock(side_effect=lambda request: httpx.Response(
            200, json={"data": {**final, "processing_info": next(answers)}}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        creates = [c.request for c in router.routes["create"].calls]
        for request in creates:
            assert request.method == "POST" and request.headers["authorization"] == f"Bearer {TOKEN}"
            assert request.headers["content-type"] == "application/json"
        first = _json(creates[0])
        assert first["text"] == post.text and "reply" not in first
        assert result.publish_id == "1800000000000000001"
        assert result.permalink_url == "https://x.com/roastery/status/1800000000000000001"
        if kind in ("media", "async_media"):
            assert first["media"] == {"media_ids": ["1880028106020515840"]}
            init = _json(router.routes["init"].calls[0].request)
            expected = "tweet_video" if kind == "async_media" else "tweet_image"
            assert init == {"media_type": post.media[0]["content_type"], "total_bytes": init["total_bytes"],
                            "media_category": expected} and init["total_bytes"] > 0
            append = router.routes["append"].calls[0].request
            assert append.headers["content-type"].startswith("multipart/form-data")
            assert b'name="segment_index"\r\n\r\n0' in append.content and b'name="media"' in append.content
        else:
            assert "media" not in first
        if kind == "async_media":
            status = router.routes["status"].calls[0].request
            assert parse_qs(status.url.query.decode()) == {"command": ["STATUS"], "media_id": ["1880028106020515840"]}
        if kind == "thread":
            assert [_json(r)["text"] for r in creates] == [post.text, "Part two", "Part three"]
            assert _json(creates[1])["reply"] == {"in_reply_to_tweet_id": "1800000000000000001"}
            assert _json(creates[2])["reply"] == {"in_reply_to_tweet_id": "1800000000000000002"}
            assert _json(creates[2])["media"] == {"media_ids": ["1880028106020515840"]}

    def published_id(self) -> str:
        return "1800000000000000001"

    def permalink(self, post_id: str) -> str:
        return f"https://x.com/roastery/status/{post_id}"

    def first_write(self) -> str:
        return "create"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        data = [{"id": "1799999999999999999", "text": "an older post", "created_at": "2026-11-24T00:00:00.000Z"}]
        if present:  # X shows links as t.co: matched on the text outside the links
            data.insert(0, {"id": "1800000000000000042", "text": "Spring roast is here https://t.co/abc",
                            "created_at": "2026-11-24T00:01:00.000Z"})
        router.get(f"{API}/2/users/2244994945/tweets", name="recent").mock(
            return_value=httpx.Response(200, json={"data": data, "meta": {"result_count": len(data)}}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        q = parse_qs(request.url.query.decode())
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert q["max_results"] == ["100"] and q["start_time"][0].endswith("Z")

    def recovered_id(self) -> str:
        return "1800000000000000042"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"token_type": "bearer", "access_token": "x-new-access", "expires_in": 7200,
                                           "refresh_token": "x-new-refresh", "scope": "tweet.write offline.access"}) \
            if ok else httpx.Response(400, json={"error": "invalid_request",
                                                 "error_description": "Value passed for the token was invalid."})
        router.post(f"{API}/2/oauth2/token", name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        request = router.routes["token"].calls[0].request
        basic = base64.b64encode(f"cid:{CLIENT_SECRET}".encode()).decode()
        assert request.headers["authorization"] == f"Basic {basic}"
        body = parse_qs(request.content.decode())
        assert body["grant_type"] == ["refresh_token"] and body["refresh_token"] == [REFRESH]
        assert fresh["access_token"] == "x-new-access" and fresh["refresh_token"] == "x-new-refresh"

    def processing_failure_words(self) -> str:
        return "X could not process the media: InvalidMedia"
