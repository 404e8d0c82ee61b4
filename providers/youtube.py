"""YouTube through the YouTube Data API v3 with a Google OAuth user token (providers/google.py).

- Upload: `videos.insert` by the resumable protocol: `POST /upload/youtube/v3/videos?uploadType=resumable&
  part=snippet,status&notifySubscribers=…` with the video resource as JSON (`snippet.title`, `description`,
  `tags`, `categoryId`; `status.privacyStatus`, `status.selfDeclaredMadeForKids`) and `X-Upload-Content-Length`
  / `X-Upload-Content-Type`; the answer's `Location` is the session URI, and one `PUT` of the bytes there
  answers the video resource (`id`). The session URI must be on the API's own host (it carries the upload).
- Shorts: YouTube makes a Short of a square or vertical video up to 3 minutes (the registry's YT_SHORT rule);
  the adapter refuses a YT_SHORT whose known size or length breaks that rule rather than publish a plain video,
  and links a Short as `https://www.youtube.com/shorts/{id}`.
- Processing: `GET /youtube/v3/videos?part=processingDetails,status&id=…` until `processingStatus` succeeded
  (bounded backoff within the worker's publish timeout); `failed`/`terminated` or `uploadStatus`
  failed/rejected is a rejection naming YouTube's reason; still processing when the budget is spent is
  transient, and the retry finds the uploaded video (below) instead of uploading again.
- Exactly-once: no idempotency key. `find_post_matching` reads the channel's uploads playlist
  (`channels.list mine=true part=contentDetails` → `relatedPlaylists.uploads`, then `playlistItems.list`) and
  recognises a video published since the run began with exactly the post's title and description.
- Errors: Google's `errors[].reason` (quotaExceeded, rateLimitExceeded → rate_limited; uploadLimitExceeded →
  a refusal naming it), then the status rules.

The API base is `SOCIALPUB_YOUTUBE_API_URL` (default https://www.googleapis.com).
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Any

import anyio
import httpx

from providers import google
from providers.base import (
    Account,
    CheckResult,
    Connection,
    Options,
    PostRequest,
    PostResult,
    ProviderError,
    probe,
    recorded,
)
from providers.http import DEFAULT_TIMEOUT, call, download, json_body, new_client
from providers.metrics import SUPPORT, PostMetrics, from_raw
from schemas.time import parse_timestamp

NETWORK = "YouTube"
API_URL = os.environ.get("SOCIALPUB_YOUTUBE_API_URL", "https://www.googleapis.com").rstrip("/")
# youtube.force-ssl for videos.delete (the cleanup of a post), which neither youtube.upload nor youtube.readonly
# authorizes (https://developers.google.com/youtube/v3/docs/videos/delete, "Authorization").
SCOPES = ("https://www.googleapis.com/auth/youtube.upload", "https://www.googleapis.com/auth/youtube.readonly",
          "https://www.googleapis.com/auth/youtube.force-ssl")
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60
POLL_MIN, POLL_MAX = 5.0, 30.0
RECENT_MAX = 50
SHORT_MAX_SECONDS = 180
CATEGORY = "22"  # People & Blogs, YouTube's default category for uploads
_classify = google.classifier(NETWORK, {
    "uploadLimitExceeded": "the channel reached its upload limit",
    "invalidTitle": "the title was not accepted", "invalidDescription": "the description was not accepted",
    "invalidTags": "the tags were not accepted", "invalidCategoryId": "the category was not accepted",
    "mediaBodyRequired": "the video was not accepted", "youtubeSignupRequired": "the Google account has no channel",
})


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "YouTube account has no access token")
    return token


def _safe(text: Any) -> str:
    return re.sub(r"[^A-Za-z0-9 _.-]", "", str(text or ""))[:80].strip()


async def verify(server: str, token: str) -> Connection:
    """The channel of the authorising Google account (`GET /youtube/v3/channels?mine=true`)."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        body = json_body(await call(client, "GET", "/youtube/v3/channels", network=NETWORK, classify=_classify,
                                    params={"part": "snippet,contentDetails", "mine": "true"}), NETWORK)
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items or not isinstance(items[0], dict) or not items[0].get("id"):
        raise ProviderError("rejected", "no YouTube channel on the Google account",
                            safe_reason="the Google account has no YouTube channel")
    channel = items[0]
    snippet = found if isinstance(found := channel.get("snippet"), dict) else {}
    handle = str(snippet.get("customUrl") or "")[:200]
    uploads = ((channel.get("contentDetails") or {}).get("relatedPlaylists") or {}).get("uploads")
    thumb = ((snippet.get("thumbnails") or {}).get("default") or {}).get("url")
    return Connection(provider_account_id=str(channel["id"]), username=handle or None,
                      display_name=str(snippet.get("title") or handle)[:200] or None, credentials={},
                      state={"username": handle, "uploads": str(uploads or "")[:100]},
                      avatar_url=thumb if isinstance(thumb, str) else None)


# The scopes each operation needs, from each method's Authorization section in the YouTube Data API reference:
# `videos.insert` youtube.upload (https://developers.google.com/youtube/v3/docs/videos/insert); `videos.list`,
# `channels.list` and `playlistItems.list` youtube.readonly (https://developers.google.com/youtube/v3/docs/videos/list,
# /channels/list, /playlistItems/list); `videos.delete` needs youtube or youtube.force-ssl
# (https://developers.google.com/youtube/v3/docs/videos/delete) -- youtube.upload does not cover it.
_UPLOAD = ("https://www.googleapis.com/auth/youtube.upload", "https://www.googleapis.com/auth/youtube.readonly")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:YT_SHORT": _UPLOAD,
    "publish:YT_VIDEO": _UPLOAD,
    "find_post": ("https://www.googleapis.com/auth/youtube.readonly",),
    "delete_post": ("https://www.googleapis.com/auth/youtube|https://www.googleapis.com/auth/youtube.force-ssl",),
    "check": ("https://www.googleapis.com/auth/youtube.readonly",),
    "post_metrics": ("https://www.googleapis.com/auth/youtube.readonly",),
}


class YouTubeProvider:
    name = "youtube"
    metrics_fields = SUPPORT["youtube"].fields
    refresh_ahead = google.REFRESH_AHEAD  # the token tick refreshes Google tokens (1 hour) this far ahead
    needed_scopes = NEEDED_SCOPES
    tokeninfo_url = google.TOKENINFO_URL

    def __init__(self, *, api_url: str = API_URL, token_url: str = google.TOKEN_URL,
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT, processing_budget: float = PROCESSING_BUDGET,
                 poll_min: float = POLL_MIN) -> None:
        self.api_url, self.token_url, self.timeout = api_url.rstrip("/"), token_url, timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    async def check(self, account: Account) -> CheckResult:
        """Google's `tokeninfo` (granted scopes, expiry; providers/google.py) and `channels.list mine=true`
        (https://developers.google.com/youtube/v3/docs/channels/list): the connected channel still answers."""
        result = recorded(account.credentials)
        try:
            token = _token(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        await google.tokeninfo(result, token, NETWORK, self.tokeninfo_url)
        if result.token_valid is False:
            return result
        async def channel() -> Any:
            async with self._client(account) as client:
                return json_body(await call(client, "GET", "/youtube/v3/channels", network=NETWORK, classify=_classify,
                                            params={"part": "id,snippet", "mine": "true"}), NETWORK)
        body = await probe(result, channel())
        if isinstance(body, dict):
            result.token_valid = result.token_valid is not False
            ids = {str(c.get("id")) for c in body.get("items") or [] if isinstance(c, dict)}
            result.reachable = account.provider_account_id in ids
            result.account = str(account.provider_account_id or "")[:200] or None
            if not result.reachable:
                result.notes.append("The connected channel is not the channel of the authorising Google account.")
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"YouTube has no dynamic options ({kind})")

    @staticmethod
    def _title(post: PostRequest) -> str:
        title = str((post.settings or {}).get("title") or post.title or "").strip()
        if not title:
            raise ProviderError("rejected", "YouTube video without a title",
                                safe_reason="YouTube refused the post: a YouTube video needs a title.")
        return title[:100]

    @staticmethod
    def _description(post: PostRequest) -> str:
        return str((post.settings or {}).get("description") or post.text or "")

    def resource(self, post: PostRequest) -> dict[str, Any]:
        """The video resource of `videos.insert` (snippet and status parts)."""
        settings = post.settings or {}
        snippet: dict[str, Any] = {"title": self._title(post), "description": self._description(post),
                                   "categoryId": CATEGORY}
        tags = [str(t)[:100] for t in settings.get("tags") or [] if t]
        if tags:
            snippet["tags"] = tags
        return {"snippet": snippet, "status": {
            "privacyStatus": str(settings.get("privacy_level") or "PUBLIC").lower(),
            "selfDeclaredMadeForKids": bool(settings.get("made_for_kids"))}}

    @staticmethod
    def _check_short(post: PostRequest) -> None:
        media = post.media[0]
        width, height, duration = media.get("width"), media.get("height"), media.get("duration")
        if isinstance(width, int) and isinstance(height, int) and width > height:
            raise ProviderError("rejected", "YouTube Short wider than tall",
                                safe_reason="YouTube refused the post: a Short must be square or vertical.")
        if isinstance(duration, (int, float)) and duration > SHORT_MAX_SECONDS:
            raise ProviderError("rejected", "YouTube Short over 3 minutes",
                                safe_reason="YouTube refused the post: a Short is at most 3 minutes long.")

    def _session_uri(self, response: httpx.Response) -> str:
        location = response.headers.get("location") or ""
        api = httpx.URL(self.api_url)
        try:
            url = httpx.URL(location)
        except (httpx.InvalidURL, ValueError):
            url = None
        if url is None or url.host != api.host or url.scheme != api.scheme:
            raise ProviderError("malformed", "YouTube resumable session answered without a usable Location")
        return str(url)

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        settings = post.settings or {}
        if len(post.media) != 1 or not str(post.media[0].get("content_type") or "").startswith("video/"):
            raise ProviderError("rejected", "YouTube post without exactly one video",
                                safe_reason="YouTube refused the post: a YouTube post is one video.")
        short = (post.post_type or "YT_SHORT") == "YT_SHORT"
        if short:
            self._check_short(post)
        resource = self.resource(post)
        content_type = str(post.media[0]["content_type"])
        data = await download(str(post.media[0]["url"]), NETWORK)
        async with self._client(account) as client:
            started = await call(client, "POST", "/upload/youtube/v3/videos", network=NETWORK, classify=_classify,
                                 params={"uploadType": "resumable", "part": "snippet,status",
                                         "notifySubscribers": "true" if settings.get("notify_subscribers")
                                         else "false"},
                                 headers={"X-Upload-Content-Length": str(len(data)),
                                          "X-Upload-Content-Type": content_type}, json=resource)
            uploaded = json_body(await call(client, "PUT", self._session_uri(started), network=NETWORK,
                                            classify=_classify, content=data,
                                            headers={"Content-Type": content_type}), NETWORK)
            if not isinstance(uploaded, dict) or not uploaded.get("id"):
                raise ProviderError("malformed", "YouTube upload answered without a video ID")
            video_id = str(uploaded["id"])
            await self._processed(client, video_id)
        return PostResult(publish_id=video_id, permalink_url=self._link(video_id, short))

    @staticmethod
    def _link(video_id: str, short: bool) -> str:
        return f"https://www.youtube.com/shorts/{video_id}" if short else f"https://www.youtube.com/watch?v={video_id}"

    async def _processed(self, client: httpx.AsyncClient, video_id: str) -> None:
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            body = json_body(await call(client, "GET", "/youtube/v3/videos", network=NETWORK, classify=_classify,
                                        params={"part": "processingDetails,status", "id": video_id}), NETWORK)
            items = body.get("items") if isinstance(body, dict) else None
            if not isinstance(items, list):
                raise ProviderError("malformed", "YouTube videos.list answered an unexpected shape")
            video = items[0] if items and isinstance(items[0], dict) else {}
            status = found if isinstance(found := video.get("status"), dict) else {}
            details = found if isinstance(found := video.get("processingDetails"), dict) else {}
            processing, upload = details.get("processingStatus"), status.get("uploadStatus")
            if processing == "succeeded" or upload == "processed":
                return
            if processing in ("failed", "terminated") or upload in ("failed", "rejected", "deleted"):
                reason = _safe(status.get("failureReason") or status.get("rejectionReason")
                               or details.get("processingFailureReason") or upload or processing) or "unknown"
                raise ProviderError("rejected", f"YouTube video {video_id} {upload}/{processing}",
                                    safe_reason=f"YouTube could not process the video: {reason}.")
            if waited + wait > self.processing_budget:
                break
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"YouTube video {video_id} still processing",
                            safe_reason="YouTube is still processing the video; it is tried again later.")

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """videos.list with part=statistics (https://developers.google.com/youtube/v3/docs/videos/list): viewCount,
        likeCount, commentCount (int64 sent as strings). No item: the video is gone."""
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", "/youtube/v3/videos", network=NETWORK, classify=_classify,
                                        params={"part": "statistics", "id": publish_id}), NETWORK)
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "YouTube videos.list answered without items")
        if not items:
            return PostMetrics(gone=True)
        stats = items[0].get("statistics") if isinstance(items[0], dict) else None
        if not isinstance(stats, dict):
            raise ProviderError("malformed", "YouTube videos.list answered without statistics")
        return from_raw(stats, {"viewCount": "video_views", "likeCount": "likes", "commentCount": "replies"})

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        """The channel's upload since `since` with exactly this title and description, or None."""
        title, description = self._title(post), self._description(post)
        async with self._client(account) as client:
            channels = json_body(await call(client, "GET", "/youtube/v3/channels", network=NETWORK,
                                            classify=_classify, params={"part": "contentDetails", "mine": "true"}),
                                 NETWORK)
            try:
                uploads = channels["items"][0]["contentDetails"]["relatedPlaylists"]["uploads"]
            except (KeyError, IndexError, TypeError):
                raise ProviderError("malformed", "YouTube channels.list answered without the uploads playlist") \
                    from None
            body = json_body(await call(client, "GET", "/youtube/v3/playlistItems", network=NETWORK,
                                        classify=_classify, params={"part": "snippet", "playlistId": str(uploads),
                                                                    "maxResults": str(RECENT_MAX)}), NETWORK)
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "YouTube playlistItems.list answered an unexpected shape")
        short = (post.post_type or "YT_SHORT") == "YT_SHORT"
        for item in items:
            snippet = item.get("snippet") if isinstance(item, dict) else None
            if not isinstance(snippet, dict):
                continue
            video_id = (snippet.get("resourceId") or {}).get("videoId")
            try:
                recent = parse_timestamp(str(snippet.get("publishedAt"))) >= since
            except ValueError:
                recent = False
            if video_id and recent and snippet.get("title") == title and \
                    (snippet.get("description") or "") == description:
                return PostResult(publish_id=str(video_id), permalink_url=self._link(str(video_id), short))
        return None

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with self._client(account) as client:
            try:
                await call(client, "DELETE", "/youtube/v3/videos", network=NETWORK, classify=_classify,
                           params={"id": publish_id})
            except ProviderError as exc:
                if "404" not in exc.message:  # already gone is done
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        return await google.refresh(dict(account.credentials or {}), now, NETWORK, self.token_url)
