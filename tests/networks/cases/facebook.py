"""The Facebook Pages contract case. Facts from Meta's Graph API reference:
https://developers.facebook.com/docs/graph-api/reference/page/feed/ (POST /{page-id}/feed `message`, `link`,
`attached_media` of `{"media_fbid"}` → `{id}`), https://developers.facebook.com/docs/graph-api/reference/page/photos/
(POST /{page-id}/photos `url`, `message`, `published=false` → `{id, post_id}`),
https://developers.facebook.com/docs/video-api/guides/reels-publishing (POST /{page-id}/video_reels
`upload_phase=start` → `{video_id, upload_url}`; POST rupload.facebook.com/video-upload/{version}/{video-id} with
headers `Authorization: OAuth <page token>` and `file_url`; `upload_phase=finish`, `video_id`,
`video_state=PUBLISHED`, `description` → `{success}`; GET /{video-id}?fields=status → `video_status`,
`uploading_phase`, `processing_phase`, `publishing_phase`),
https://developers.facebook.com/docs/pages-api/overview (GET /me/accounts → Pages with `access_token`),
https://developers.facebook.com/docs/facebook-login/guides/access-tokens/get-long-lived (GET /oauth/access_token
?grant_type=fb_exchange_token&client_id&client_secret&fb_exchange_token); Graph errors `{"error": {"code"}}`."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.facebook import FacebookProvider
from providers.versions import GRAPH
from tests.networks.contract import image, video

API = f"https://graph.test/{GRAPH.version}"  # the Graph version of providers/versions.py
VIDEO_API = f"https://graph-video.test/{GRAPH.version}"
RUPLOAD = f"https://rupload.test/video-upload/{GRAPH.version}"
USER_TOKEN = "fb-user-token-SECRET"
PAGE_TOKEN = "fb-page-token-SECRET"
CLIENT_SECRET = "fb-client-secret-SECRET"
PAGE = "104000000000001"


def _form(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


class FacebookCase:
    platform = "facebook"
    provider_name = "facebook"
    supports = {"text", "media", "async_media", "carousel"}  # no threads on Facebook
    secrets = [USER_TOKEN, PAGE_TOKEN, CLIENT_SECRET]
    processed_before_write = False  # a Reel is processed after `finish` (its publishing request)
    text_kind = "text"

    def provider(self) -> FacebookProvider:
        return FacebookProvider(graph_url=API, video_url=VIDEO_API, rupload_url=RUPLOAD, processing_budget=3.0,
                                poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_fb", platform="facebook", status="connected", provider_account_id=PAGE,
                       credentials={"access_token": USER_TOKEN, "page_tokens": {PAGE: PAGE_TOKEN},
                                    "client_id": "app-fb", "client_secret": CLIENT_SECRET,
                                    "expires_at": "2026-01-01T00:00:00Z"}, state={"username": "Roastery"})

    def post(self, kind: str) -> PostRequest:
        media = {"media": [image()], "async_media": [video()], "carousel": [image(), image()]}.get(kind, [])
        post_type = {"async_media": "FB_REEL", "media": "FB_POST", "carousel": "FB_POST"}.get(kind, "FB_TEXT")
        return PostRequest(platform="facebook", post_type=post_type, text="Spring roast is here https://ex.test/r",
                           media=media, settings={"post_type": post_type}, idempotency_token="tok_1")

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        return {"post_type": "FB_TEXT"}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.post(f"{API}/{PAGE}/feed", name="feed").mock(
            return_value=httpx.Response(200, json={"id": f"{PAGE}_900"}))
        photos = iter(["501", "502", "503"])

        def photo(request: httpx.Request) -> httpx.Response:
            form = _form(request)
            pid = next(photos)
            body = {"id": pid} if form.get("published") == "false" else {"id": pid, "post_id": f"{PAGE}_901"}
            return httpx.Response(200, json=body)

        router.post(f"{API}/{PAGE}/photos", name="photos").mock(side_effect=photo)

        def reels(request: httpx.Request) -> httpx.Response:
            if _form(request).get("upload_phase") == "start":
                return httpx.Response(200, json={"video_id": "7700", "upload_url": f"{RUPLOAD}/7700"})
            return httpx.Response(200, json={"success": True})

        router.post(f"{API}/{PAGE}/video_reels", name="reels").mock(side_effect=reels)
        router.post(f"{RUPLOAD}/7700", name="upload").mock(return_value=httpx.Response(200, json={"success": True}))
        processing_phase = {"status": "in_progress"}
        states = {"ok": [{"video_status": "processing", "processing_phase": processing_phase},
                         {"video_status": "ready", "processing_phase": {"status": "complete"},
                          "publishing_phase": {"status": "complete", "publish_status": "published"}}],
                  "failed": [{"video_status": "error", "processing_phase": {
                      "status": "error", "errors": [{"code": 1363008, "message": "unsupported codec <script>"}]}}],
                  "stuck": [{"video_status": "processing", "processing_phase": processing_phase}] * 200}[processing]
        answers = iter(states)
        router.get(f"{API}/7700", name="status").mock(
            side_effect=lambda request: httpx.Response(200, json={"id": "7700", "status": next(answers)}))
        for post_id in (f"{PAGE}_900", f"{PAGE}_901"):
            router.get(f"{API}/{post_id}", name=f"permalink_{post_id}").mock(return_value=httpx.Response(
                200, json={"id": post_id, "permalink_url": self.permalink(post_id)}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        writes = [c.request for name in ("feed", "photos", "reels") for c in router.routes[name].calls]
        assert writes
        for request in writes:
            assert request.headers["authorization"] == f"Bearer {PAGE_TOKEN}" and "token" not in str(request.url)
            assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        if kind == "text":
            assert _form(router.routes["feed"].calls[0].request) == {"message": post.text, "link": "https://ex.test/r"}
            assert result.publish_id == f"{PAGE}_900" and result.permalink_url == self.permalink(f"{PAGE}_900")
        elif kind == "media":
            assert _form(router.routes["photos"].calls[0].request) == {"url": post.media[0]["url"],
                                                                      "message": post.text}
            assert not router.routes["feed"].called
            assert result.publish_id == f"{PAGE}_901" and result.permalink_url == self.permalink(f"{PAGE}_901")
        elif kind == "carousel":  # photos uploaded unpublished, then one feed post attaching them
            uploads = [_form(c.request) for c in router.routes["photos"].calls]
            assert uploads == [{"url": m["url"], "published": "false"} for m in post.media]
            feed = _form(router.routes["feed"].calls[0].request)
            assert feed == {"message": post.text, "attached_media[0]": json.dumps({"media_fbid": "501"}),
                            "attached_media[1]": json.dumps({"media_fbid": "502"})}
            assert result.publish_id == f"{PAGE}_900"
        elif kind == "async_media":
            start, finish = (_form(c.request) for c in router.routes["reels"].calls)
            assert start == {"upload_phase": "start"}
            assert finish == {"upload_phase": "finish", "video_id": "7700", "video_state": "PUBLISHED",
                              "description": post.text}
            upload = router.routes["upload"].calls[0].request
            assert upload.headers["authorization"] == f"OAuth {PAGE_TOKEN}"
            assert upload.headers["file_url"] == post.media[0]["url"]
            status = router.routes["status"].calls[-1].request
            assert parse_qs(status.url.query.decode()) == {"fields": ["status"]}
            assert result.publish_id == "7700" and result.permalink_url == "https://www.facebook.com/reel/7700"

    def published_id(self) -> str:
        return f"{PAGE}_900"

    def permalink(self, post_id: str) -> str:
        return f"https://www.facebook.com/{post_id.replace('_', '/posts/')}"

    def first_write(self) -> str:
        return "feed"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        data = [{"id": f"{PAGE}_800", "message": "older", "created_time": "2026-11-23T10:00:00+0000"}]
        if present:
            data.insert(0, {"id": f"{PAGE}_977", "message": post.text, "created_time": "2026-11-24T00:01:00+0000",
                            "permalink_url": self.permalink(f"{PAGE}_977")})
        router.get(f"{API}/{PAGE}/posts", name="recent").mock(return_value=httpx.Response(200, json={"data": data}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        q = parse_qs(request.url.query.decode())
        assert request.headers["authorization"] == f"Bearer {PAGE_TOKEN}"
        assert q["fields"] == ["id,message,created_time,permalink_url"] and int(q["since"][0]) > 0

    def recovered_id(self) -> str:
        return f"{PAGE}_977"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "fb-user-long-new", "token_type": "bearer",
                                           "expires_in": 5183944}) if ok else \
            httpx.Response(400, json={"error": {"message": "Error validating access token", "type": "OAuthException",
                                                "code": 190, "fbtrace_id": "x"}})
        router.get(f"{API}/oauth/access_token", name="token").mock(return_value=answer)
        router.get(f"{API}/me/accounts", name="pages").mock(return_value=httpx.Response(200, json={"data": [
            {"id": PAGE, "name": "Roastery", "access_token": PAGE_TOKEN, "category": "Coffee shop"}]}))

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        q = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.url.query.decode()).items()}
        assert q == {"grant_type": "fb_exchange_token", "client_id": "app-fb", "client_secret": CLIENT_SECRET,
                     "fb_exchange_token": USER_TOKEN}
        pages = router.routes["pages"].calls[0].request
        assert pages.headers["authorization"] == "Bearer fb-user-long-new"
        assert fresh["access_token"] == "fb-user-long-new" and fresh["page_tokens"] == {PAGE: PAGE_TOKEN}
        assert fresh["expires_at"]

    def processing_failure_words(self) -> str:
        return "Facebook could not process the video: processing failed."
