"""The LinkedIn contract case. Facts from Microsoft's LinkedIn Community Management reference:
https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api (POST /rest/posts with
`author`, `commentary` in little text format, `visibility`, `distribution.feedDistribution=MAIN_FEED`,
`lifecycleState=PUBLISHED`, `content.media` / `content.multiImage.images` / `content.article`; 201 with the URN in
`x-restli-id`; GET /rest/posts?author=…&q=author&sortBy=LAST_MODIFIED; headers `LinkedIn-Version: YYYYMM` and
`X-Restli-Protocol-Version: 2.0.0`), https://learn.microsoft.com/en-us/linkedin/marketing/community-management/
shares/images-api (POST /rest/images?action=initializeUpload `initializeUploadRequest.owner` → `value.uploadUrl`,
`value.image`; PUT the bytes), https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/
videos-api (POST /rest/videos?action=initializeUpload `owner`, `fileSizeBytes`, `uploadCaptions`,
`uploadThumbnail` → `value.video`, `uploadInstructions[{uploadUrl, firstByte, lastByte}]`, `uploadToken`; PUT
each part, its `ETag` kept; POST /rest/videos?action=finalizeUpload `finalizeUploadRequest.uploadedPartIds`;
GET /rest/videos/{urn} `status` PROCESSING | AVAILABLE | PROCESSING_FAILED with `processingFailureReason`),
https://learn.microsoft.com/en-us/linkedin/shared/authentication/programmatic-refresh-tokens (POST
/oauth/v2/accessToken `grant_type=refresh_token`, `refresh_token`, `client_id`, `client_secret`)."""

from __future__ import annotations

import json
from datetime import date
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers import versions
from providers.base import Account, PostRequest
from providers.linkedin import VERSION, LinkedInProvider
from tests.networks.contract import MP4, PNG, image, video

API = "https://linkedin-api.test"
UPLOAD = "https://linkedin-upload.test"
TOKEN_URL = "https://linkedin-www.test/oauth/v2/accessToken"
TOKEN = "li-access-token-SECRET"
REFRESH = "li-refresh-token-SECRET"
CLIENT_SECRET = "li-client-secret-SECRET"
ORG = "urn:li:organization:5515715"
SHARE = "urn:li:share:7000000000000000042"
VIDEO = "urn:li:video:C5F10AQGKQg_6y2a4sQ"


def _json(request: httpx.Request) -> Any:
    return json.loads(request.content)


class LinkedInCase:
    platform = "linkedin"
    provider_name = "linkedin"
    supports = {"text", "media", "async_media", "carousel"}  # no threads on LinkedIn
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]
    processed_before_write = True  # the video is AVAILABLE before the post is made
    text_kind = "text"

    def provider(self) -> LinkedInProvider:
        return LinkedInProvider(api_url=API, token_url=TOKEN_URL, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_li", platform="linkedin", status="connected", provider_account_id=ORG,
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "li-app",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"},
                       state={"username": "Roastery"})

    def post(self, kind: str) -> PostRequest:
        media = {"media": [image()], "async_media": [video()], "carousel": [image(), image()]}.get(kind, [])
        post_type = {"async_media": "LI_VIDEO", "media": "LI_IMAGE", "carousel": "LI_IMAGE"}.get(kind, "LI_TEXT")
        return PostRequest(platform="linkedin", post_type=post_type, text="Spring roast (light) is here #coffee",
                           title="Spring roast" if kind == "async_media" else None, media=media,
                           settings={"post_type": post_type, "visibility": "PUBLIC"}, idempotency_token="tok_1")

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        return {"post_type": "LI_TEXT", "visibility": "PUBLIC"}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.post(f"{API}/rest/posts", name="create").mock(
            return_value=httpx.Response(201, headers={"x-restli-id": SHARE}))
        images = iter(["C1", "C2", "C3"])

        def init_image(request: httpx.Request) -> httpx.Response:
            n = next(images)
            return httpx.Response(200, json={"value": {"uploadUrlExpiresAt": 1700000000000,
                                                       "uploadUrl": f"{UPLOAD}/img/{n}", "image": f"urn:li:image:{n}"}})

        router.post(host="linkedin-api.test", path="/rest/images", name="image_init").mock(side_effect=init_image)
        router.put(url__startswith=f"{UPLOAD}/img/", name="image_put").mock(return_value=httpx.Response(201))

        def videos(request: httpx.Request) -> httpx.Response:
            if request.url.params["action"] == "initializeUpload":
                return httpx.Response(200, json={"value": {
                    "uploadUrlsExpireAt": 1700000000000, "video": VIDEO, "uploadToken": "",
                    "uploadInstructions": [{"uploadUrl": f"{UPLOAD}/vid/0", "firstByte": 0, "lastByte": 39},
                                           {"uploadUrl": f"{UPLOAD}/vid/1", "firstByte": 40,
                                            "lastByte": len(MP4) - 1}]}})
            return httpx.Response(200)

        router.post(host="linkedin-api.test", path="/rest/videos", name="videos").mock(side_effect=videos)
        etags = iter(["/ambry-video/part0", "/ambry-video/part1"])
        router.put(url__startswith=f"{UPLOAD}/vid/", name="video_put").mock(
            side_effect=lambda request: httpx.Response(200, headers={"etag": next(etags)}))
        states = {"ok": [{"status": "PROCESSING"}, {"status": "AVAILABLE"}],
                  "failed": [{"status": "PROCESSING_FAILED", "processingFailureReason": "Unsupported codec<script>"}],
                  "stuck": [{"status": "PROCESSING"}] * 200}[processing]
        answers = iter(states)
        router.get(host="linkedin-api.test", path__startswith="/rest/videos/", name="status").mock(
            side_effect=lambda request: httpx.Response(200, json={"id": VIDEO, **next(answers)}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        api_calls = [c.request for name in ("create", "image_init", "videos", "status")
                     for c in router.routes[name].calls]
        for request in api_calls:
            assert request.headers["authorization"] == f"Bearer {TOKEN}"
            # A version LinkedIn still supports, 90+ days from the sunset its "API Migration Status" table gives
            # (https://learn.microsoft.com/en-us/linkedin/marketing/integrations/migrations): any six digits passed
            # while 202510 was refused by LinkedIn.
            assert request.headers["linkedin-version"] == VERSION == versions.LINKEDIN.version
            assert not versions.expiring(versions.LINKEDIN, date.today())
            assert request.headers["x-restli-protocol-version"] == "2.0.0"
        create = router.routes["create"].calls[0].request
        assert create.headers["content-type"] == "application/json"
        body = _json(create)
        content = body.pop("content", None)
        assert body == {"author": ORG, "commentary": "Spring roast \\(light\\) is here {hashtag|\\#|coffee}",
                        "visibility": "PUBLIC", "lifecycleState": "PUBLISHED", "isReshareDisabledByAuthor": False,
                        "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [],
                                         "thirdPartyDistributionChannels": []}}
        if kind == "text":
            assert content is None
        elif kind in ("media", "carousel"):
            inits = router.routes["image_init"].calls
            assert [c.request.url.params["action"] for c in inits] == ["initializeUpload"] * len(post.media)
            assert _json(inits[0].request) == {"initializeUploadRequest": {"owner": ORG}}
            put = router.routes["image_put"].calls[0].request
            assert put.content == PNG and put.headers["authorization"] == f"Bearer {TOKEN}"
            assert content == ({"media": {"id": "urn:li:image:C1"}} if kind == "media" else
                               {"multiImage": {"images": [{"id": "urn:li:image:C1"}, {"id": "urn:li:image:C2"}]}})
        else:
            init, final = (c.request for c in router.routes["videos"].calls)
            assert init.url.params["action"] == "initializeUpload" and final.url.params["action"] == "finalizeUpload"
            assert _json(init) == {"initializeUploadRequest": {"owner": ORG, "fileSizeBytes": len(MP4),
                                                               "uploadCaptions": False, "uploadThumbnail": False}}
            parts = [c.request.content for c in router.routes["video_put"].calls]
            assert parts == [MP4[:40], MP4[40:]]
            assert _json(final) == {"finalizeUploadRequest": {
                "video": VIDEO, "uploadToken": "", "uploadedPartIds": ["/ambry-video/part0", "/ambry-video/part1"]}}
            assert router.routes["status"].calls[0].request.url.raw_path.decode() == \
                "/rest/videos/urn%3Ali%3Avideo%3AC5F10AQGKQg_6y2a4sQ"
            assert content == {"media": {"id": VIDEO, "title": "Spring roast"}}
        assert result.publish_id == SHARE and result.permalink_url == self.permalink(SHARE)

    def published_id(self) -> str:
        return SHARE

    def permalink(self, post_id: str) -> str:
        return f"https://www.linkedin.com/feed/update/{post_id}"

    def first_write(self) -> str:
        return "create"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        from providers.linkedin import little_text

        elements = [{"id": "urn:li:share:6999", "commentary": "older", "createdAt": 1763900000000}]
        if present:
            elements.insert(0, {"id": "urn:li:share:7000000000000000077", "commentary": little_text(post.text),
                                "createdAt": 1795478460000, "lifecycleState": "PUBLISHED"})
        router.get(host="linkedin-api.test", path="/rest/posts", name="recent").mock(
            return_value=httpx.Response(200, json={"elements": elements, "paging": {"count": 10, "start": 0}}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        q = {k: v[0] for k, v in parse_qs(request.url.query.decode()).items()}
        assert q == {"author": ORG, "q": "author", "count": "50", "sortBy": "LAST_MODIFIED"}
        assert request.headers["linkedin-version"] == VERSION

    def recovered_id(self) -> str:
        return "urn:li:share:7000000000000000077"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "li-new-access", "expires_in": 5184000,
                                           "refresh_token": "li-new-refresh", "refresh_token_expires_in": 31536000,
                                           "scope": "w_organization_social"}) if ok else \
            httpx.Response(400, json={"error": "invalid_request", "error_description": "The token used in the "
                                                                                       "request has expired"})
        router.post(TOKEN_URL, name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        form = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.content.decode()).items()}
        assert form == {"grant_type": "refresh_token", "refresh_token": REFRESH, "client_id": "li-app",
                        "client_secret": CLIENT_SECRET}
        assert fresh["access_token"] == "li-new-access" and fresh["refresh_token"] == "li-new-refresh"

    def processing_failure_words(self) -> str:
        return "LinkedIn could not process the video: Unsupported codec."
