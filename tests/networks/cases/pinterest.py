"""The Pinterest contract case. Facts from the Pinterest API v5 reference (https://developers.pinterest.com/docs/
api/v5/pins-create, /boards-list, /media-create, /media-get, /boards-list_pins, /oauth-token): `POST /v5/pins`
(PinCreate), `POST /v5/media` (`media_type=video`) → `media_id`, `upload_url`, `upload_parameters`; the file
POSTed to `upload_url` as multipart with those parameters; `GET /v5/media/{id}` → `status`
registered|processing|succeeded|failed; `GET /v5/boards/{id}/pins` → `items`; `POST /v5/oauth/token` with HTTP
Basic client authentication and `grant_type=refresh_token`.

PIN_CREATE and MEDIA_SOURCES below are transcribed from Pinterest's official OpenAPI document (components
`PinCreate`, `PinMediaSourceImageURL`, `PinMediaSourceImagesURL`, `PinMediaSourceVideoID`,
`MediaUploadCreate`; https://github.com/pinterest/api-description, v5): the document is not loaded at test time,
so the requests the adapter makes are validated against this transcription."""

from __future__ import annotations

import base64
import json
import re
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.pinterest import PinterestProvider
from tests.networks.contract import image, video

API = "https://pinterest.test"
UPLOAD = "https://pinterest-media-upload.test/"
TOKEN = "pina_pinterest-access-SECRET"
REFRESH = "pinr_pinterest-refresh-SECRET"
CLIENT_SECRET = "pinterest-client-secret-SECRET"
BOARD = "549755885175"
PIN_ID = "813744226420795884"
DIGITS = r"^\d+$"

# PinCreate: property -> (type, maxLength or None, pattern or None). No property is required by the schema
# itself; the API requires board_id and media_source (the reference's prose), and so do we.
PIN_CREATE = {"alt_text": (str, 500, None), "board_id": (str, None, DIGITS), "board_section_id": (str, None, DIGITS),
              "description": (str, 800, None), "dominant_color": (str, None, None), "link": (str, 2048, None),
              "media_source": (dict, None, None), "parent_pin_id": (str, None, DIGITS), "title": (str, 100, None)}
# media_source by source_type: (required, allowed) properties.
MEDIA_SOURCES = {
    "image_url": ({"source_type", "url"}, {"source_type", "url", "is_standard"}),
    "multiple_image_urls": ({"source_type", "items"}, {"source_type", "items", "index"}),
    "video_id": ({"source_type", "media_id"}, {"source_type", "media_id", "cover_image_url", "cover_image_data",
                                               "cover_image_content_type", "cover_image_key_frame_time",
                                               "is_standard"}),
}


def valid_pin(body: Any) -> None:
    assert isinstance(body, dict) and {"board_id", "media_source"} <= set(body), body
    for key, value in body.items():
        assert key in PIN_CREATE, f"{key} is not a PinCreate property"
        kind, limit, pattern = PIN_CREATE[key]
        assert isinstance(value, kind), (key, value)
        assert limit is None or len(value) <= limit, key
        assert pattern is None or re.match(pattern, value), key
    source = body["media_source"]
    required, allowed = MEDIA_SOURCES[source["source_type"]]
    assert required <= set(source) <= allowed, source
    if source["source_type"] == "multiple_image_urls":  # PinMediaSourceImagesURL: 2-5 items, each with a url
        assert 2 <= len(source["items"]) <= 5 and all(isinstance(i.get("url"), str) for i in source["items"])
    if source["source_type"] == "video_id":
        assert re.match(DIGITS, source["media_id"])
        assert isinstance(source.get("cover_image_key_frame_time", 0), int) and source.get("cover_image_key_frame_time", 0) >= 0


def _json(request: httpx.Request) -> Any:
    return json.loads(request.content)


class PinterestCase:
    platform = "pinterest"
    provider_name = "pinterest"
    supports = {"media", "carousel", "async_media"}  # every Pin has media; video is processed asynchronously
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]
    processed_before_write = True  # the video is processed before the Pin is created
    text_kind = "media"

    def provider(self) -> PinterestProvider:
        return PinterestProvider(api_url=API, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_pin", platform="pinterest", status="connected",
                       provider_account_id="2783136121146311751", state={"username": "roastery"},
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "1484362",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"})

    def post(self, kind: str) -> PostRequest:
        media = {"carousel": [image(), image()], "async_media": [video()]}.get(kind, [image()])
        return PostRequest(platform="pinterest", post_type="PIN_VIDEO" if kind == "async_media" else "PIN_IMAGE",
                           text="Spring roast is here", title="Spring roast", media=media, idempotency_token="tok_1",
                           settings={"board_id": BOARD, "title": "Spring roast", "link": "https://roastery.example/s",
                                     "alt_text": "A bag of coffee beans"})

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        from tests.media.support import image_bytes, upload

        media = await upload(env, flow.key, flow.brand.id, image_bytes(1000, 1500, "JPEG"), "image/jpeg", "a.jpg")
        return {"post_type": "PIN_IMAGE", "media_ids": [media["media"]["id"] if "media" in media else media["id"]],
                "board_id": BOARD, "title": "Spring roast"}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.post(f"{API}/v5/pins", name="pin").mock(side_effect=lambda request: httpx.Response(201, json={
            "id": PIN_ID, "created_at": "2026-11-24T00:00:00", "board_id": _json(request)["board_id"],
            "description": _json(request).get("description")}))
        router.post(f"{API}/v5/media", name="register").mock(return_value=httpx.Response(201, json={
            "media_id": "12345", "media_type": "video", "upload_url": UPLOAD,
            "upload_parameters": {"key": "uploads/11/aa/22/3:video:203014033110991560", "policy": "eyJleHBpcmF0aW9u",
                                  "x-amz-algorithm": "AWS4-HMAC-SHA256", "x-amz-signature": "fcd6309a6aaee2"}}))
        router.post(UPLOAD, name="upload").mock(return_value=httpx.Response(204))
        states = {"ok": ["registered", "processing", "succeeded"], "failed": ["failed"],
                  "stuck": ["processing"] * 200}[processing]
        answers = iter(states)
        router.get(f"{API}/v5/media/12345", name="media_status").mock(side_effect=lambda request: httpx.Response(
            200, json={"media_id": "12345", "media_type": "video", "status": next(answers)}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        request = router.routes["pin"].calls[0].request
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["content-type"] == "application/json"
        body = _json(request)
        valid_pin(body)
        assert body["board_id"] == BOARD and body["description"] == post.text and body["title"] == "Spring roast"
        assert body["link"] == "https://roastery.example/s" and body["alt_text"] == "A bag of coffee beans"
        source = body["media_source"]
        if kind == "media":
            assert source == {"source_type": "image_url", "url": post.media[0]["url"]}
        elif kind == "carousel":
            assert source == {"source_type": "multiple_image_urls", "items": [{"url": m["url"]} for m in post.media]}
        else:
            assert source == {"source_type": "video_id", "media_id": "12345", "cover_image_key_frame_time": 0}
            assert _json(router.routes["register"].calls[0].request) == {"media_type": "video"}  # MediaUploadCreate
            upload = router.routes["upload"].calls[0].request
            assert "authorization" not in upload.headers  # the storage URL gets the signed form, not our token
            assert upload.headers["content-type"].startswith("multipart/form-data")
            assert b'name="policy"\r\n\r\neyJleHBpcmF0aW9u' in upload.content and b'name="file"' in upload.content
            assert router.routes["media_status"].call_count == 3
        assert result.publish_id == PIN_ID and result.permalink_url == self.permalink(PIN_ID)

    def published_id(self) -> str:
        return PIN_ID

    def permalink(self, post_id: str) -> str:
        return f"https://www.pinterest.com/pin/{post_id}/"

    def first_write(self) -> str:
        return "pin"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        items = [{"id": "111", "created_at": "2026-12-01T00:02:00", "description": "Another roast", "title": "x"},
                 {"id": "222", "created_at": "2020-01-01T00:00:00", "description": post.text,
                  "title": "Spring roast"}]  # the same Pin long before the run
        if present:
            items.insert(0, {"id": "813744226420799999", "created_at": "2026-12-01T00:01:00",
                             "description": post.text, "title": "Spring roast", "board_id": BOARD})
        router.get(f"{API}/v5/boards/{BOARD}/pins", name="recent").mock(
            return_value=httpx.Response(200, json={"items": items, "bookmark": None}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        assert parse_qs(request.url.query.decode()) == {"page_size": ["50"]}
        assert request.headers["authorization"] == f"Bearer {TOKEN}"

    def recovered_id(self) -> str:
        return "813744226420799999"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "pina_new", "refresh_token": "pinr_new",
                                           "response_type": "refresh_token", "token_type": "bearer",
                                           "expires_in": 2592000, "refresh_token_expires_in": 5184000,
                                           "scope": "boards:read,pins:read,pins:write"}) \
            if ok else httpx.Response(400, json={"code": 1, "message": "Invalid refresh token"})
        router.post(f"{API}/v5/oauth/token", name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        request = router.routes["token"].calls[0].request
        basic = base64.b64encode(f"1484362:{CLIENT_SECRET}".encode()).decode()
        assert request.headers["authorization"] == f"Basic {basic}"
        form = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        assert form == {"grant_type": "refresh_token", "refresh_token": REFRESH}  # OauthAccessTokenRequestRefresh
        assert fresh["access_token"] == "pina_new" and fresh["refresh_token"] == "pinr_new"

    def processing_failure_words(self) -> str:
        return "Pinterest could not process the video"
