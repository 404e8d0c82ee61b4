"""The YouTube contract case. Facts from the YouTube Data API v3 reference:
https://developers.google.com/youtube/v3/docs/videos/insert, the resumable upload guide
https://developers.google.com/youtube/v3/guides/using_resumable_upload_protocol (`POST /upload/youtube/v3/videos?
uploadType=resumable&part=…` with the video resource, `X-Upload-Content-Length`, `X-Upload-Content-Type`; the
session URI in `Location`; a `PUT` of the bytes answers the video resource),
https://developers.google.com/youtube/v3/docs/videos/list (`part=processingDetails,status`:
`processingDetails.processingStatus` processing|succeeded|failed|terminated, `status.uploadStatus`,
`status.failureReason`), https://developers.google.com/youtube/v3/docs/playlistItems/list, channels.list
(`contentDetails.relatedPlaylists.uploads`), and Google's token endpoint
(https://developers.google.com/identity/protocols/oauth2/web-server#offline: `grant_type=refresh_token`, no new
refresh token in the answer).

VIDEO_RESOURCE below is transcribed from the discovery document (youtube.v3 `Video`, `VideoSnippet`,
`VideoStatus` schemas and the insert method's parameters, as google-api-python-client ships it in
googleapiclient/discovery_cache/documents/youtube.v3.json); the library itself is not a test dependency (it pulls
in google-auth, httplib2 and more for one JSON file), so the request is validated against this transcription."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.youtube import YouTubeProvider
from tests.networks.contract import MP4, video

API = "https://yt.test"
TOKEN_URL = "https://oauth2.google.test/token"
TOKEN = "ya29.youtube-access-SECRET"
REFRESH = "1//youtube-refresh-SECRET"
CLIENT_SECRET = "GOCSPX-youtube-client-SECRET"
VIDEO_ID = "Ks-_Mh1QhMc"
FOUND_ID = "fOuNd_42abc"

# youtube.v3 discovery: the writable fields of Video.snippet / Video.status and their JSON types; enums as listed.
VIDEO_RESOURCE = {
    "snippet": {"title": str, "description": str, "tags": list, "categoryId": str, "defaultLanguage": str},
    "status": {"privacyStatus": ("private", "public", "unlisted"), "selfDeclaredMadeForKids": bool,
               "embeddable": bool, "license": ("youtube", "creativeCommon"), "publicStatsViewable": bool,
               "publishAt": str, "containsSyntheticMedia": bool},
}
# videos.insert query parameters (discovery `parameters`): part is required.
INSERT_PARAMS = {"part", "notifySubscribers", "onBehalfOfContentOwner", "onBehalfOfContentOwnerChannel",
                 "uploadType"}


def valid_video_resource(body: Any) -> None:
    assert isinstance(body, dict) and set(body) <= set(VIDEO_RESOURCE), body
    for part, fields in VIDEO_RESOURCE.items():
        for key, value in body.get(part, {}).items():
            rule = fields.get(key)
            assert rule is not None, f"{part}.{key} is not a field of the reference"
            assert value in rule if isinstance(rule, tuple) else isinstance(value, rule), (part, key, value)
    assert body["snippet"]["title"] and len(body["snippet"]["title"]) <= 100
    assert all(isinstance(t, str) for t in body["snippet"].get("tags", []))


class YouTubeCase:
    platform = "youtube"
    provider_name = "youtube"
    supports = {"async_media"}  # one video, processed by YouTube after the upload
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]
    processed_before_write = False  # the upload is the write; processing follows it
    text_kind = "async_media"

    def provider(self) -> YouTubeProvider:
        return YouTubeProvider(api_url=API, token_url=TOKEN_URL, processing_budget=3.0, poll_min=0.0)

    def account(self) -> Account:
        return Account(integration_id="int_yt", platform="youtube", status="connected",
                       provider_account_id="UCroastery0000000000000", state={"username": "@roastery"},
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "gcid.apps",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"})

    def post(self, kind: str) -> PostRequest:
        return PostRequest(platform="youtube", post_type="YT_SHORT", text="Spring roast is here #coffee",
                           title="Spring roast", media=[video()], idempotency_token="tok_1",
                           settings={"title": "Spring roast", "privacy_level": "UNLISTED", "tags": ["coffee", "roast"],
                                     "notify_subscribers": True, "made_for_kids": False})

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        from tests.media.support import upload, video_bytes

        media = await upload(env, flow.key, flow.brand.id, video_bytes(720, 1280, seconds=4.0), "video/mp4", "v.mp4")
        return {"post_type": "YT_SHORT", "media_ids": [media["media"]["id"] if "media" in media else media["id"]],
                "title": "Spring roast", "privacy_level": "UNLISTED", "tags": ["coffee", "roast"]}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.route(method="GET", path__regex=r"/assets/[^/]+$", name="own_media").mock(
            return_value=httpx.Response(200, content=MP4, headers={"content-type": "video/mp4"}))
        router.route(method="POST", host="yt.test", path="/upload/youtube/v3/videos", name="start").mock(
            return_value=httpx.Response(200, headers={
                "location": f"{API}/upload/youtube/v3/videos?uploadType=resumable&upload_id=xa298sd_f&part=snippet,status"}))
        router.route(method="PUT", host="yt.test", path="/upload/youtube/v3/videos", name="upload").mock(
            return_value=httpx.Response(200, json={"kind": "youtube#video", "id": VIDEO_ID,
                                                   "status": {"uploadStatus": "uploaded", "privacyStatus": "unlisted"}}))
        states = {"ok": [({"processingStatus": "processing"}, {"uploadStatus": "uploaded"}),
                         ({"processingStatus": "succeeded"}, {"uploadStatus": "processed"})],
                  "failed": [({"processingStatus": "failed"}, {"uploadStatus": "failed",
                                                               "failureReason": "codec<script>"})],
                  "stuck": [({"processingStatus": "processing"}, {"uploadStatus": "uploaded"})] * 200}[processing]
        answers = iter(states)

        def status(request: httpx.Request) -> httpx.Response:
            details, state = next(answers)
            return httpx.Response(200, json={"kind": "youtube#videoListResponse", "items": [
                {"kind": "youtube#video", "id": VIDEO_ID, "processingDetails": details, "status": state}]})
        router.route(method="GET", host="yt.test", path="/youtube/v3/videos", name="status").mock(side_effect=status)

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        start = router.routes["start"].calls[0].request
        q = parse_qs(start.url.query.decode())
        assert set(q) <= INSERT_PARAMS
        assert q == {"uploadType": ["resumable"], "part": ["snippet,status"], "notifySubscribers": ["true"]}
        assert start.headers["authorization"] == f"Bearer {TOKEN}"
        assert start.headers["content-type"] == "application/json"
        assert start.headers["x-upload-content-length"] == str(len(MP4))
        assert start.headers["x-upload-content-type"] == "video/mp4"
        body = json.loads(start.content)
        valid_video_resource(body)
        assert body == {"snippet": {"title": "Spring roast", "description": post.text, "categoryId": "22",
                                    "tags": ["coffee", "roast"]},
                        "status": {"privacyStatus": "unlisted", "selfDeclaredMadeForKids": False}}
        upload = router.routes["upload"].calls[0].request
        assert upload.method == "PUT" and upload.content == MP4 and upload.headers["content-type"] == "video/mp4"
        assert parse_qs(upload.url.query.decode())["upload_id"] == ["xa298sd_f"]
        assert upload.headers["authorization"] == f"Bearer {TOKEN}"
        status = router.routes["status"].calls[0].request
        assert parse_qs(status.url.query.decode()) == {"part": ["processingDetails,status"], "id": [VIDEO_ID]}
        assert router.routes["status"].call_count == 2
        assert result.publish_id == VIDEO_ID and result.permalink_url == self.permalink(VIDEO_ID)

    def published_id(self) -> str:
        return VIDEO_ID

    def permalink(self, post_id: str) -> str:
        return f"https://www.youtube.com/shorts/{post_id}"

    def first_write(self) -> str:
        return "start"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        router.route(method="GET", host="yt.test", path="/youtube/v3/channels", name="channels").mock(
            return_value=httpx.Response(200, json={"items": [{"id": "UCroastery0000000000000", "contentDetails": {
                "relatedPlaylists": {"likes": "", "uploads": "UUroastery0000000000000"}}}]}))

        def item(video_id: str, title: str, published: str) -> dict[str, Any]:
            return {"kind": "youtube#playlistItem", "snippet": {
                "publishedAt": published, "title": title, "description": post.text,
                "resourceId": {"kind": "youtube#video", "videoId": video_id}}}
        items = [item("otherVideo1", "Another roast", "2026-12-01T00:02:00Z"),
                 item("olderSame01", "Spring roast", "2020-01-01T00:00:00Z")]  # same title, long before the run
        if present:
            items.insert(0, item(FOUND_ID, "Spring roast", "2026-12-01T00:01:00Z"))
        router.route(method="GET", host="yt.test", path="/youtube/v3/playlistItems", name="recent").mock(
            return_value=httpx.Response(200, json={"kind": "youtube#playlistItemListResponse", "items": items}))

    def check_recent(self, router: respx.MockRouter) -> None:
        channels = router.routes["channels"].calls[0].request
        assert parse_qs(channels.url.query.decode()) == {"part": ["contentDetails"], "mine": ["true"]}
        request = router.routes["recent"].calls[0].request
        assert parse_qs(request.url.query.decode()) == {"part": ["snippet"], "playlistId": ["UUroastery0000000000000"],
                                                        "maxResults": ["50"]}
        assert request.headers["authorization"] == f"Bearer {TOKEN}"

    def recovered_id(self) -> str:
        return FOUND_ID

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "ya29.new", "expires_in": 3599, "token_type": "Bearer",
                                           "scope": "https://www.googleapis.com/auth/youtube.upload"}) \
            if ok else httpx.Response(400, json={"error": "invalid_grant",
                                                 "error_description": "Token has been expired or revoked."})
        router.post(TOKEN_URL, name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        form = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.content.decode()).items()}
        assert form == {"grant_type": "refresh_token", "refresh_token": REFRESH, "client_id": "gcid.apps",
                        "client_secret": CLIENT_SECRET}
        assert fresh["access_token"] == "ya29.new" and fresh["refresh_token"] == REFRESH  # Google keeps it

    def processing_failure_words(self) -> str:
        return "YouTube could not process the video: codecscript"
