"""The Instagram contract case. Facts from Meta's Instagram Platform reference (developers.facebook.com/docs/
instagram-platform/content-publishing): `POST /{ig-user-id}/media` (form `image_url` | `media_type=REELS` +
`video_url` | `media_type=STORIES` | children with `is_carousel_item=true` then `media_type=CAROUSEL` +
`children`; `caption`) → `{id}`; `GET /{ig-container-id}?fields=status_code` (`IN_PROGRESS`, `FINISHED`,
`ERROR`, `EXPIRED`, `PUBLISHED`); `POST /{ig-user-id}/media_publish` (`creation_id`) → `{id}`;
`GET /{ig-media-id}?fields=permalink`; `GET /{ig-user-id}/media`; Graph errors `{"error": {"code", ...}}`
(190 invalid token, 4/17/32/613 rate limits); long-lived token `GET /oauth/access_token?grant_type=fb_exchange_token`."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.instagram import InstagramProvider
from providers.versions import GRAPH
from tests.networks.contract import image, video

API = f"https://graph.test/{GRAPH.version}"  # the Graph version of providers/versions.py
TOKEN = "ig-access-token-SECRET"
CLIENT_SECRET = "ig-client-secret-SECRET"
USER = "17841400000000001"


def _form(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


class InstagramCase:
    platform = "instagram"
    provider_name = "instagram"
    supports = {"media", "async_media", "carousel"}  # every Instagram post has media; no threads
    secrets = [TOKEN, CLIENT_SECRET]
    processed_before_write = True  # media processing ends before the request that creates the post
    text_kind = "media"

    def provider(self) -> InstagramProvider:
        return InstagramProvider(graph_url=API, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_ig", platform="instagram", status="connected", provider_account_id=USER,
                       credentials={"access_token": TOKEN, "client_id": "app-1", "client_secret": CLIENT_SECRET,
                                    "expires_at": "2026-01-01T00:00:00Z"}, state={"username": "roastery"})

    def post(self, kind: str) -> PostRequest:
        media = {"media": [image()], "async_media": [video()], "carousel": [image(), video()]}.get(kind, [image()])
        post_type = "GRID_POST" if kind in ("media", "carousel") else "REEL"
        return PostRequest(platform="instagram", post_type=post_type, text="Spring roast is here #coffee",
                           media=media, settings={"collaborators": ["friend"]}, idempotency_token="tok_1")

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        from tests.media.support import image_bytes, upload

        media = await upload(env, flow.key, flow.brand.id, image_bytes(1080, 1080, "JPEG"), "image/jpeg", "a.jpg")
        return {"post_type": "GRID_POST", "media_ids": [media["media"]["id"] if "media" in media else media["id"]]}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        ids = iter([f"1790000000000000{n}" for n in range(1, 10)])
        router.post(f"{API}/{USER}/media", name="container").mock(
            side_effect=lambda request: httpx.Response(200, json={"id": next(ids)}))
        states = {"ok": ["IN_PROGRESS", "FINISHED"], "failed": ["ERROR"], "stuck": ["IN_PROGRESS"] * 200}[processing]
        answers: dict[str, Any] = {}

        def status(request: httpx.Request) -> httpx.Response:
            cid = request.url.path.rsplit("/", 1)[-1]
            seq = answers.setdefault(cid, iter(states if kind == "async_media" or processing != "ok"
                                               else ["FINISHED"]))
            code = next(seq)
            body = {"id": cid, "status_code": code}
            if code == "ERROR":
                body["status"] = "Error: unsupported codec <b>"
            return httpx.Response(200, json=body)

        router.get(path__regex=rf"^/{re.escape(GRAPH.version)}/1790000000000000\d$", name="status").mock(
            side_effect=status)
        router.post(f"{API}/{USER}/media_publish", name="publish").mock(
            return_value=httpx.Response(200, json={"id": "18000000000000042"}))
        router.get(f"{API}/18000000000000042", name="permalink").mock(return_value=httpx.Response(
            200, json={"id": "18000000000000042", "permalink": "https://www.instagram.com/p/ABC123/"}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        containers = [c.request for c in router.routes["container"].calls]
        for request in [*containers, router.routes["publish"].calls[0].request]:
            assert request.headers["authorization"] == f"Bearer {TOKEN}" and "access_token" not in str(request.url)
            assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        forms = [_form(r) for r in containers]
        if kind == "carousel":
            assert forms[0] == {"image_url": post.media[0]["url"], "is_carousel_item": "true"}
            assert forms[1] == {"media_type": "VIDEO", "video_url": post.media[1]["url"], "is_carousel_item": "true"}
            assert forms[2] == {"media_type": "CAROUSEL", "children": "17900000000000001,17900000000000002",
                                "caption": post.text, "collaborators": "friend"}
        elif kind == "async_media":
            assert forms == [{"media_type": "REELS", "video_url": post.media[0]["url"], "caption": post.text,
                              "collaborators": "friend", "share_to_feed": "true"}]
        else:
            assert forms == [{"image_url": post.media[0]["url"], "caption": post.text, "collaborators": "friend"}]
        status = router.routes["status"].calls[-1].request
        assert parse_qs(status.url.query.decode()) == {"fields": ["status_code,status"]}
        assert _form(router.routes["publish"].calls[0].request) == {"creation_id": forms and
                                                                    f"1790000000000000{len(forms)}"}
        assert result.publish_id == self.published_id() and result.permalink_url == self.permalink("")

    def published_id(self) -> str:
        return "18000000000000042"

    def permalink(self, post_id: str) -> str:
        return "https://www.instagram.com/p/ABC123/"

    def first_write(self) -> str:
        return "publish"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        data = [{"id": "17999", "caption": "older", "timestamp": "2026-11-23T10:00:00+0000"}]
        if present:
            data.insert(0, {"id": "18000000000000077", "caption": post.text, "media_type": "IMAGE",
                            "timestamp": "2026-11-24T00:01:00+0000",
                            "permalink": "https://www.instagram.com/p/XYZ/"})
        router.get(f"{API}/{USER}/media", name="recent").mock(return_value=httpx.Response(200, json={"data": data}))

    def check_recent(self, router: respx.MockRouter) -> None:
        q = parse_qs(router.routes["recent"].calls[0].request.url.query.decode())
        assert q["fields"] == ["id,caption,timestamp,permalink,media_type"] and int(q["since"][0]) > 0

    def recovered_id(self) -> str:
        return "18000000000000077"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "ig-long-lived", "token_type": "bearer",
                                           "expires_in": 5183944}) if ok else \
            httpx.Response(400, json={"error": {"message": "Error validating access token", "type": "OAuthException",
                                                "code": 190, "fbtrace_id": "x"}})
        router.get(f"{API}/oauth/access_token", name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        q = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.url.query.decode()).items()}
        assert q == {"grant_type": "fb_exchange_token", "client_id": "app-1", "client_secret": CLIENT_SECRET,
                     "fb_exchange_token": TOKEN}
        assert fresh["access_token"] == "ig-long-lived" and fresh["expires_at"]

    def processing_failure_words(self) -> str:
        return "Instagram could not process the media: Error: unsupported codec"
