"""The Threads contract case. Facts from Meta's Threads API reference:
https://developers.facebook.com/documentation/threads/reference/publishing (POST /{threads-user-id}/threads with
`media_type` TEXT|IMAGE|VIDEO|CAROUSEL, `text`, `image_url`, `video_url`, `is_carousel_item`, `children`,
`reply_to_id`, `reply_control`; POST /{threads-user-id}/threads_publish with `creation_id` → `{id}`),
https://developers.facebook.com/documentation/threads/posts (carousels of 2-20 children, `topic_tag`),
https://developers.facebook.com/docs/threads/troubleshooting (GET /{container-id}?fields=status,error_message:
IN_PROGRESS, FINISHED, ERROR with e.g. FAILED_PROCESSING_VIDEO, EXPIRED, PUBLISHED),
https://developers.facebook.com/docs/threads/get-started/long-lived-tokens (GET /access_token
?grant_type=th_exchange_token&client_secret&access_token; GET /refresh_access_token?grant_type=th_refresh_token
&access_token → {access_token, token_type, expires_in}); errors are Graph-style `{"error": {"code", ...}}`."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.threads import ThreadsProvider
from tests.networks.contract import image, video

API = "https://threads.test"
TOKEN = "th-access-token-SECRET"
CLIENT_SECRET = "th-client-secret-SECRET"
USER = "25000000000000001"
POST_ID = "18100000000000042"


def _form(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


class ThreadsCase:
    platform = "threads"
    provider_name = "threads"
    supports = {"text", "media", "thread", "async_media", "carousel"}
    secrets = [TOKEN, CLIENT_SECRET]
    processed_before_write = True  # every container is FINISHED before threads_publish
    text_kind = "text"

    def provider(self) -> ThreadsProvider:
        return ThreadsProvider(api_url=API, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_th", platform="threads", status="connected", provider_account_id=USER,
                       credentials={"access_token": TOKEN, "client_id": "app-th", "client_secret": CLIENT_SECRET,
                                    "expires_at": "2026-01-01T00:00:00Z"}, state={"username": "roastery"})

    def post(self, kind: str) -> PostRequest:
        media = {"media": [image()], "async_media": [video()], "carousel": [image(), video()]}.get(kind, [])
        post_type = {"media": "TH_IMAGE", "async_media": "TH_VIDEO", "carousel": "TH_CAROUSEL"}.get(kind, "TH_TEXT")
        settings: dict[str, Any] = {"post_type": post_type, "reply_control": "accounts_you_follow",
                                    "topic_tag": "Coffee"}
        parts = []
        if kind == "thread":
            parts = [{"text": "Part two", "media": []}, {"text": "Part three", "media": []}]
            settings["follow_up_reply"] = {"text": "Shop link in bio"}
        return PostRequest(platform="threads", post_type=post_type, text="Spring roast is here",
                           media=media, settings=settings, thread_parts=parts, idempotency_token="tok_1")

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        return {"post_type": "TH_TEXT", "reply_control": "accounts_you_follow", "topic_tag": "Coffee"}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        ids = iter([f"1790000000000000{n}" for n in range(1, 10)])
        router.post(f"{API}/v1.0/{USER}/threads", name="container").mock(
            side_effect=lambda request: httpx.Response(200, json={"id": next(ids)}))
        states = {"ok": ["IN_PROGRESS", "FINISHED"], "failed": ["ERROR"], "stuck": ["IN_PROGRESS"] * 200}[processing]
        answers: dict[str, Any] = {}

        def status(request: httpx.Request) -> httpx.Response:
            cid = request.url.path.rsplit("/", 1)[-1]
            seq = answers.setdefault(cid, iter(states if kind == "async_media" or processing != "ok"
                                               else ["FINISHED"]))
            code = next(seq)
            body = {"id": cid, "status": code}
            if code == "ERROR":
                body["error_message"] = "FAILED_PROCESSING_VIDEO<b>"
            return httpx.Response(200, json=body)

        router.get(path__regex=r"^/v1\.0/1790000000000000\d$", name="status").mock(side_effect=status)
        published = iter([POST_ID, "18100000000000043", "18100000000000044", "18100000000000045"])
        router.post(f"{API}/v1.0/{USER}/threads_publish", name="publish").mock(
            side_effect=lambda request: httpx.Response(200, json={"id": next(published)}))
        router.get(f"{API}/v1.0/{POST_ID}", name="permalink").mock(return_value=httpx.Response(
            200, json={"id": POST_ID, "permalink": self.permalink(POST_ID)}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        containers = [c.request for c in router.routes["container"].calls]
        publishes = [c.request for c in router.routes["publish"].calls]
        for request in [*containers, *publishes]:
            assert request.headers["authorization"] == f"Bearer {TOKEN}" and "access_token" not in str(request.url)
            assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        forms = [_form(r) for r in containers]
        extra = {"reply_control": "accounts_you_follow", "topic_tag": "Coffee"}
        if kind == "carousel":
            assert forms[0] == {"media_type": "IMAGE", "image_url": post.media[0]["url"], "is_carousel_item": "true"}
            assert forms[1] == {"media_type": "VIDEO", "video_url": post.media[1]["url"], "is_carousel_item": "true"}
            assert forms[2] == {"media_type": "CAROUSEL", "children": "17900000000000001,17900000000000002",
                                "text": post.text, **extra}
        elif kind == "async_media":
            assert forms == [{"media_type": "VIDEO", "video_url": post.media[0]["url"], "text": post.text, **extra}]
        elif kind == "media":
            assert forms == [{"media_type": "IMAGE", "image_url": post.media[0]["url"], "text": post.text, **extra}]
        else:
            assert forms[0] == {"media_type": "TEXT", "text": post.text, **extra}
        if kind == "thread":  # each part replies to the one before; the follow-up to the post itself
            assert forms[1:] == [{"media_type": "TEXT", "text": "Part two", "reply_to_id": POST_ID},
                                 {"media_type": "TEXT", "text": "Part three", "reply_to_id": "18100000000000043"},
                                 {"media_type": "TEXT", "text": "Shop link in bio", "reply_to_id": POST_ID}]
            assert [_form(r)["creation_id"] for r in publishes] == [
                "17900000000000001", "17900000000000002", "17900000000000003", "17900000000000004"]
        else:
            assert len(publishes) == 1
        status = router.routes["status"].calls[-1].request
        assert parse_qs(status.url.query.decode()) == {"fields": ["status,error_message"]}
        assert _form(publishes[0]) == {"creation_id": f"1790000000000000{1 if kind == 'thread' else len(forms)}"}
        assert result.publish_id == POST_ID and result.permalink_url == self.permalink(POST_ID)

    def published_id(self) -> str:
        return POST_ID

    def permalink(self, post_id: str) -> str:
        return "https://www.threads.net/@roastery/post/C1abc"

    def first_write(self) -> str:
        return "publish"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        data = [{"id": "18099", "text": "older", "timestamp": "2026-11-23T10:00:00+0000"}]
        if present:
            data.insert(0, {"id": "18100000000000077", "text": post.text, "media_type": "TEXT_POST",
                            "timestamp": "2026-11-24T00:01:00+0000",
                            "permalink": "https://www.threads.net/@roastery/post/XYZ"})
        router.get(f"{API}/v1.0/{USER}/threads", name="recent").mock(
            return_value=httpx.Response(200, json={"data": data}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        q = parse_qs(request.url.query.decode())
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert q["fields"] == ["id,text,timestamp,permalink,media_type"] and int(q["since"][0]) > 0

    def recovered_id(self) -> str:
        return "18100000000000077"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "th-long-lived-new", "token_type": "bearer",
                                           "expires_in": 5183944}) if ok else \
            httpx.Response(400, json={"error": {"message": "Error validating access token", "type": "OAuthException",
                                                "code": 190, "fbtrace_id": "x"}})
        router.get(f"{API}/refresh_access_token", name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        q = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.url.query.decode()).items()}
        assert q == {"grant_type": "th_refresh_token", "access_token": TOKEN}
        assert fresh["access_token"] == "th-long-lived-new" and fresh["expires_at"]

    def processing_failure_words(self) -> str:
        return "Threads could not process the media: FAILED_PROCESSING_VIDEO."
