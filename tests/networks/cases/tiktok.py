"""The TikTok contract case (TikTok publishes no machine-readable description). Facts from TikTok's Content Posting
API reference: https://developers.tiktok.com/doc/content-posting-api-reference-direct-post (video/init,
post_info, source_info), https://developers.tiktok.com/doc/content-posting-api-reference-photo-post (content/init),
https://developers.tiktok.com/doc/content-posting-api-reference-query-creator-info (creator_info),
https://developers.tiktok.com/doc/content-posting-api-reference-get-video-status (status/fetch),
https://developers.tiktok.com/doc/oauth-user-access-token-management (token refresh).
`POST /v2/post/publish/creator_info/query/` → `data.privacy_level_options`, `comment_disabled`, `duet_disabled`, `stitch_disabled`; `POST /v2/post/publish/video/init/` (`post_info`,
`source_info.source=PULL_FROM_URL`, `video_url`) → `data.publish_id`; `POST /v2/post/publish/content/init/`
(`media_type=PHOTO`, `post_mode=DIRECT_POST`, `photo_images`); `POST /v2/post/publish/status/fetch/` → `status`
(PROCESSING_DOWNLOAD, PUBLISH_COMPLETE, FAILED with `fail_reason`) and `publicaly_available_post_id`; errors as
`{"error": {"code", "message", "log_id"}}`; `POST /v2/oauth/token/` (form `client_key`, `client_secret`,
`grant_type=refresh_token`, `refresh_token`)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.tiktok import TikTokProvider
from tests.networks.contract import image, video

API = "https://tiktok.test"
TOKEN = "act.tiktok-access-SECRET"
REFRESH = "rft.tiktok-refresh-SECRET"
CLIENT_SECRET = "tiktok-client-secret-SECRET"
OK = {"code": "ok", "message": "", "log_id": "202611240000"}


def _json(request: httpx.Request) -> Any:
    return json.loads(request.content)


class TikTokCase:
    platform = "tiktok"
    provider_name = "tiktok"
    supports = {"async_media", "media"}  # a video (processed asynchronously) or photos
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]
    processed_before_write = False  # media processing ends before the request that creates the post
    text_kind = "async_media"

    def provider(self) -> TikTokProvider:
        return TikTokProvider(api_url=API, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_tt", platform="tiktok", status="connected",
                       provider_account_id="-000ZdJ4a2rt", state={"username": "roastery"},
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "ck-1",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"})

    def post(self, kind: str) -> PostRequest:
        media = [image(), image()] if kind == "media" else [video()]
        return PostRequest(platform="tiktok", post_type="IMAGE" if kind == "media" else "VIDEO",
                           text="Spring roast is here", title="Spring roast", media=media, idempotency_token="tok_1",
                           settings={"privacy_level": "SELF_ONLY", "agreed_to_terms": True, "allow_duet": False})

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        from tests.media.support import upload, video_bytes

        media = await upload(env, flow.key, flow.brand.id, video_bytes(720, 1280, seconds=4.0), "video/mp4", "v.mp4")
        return {"post_type": "VIDEO", "media_ids": [media["media"]["id"] if "media" in media else media["id"]],
                "privacy_level": "SELF_ONLY", "agreed_to_terms": True}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.post(f"{API}/v2/post/publish/creator_info/query/", name="creator").mock(return_value=httpx.Response(
            200, json={"data": {"creator_username": "roastery", "creator_nickname": "Roastery",
                                "privacy_level_options": ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"],
                                "comment_disabled": False, "duet_disabled": False, "stitch_disabled": True,
                                "max_video_post_duration_sec": 300}, "error": OK}))
        init = httpx.Response(200, json={"data": {"publish_id": "v_pub_url~v2.7388"}, "error": OK})
        router.post(f"{API}/v2/post/publish/video/init/", name="init").mock(return_value=init)
        router.post(f"{API}/v2/post/publish/content/init/", name="photo_init").mock(return_value=init)
        done = {"status": "PUBLISH_COMPLETE", "publicaly_available_post_id": ["7388000000000000042"]}
        states = {"ok": [{"status": "PROCESSING_DOWNLOAD"}, done],
                  "failed": [{"status": "FAILED", "fail_reason": "file_format_check_failed<x>"}],
                  "stuck": [{"status": "PROCESSING_UPLOAD"}] * 200}[processing]
        answers = iter(states)
        router.post(f"{API}/v2/post/publish/status/fetch/", name="status").mock(
            side_effect=lambda request: httpx.Response(200, json={"data": next(answers), "error": OK}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        route = "photo_init" if kind == "media" else "init"
        request = router.routes[route].calls[0].request
        for r in (request, router.routes["creator"].calls[0].request, router.routes["status"].calls[0].request):
            assert r.method == "POST" and r.headers["authorization"] == f"Bearer {TOKEN}"
            assert r.headers["content-type"] == "application/json; charset=UTF-8"
        body = _json(request)
        if kind == "media":
            assert body["media_type"] == "PHOTO" and body["post_mode"] == "DIRECT_POST"
            assert body["source_info"] == {"source": "PULL_FROM_URL", "photo_cover_index": 0,
                                           "photo_images": [m["url"] for m in post.media]}
            assert body["post_info"]["description"] == post.text and body["post_info"]["title"] == post.title
        else:
            assert body["source_info"] == {"source": "PULL_FROM_URL", "video_url": post.media[0]["url"]}
            assert body["post_info"]["title"] == post.text
            assert body["post_info"]["disable_duet"] is True and body["post_info"]["disable_stitch"] is True
        assert body["post_info"]["privacy_level"] == "SELF_ONLY" and body["post_info"]["disable_comment"] is False
        assert _json(router.routes["status"].calls[0].request) == {"publish_id": "v_pub_url~v2.7388"}
        assert result.publish_id == self.published_id() and result.permalink_url == self.permalink(
            self.published_id()).replace("/video/", "/photo/" if kind == "media" else "/video/")

    def published_id(self) -> str:
        return "7388000000000000042"

    def permalink(self, post_id: str) -> str:
        return f"https://www.tiktok.com/@roastery/video/{post_id}"

    def first_write(self) -> str:
        return "init"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        pass  # TikTok cannot be searched in the granted scopes (documented)

    def check_recent(self, router: respx.MockRouter) -> None:
        pass

    def recovered_id(self) -> str | None:
        return None

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "act.new", "expires_in": 86400, "open_id": "-000ZdJ4a2rt",
                                           "refresh_expires_in": 31536000, "refresh_token": "rft.new",
                                           "scope": "user.info.basic,video.publish", "token_type": "Bearer"}) \
            if ok else httpx.Response(400, json={"error": "invalid_grant", "error_description": "Refresh token is invalid",
                                                 "log_id": "x"})
        router.post(f"{API}/v2/oauth/token/", name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        request = router.routes["token"].calls[0].request
        assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        assert {k: v[0] for k, v in parse_qs(request.content.decode()).items()} == {
            "client_key": "ck-1", "client_secret": CLIENT_SECRET, "grant_type": "refresh_token",
            "refresh_token": REFRESH}
        assert fresh["access_token"] == "act.new" and fresh["refresh_token"] == "rft.new"

    def processing_failure_words(self) -> str:
        return "TikTok could not process the media: file_format_check_failedx"
