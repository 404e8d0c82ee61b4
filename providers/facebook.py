"""Facebook Pages through the Graph API with Facebook Login: a Page access token per Page, obtained from the
user's long-lived token (`GET /me/accounts`, which answers each Page's `access_token`).

- FB_TEXT: `POST /{page-id}/feed` with `message` (and `link`, the text's first URL, for the preview card).
- FB_POST: one photo `POST /{page-id}/photos` (`url`, `message`) → `{id, post_id}`; several photos are uploaded
  unpublished (`published=false`) and attached to one feed post (`attached_media[i]={"media_fbid": id}`); one
  video `POST /{page-id}/videos` on the video host (`file_url`, `description`, `title`) → `{id}`.
- FB_REEL: `POST /{page-id}/video_reels` `upload_phase=start` → `{video_id, upload_url}`; the upload host fetches
  our media URL (`POST {rupload}/{video-id}` with headers `Authorization: OAuth <page token>` and `file_url`);
  then `upload_phase=finish`, `video_state=PUBLISHED`, `description`.
- FB_STORY: a photo is uploaded unpublished and posted with `POST /{page-id}/photo_stories` (`photo_id`); a video
  goes through `POST /{page-id}/video_stories` start → upload → finish (`video_id`).
- Processing (videos, Reels, video Stories): `GET /{video-id}?fields=status` until `video_status` is `ready` (or
  its publishing phase is complete), with bounded backoff inside the worker's publish timeout; an `error`
  status is a rejection naming the phase ("Facebook could not process the video: processing failed."), still
  processing when the budget is spent is transient.
- Exactly-once: no idempotency key. `find_post_matching` reads what the Page made since the run began and
  recognises an exact text match: feed and photo posts in `GET /{page-id}/posts` (`message`), videos in
  `GET /{page-id}/videos` and Reels in `GET /{page-id}/video_reels` (`description`). Stories carry no text and
  are not recoverable this way (documented).
- Metrics (`post_metrics`): the Page post's counts as post fields (Page Post reference,
  https://developers.facebook.com/docs/graph-api/reference/post/: `reactions` and `comments` edges with
  `summary(total_count)`, the `shares` field, absent while nobody shared) and its views from Page Post Insights
  (https://developers.facebook.com/docs/graph-api/reference/page-post/insights/: `metric=post_media_view`,
  the successor of `post_impressions`, which Meta removed for every version on November 15, 2025 —
  https://developers.facebook.com/docs/pages-api/changelog/). A video or Reel is published as a video object:
  its Page post is read from the video's `post_id` field first (a Story has none: not read). Insights need
  `read_insights` with `pages_read_engagement`; should Meta retire `post_media_view` too (an invalid-metric code
  100), the reading keeps the post's counts without views. Errors as providers/meta_insights.py says.
- Errors: Graph `error.code` (providers.instagram.graph_classify): 190 → reauth_required, 4/17/32/613/80002
  rate limits → rate_limited, 10/200-299 permissions → rejected.
- Tokens: the code exchange is followed at once by the long-lived exchange (`fb_exchange_token`, 60 days), so
  the Page tokens read from it do not expire; the token tick exchanges the user token again a week ahead and
  reads the Page tokens anew. A refusal is reauth_required (the account is marked expired).

Bases: `SOCIALPUB_GRAPH_API_URL` (https://graph.facebook.com/{version}), `SOCIALPUB_GRAPH_VIDEO_URL`
(https://graph-video.facebook.com/{version}), `SOCIALPUB_FACEBOOK_RUPLOAD_URL`
(https://rupload.facebook.com/video-upload/{version}); {version} is the Graph API version of providers/versions.py.
Tokens travel in headers, never in a URL.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx

from providers import meta_insights, versions
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
from providers.http import DEFAULT_TIMEOUT, call, json_body, new_client
from providers.instagram import AUTHORIZE_URL, GRAPH_URL, granted_permissions, graph_classify
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due, token_request
from schemas.time import iso

NETWORK = "Facebook"
VIDEO_URL = os.environ.get("SOCIALPUB_GRAPH_VIDEO_URL",
                           f"https://graph-video.facebook.com/{versions.GRAPH.version}").rstrip("/")
RUPLOAD_URL = os.environ.get("SOCIALPUB_FACEBOOK_RUPLOAD_URL",
                             f"https://rupload.facebook.com/video-upload/{versions.GRAPH.version}").rstrip("/")
__all__ = ["AUTHORIZE_URL", "GRAPH_URL", "FacebookProvider", "exchange_code", "verify"]
# read_insights: post metrics (an account connected before it was asked for lacks it: its metrics stop once with
# `permission_missing` until it is reconnected).
SCOPES = ("pages_show_list", "pages_read_engagement", "pages_manage_posts", "business_management", "read_insights")
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60
POLL_MIN, POLL_MAX = 2.0, 30.0
RECENT_MAX = 50
PAGES_MAX = 50
REFRESH_AHEAD = timedelta(days=7)
_URL = re.compile(r"https?://\S+")
_classify = graph_classify(NETWORK)
# The post's counts in one read: each edge's summary only (limit 0: no reactions or comments themselves).
POST_FIELDS = "shares,reactions.summary(total_count).limit(0),comments.summary(total_count).limit(0)"
INSIGHT_METRICS = ("post_media_view",)
# Facebook's names (the edges' totals kept under the edge's name) -> the common ones.
METRICS_MAP = {"post_media_view": "impressions", "reactions": "likes", "comments": "replies", "shares": "reposts"}


def _id(body: Any, what: str, key: str = "id") -> str:
    if not isinstance(body, dict) or not body.get(key):
        raise ProviderError("malformed", f"Facebook {what} answered without {key}")
    return str(body[key])


async def _long_lived(graph: str, client_id: str, client_secret: str, token: str, refused_kind: str) -> dict[str, Any]:
    return await token_request("GET", f"{graph}/oauth/access_token", network=NETWORK, refused_kind=refused_kind,
                               params={"grant_type": "fb_exchange_token", "client_id": client_id,
                                       "client_secret": client_secret, "fb_exchange_token": token})


async def _pages(graph: str, token: str) -> list[dict[str, Any]]:
    """The Pages the user manages, with their Page tokens (`GET /me/accounts`)."""
    async with new_client(graph, headers={"Authorization": f"Bearer {token}"}) as client:
        body = json_body(await call(client, "GET", "/me/accounts", network=NETWORK, classify=_classify, params={
            "fields": "id,name,access_token,picture{url}", "limit": str(PAGES_MAX)}), NETWORK)
    pages = body.get("data") if isinstance(body, dict) else None
    if not isinstance(pages, list):
        raise ProviderError("malformed", "Facebook /me/accounts answered an unexpected shape")
    return [p for p in pages if isinstance(p, dict) and p.get("id") and isinstance(p.get("access_token"), str)
            and p["access_token"]][:PAGES_MAX]


async def exchange_code(endpoint: str, client_id: str, client_secret: str | None, redirect_uri: str, code: str,
                        code_verifier: str) -> dict[str, Any]:
    """The code exchange, then at once the long-lived user token (`fb_exchange_token`): Page tokens read with a
    long-lived user token do not expire."""
    short = await token_request("POST", endpoint, network=NETWORK, refused_kind="rejected", data={
        "client_id": client_id, "client_secret": client_secret or "", "code": code,
        "grant_type": "authorization_code", "redirect_uri": redirect_uri, "code_verifier": code_verifier})
    graph = endpoint.rsplit("/oauth/", 1)[0]
    return {**short, **await _long_lived(graph, client_id, client_secret or "", short["access_token"], "rejected")}


async def verify(server: str, token: str) -> Connection:
    """The Pages the user manages: the first is connected, every one is a candidate for `integrations
    select-account`, and their Page tokens are stored (sealed) with the account."""
    pages = await _pages(server.rstrip("/"), token)
    if not pages:
        raise ProviderError("rejected", "no Facebook Page on the user's accounts",
                            safe_reason="no Facebook Page you manage granted socialpub access")
    first = pages[0]
    name = str(first.get("name") or "")[:200]
    picture = ((first.get("picture") or {}).get("data") or {}).get("url") if isinstance(first.get("picture"), dict) \
        else None
    return Connection(provider_account_id=str(first["id"]), username=name or None, display_name=name or None,
                      credentials={"page_tokens": {str(p["id"]): p["access_token"] for p in pages}},
                      state={"username": name, "candidates": [
                          {"id": str(p["id"]), "username": str(p.get("name") or "")[:200]} for p in pages]},
                      avatar_url=picture if isinstance(picture, str) else None)


# The permissions each operation needs (Page tokens read through `GET /me/accounts`, which needs pages_show_list):
# feed, photo and video posts need pages_manage_posts and pages_read_engagement
# (https://developers.facebook.com/docs/pages-api/posts#requirements), Reels and Stories the same three
# (https://developers.facebook.com/docs/video-api/guides/reels-publishing#requirements,
# https://developers.facebook.com/docs/page-stories-api#requirements); reading the Page's posts, videos and
# Reels pages_read_engagement; deleting a post pages_manage_posts; the refresh reads the Page tokens again
# (pages_show_list).
_PUBLISH = ("pages_show_list", "pages_read_engagement", "pages_manage_posts")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:FB_POST": _PUBLISH,
    "publish:FB_STORY": _PUBLISH,
    "publish:FB_REEL": _PUBLISH,
    "publish:FB_TEXT": _PUBLISH,
    "find_post": ("pages_show_list", "pages_read_engagement"),
    "delete_post": ("pages_show_list", "pages_manage_posts"),
    "refresh_credentials": ("pages_show_list",),
    "check": ("pages_show_list", "pages_read_engagement"),
    # Page Post Insights: read_insights and pages_read_engagement (a Page token of someone with the ANALYZE task)
    "post_metrics": ("pages_show_list", "pages_read_engagement", "read_insights"),
}


class FacebookProvider:
    name = "facebook"
    needed_scopes = NEEDED_SCOPES
    metrics_fields = SUPPORT["facebook"].fields
    refresh_ahead = REFRESH_AHEAD  # the token tick looks this far ahead for these accounts

    def __init__(self, *, graph_url: str = GRAPH_URL, video_url: str = VIDEO_URL, rupload_url: str = RUPLOAD_URL,
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT, processing_budget: float = PROCESSING_BUDGET,
                 poll_min: float = POLL_MIN) -> None:
        self.graph_url, self.video_url, self.rupload_url = (u.rstrip("/") for u in (graph_url, video_url, rupload_url))
        self.timeout, self.processing_budget, self.poll_min = timeout, processing_budget, poll_min

    @staticmethod
    def _page(account: Account) -> tuple[str, str]:
        page = account.provider_account_id
        token = ((account.credentials or {}).get("page_tokens") or {}).get(page or "")
        if not page or not isinstance(token, str) or not token:
            raise ProviderError("reauth_required", "Facebook account has no token for its Page",
                                safe_reason="Facebook has no authorisation for this Page; connect the account again.")
        return page, token

    def _client(self, token: str, base: str | None = None) -> httpx.AsyncClient:
        return new_client(base or self.graph_url, headers={"Authorization": f"Bearer {token}"}, timeout=self.timeout)

    async def check(self, account: Account) -> CheckResult:
        """The permissions the user granted (`GET /me/permissions` with the user token) and the Page itself with
        its Page token (`GET /{page-id}?fields=id,name`, https://developers.facebook.com/docs/graph-api/reference/page/)."""
        result = recorded(account.credentials)
        user_token = (account.credentials or {}).get("access_token")
        if isinstance(user_token, str) and user_token:
            async with self._client(user_token) as client:
                await granted_permissions(client, result, NETWORK)
        else:
            result.notes.append("No user token is stored, so the granted permissions cannot be read.")
        try:
            page, token = self._page(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with self._client(token) as client:
            found = await probe(result, call(client, "GET", f"/{page}", network=NETWORK, classify=_classify,
                                             params={"fields": "id,name"}))
        if found is not None:
            body = json_body(found, NETWORK)
            result.token_valid = result.token_valid is not False
            result.reachable = isinstance(body, dict) and str(body.get("id")) == page
            result.account = str(body.get("name") or page)[:200] if isinstance(body, dict) else None
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Facebook has no dynamic options ({kind})")

    async def _post(self, client: httpx.AsyncClient, path: str, data: dict[str, Any], what: str,
                    key: str = "id") -> dict[str, Any]:
        body = json_body(await call(client, "POST", path, network=NETWORK, classify=_classify, data=data), NETWORK)
        _id(body, what, key)
        return body

    async def _processed(self, client: httpx.AsyncClient, video: str) -> None:
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            body = json_body(await call(client, "GET", f"/{video}", network=NETWORK, classify=_classify,
                                        params={"fields": "status"}), NETWORK)
            status = body.get("status") if isinstance(body, dict) else None
            if not isinstance(status, dict):
                raise ProviderError("malformed", "Facebook video status answered an unexpected shape")
            phases = {p: (status.get(f"{p}_phase") or {}) for p in ("uploading", "processing", "publishing")}
            failed = [p for p, v in phases.items() if isinstance(v, dict) and v.get("status") == "error"]
            if status.get("video_status") == "error" or failed:
                phase = failed[0] if failed else "processing"
                raise ProviderError("rejected", f"Facebook video {video} {phase} error",
                                    safe_reason=f"Facebook could not process the video: {phase} failed.")
            publishing = phases["publishing"] if isinstance(phases["publishing"], dict) else {}
            if status.get("video_status") == "ready" or publishing.get("status") == "complete":
                return
            if waited + wait > self.processing_budget:
                break
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"Facebook video {video} still processing",
                            safe_reason="Facebook is still processing the video; it is tried again later.")

    async def _upload_hosted(self, token: str, video: str, url: str) -> None:
        """The resumable upload host fetches the file from our media URL (`file_url` header)."""
        async with new_client(self.rupload_url, timeout=self.timeout,
                              headers={"Authorization": f"OAuth {token}", "file_url": url}) as client:
            body = json_body(await call(client, "POST", f"/{video}", network=NETWORK, classify=_classify), NETWORK)
        if not isinstance(body, dict) or body.get("success") is not True:
            raise ProviderError("malformed", "Facebook video upload answered without success")

    async def _video_flow(self, client: httpx.AsyncClient, token: str, page: str, edge: str, url: str,
                          finish: dict[str, Any]) -> dict[str, Any]:
        start = await self._post(client, f"/{page}/{edge}", {"upload_phase": "start"}, f"{edge} start", "video_id")
        video = str(start["video_id"])
        await self._upload_hosted(token, video, url)
        done = json_body(await call(client, "POST", f"/{page}/{edge}", network=NETWORK, classify=_classify,
                                    data={"upload_phase": "finish", "video_id": video, **finish}), NETWORK)
        if not isinstance(done, dict) or done.get("success") is not True:
            raise ProviderError("malformed", f"Facebook {edge} finish answered without success")
        await self._processed(client, video)
        return {**done, "video_id": video}

    async def _permalink(self, client: httpx.AsyncClient, object_id: str) -> str | None:
        try:
            found = json_body(await call(client, "GET", f"/{object_id}", network=NETWORK, classify=_classify,
                                         params={"fields": "permalink_url"}), NETWORK)
        except ProviderError:
            return None  # published; the link is a nicety
        link = found.get("permalink_url") if isinstance(found, dict) else None
        if isinstance(link, str) and link.startswith("/"):
            link = "https://www.facebook.com" + link
        return link if isinstance(link, str) and link.startswith("https://") else None

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        page, token = self._page(account)
        post_type = post.post_type or "FB_REEL"
        videos = [m for m in post.media if str(m.get("content_type") or "").startswith("video/")]
        if post_type in ("FB_REEL", "FB_STORY") and not post.media:
            raise ProviderError("rejected", f"Facebook {post_type} without media",
                                safe_reason="Facebook refused the post: a Reel or Story needs its media.")
        async with self._client(token) as client:
            if post_type == "FB_REEL":
                if not videos:
                    raise ProviderError("rejected", "Facebook Reel without a video",
                                        safe_reason="Facebook refused the post: a Reel needs one video.")
                done = await self._video_flow(client, token, page, "video_reels", videos[0]["url"],
                                              {"video_state": "PUBLISHED", "description": post.text})
                video = done["video_id"]
                return PostResult(publish_id=video, permalink_url=f"https://www.facebook.com/reel/{video}")
            if post_type == "FB_STORY":
                item = post.media[0]
                if videos:
                    done = await self._video_flow(client, token, page, "video_stories", item["url"], {})
                else:
                    photo = (await self._post(client, f"/{page}/photos", {"url": item["url"], "published": "false"},
                                              "photo upload"))["id"]
                    done = await self._post(client, f"/{page}/photo_stories", {"photo_id": str(photo)},
                                            "photo story", "post_id")
                story = str(done.get("post_id") or done.get("video_id"))
                return PostResult(publish_id=story, permalink_url=None)
            if videos:
                async with self._client(token, self.video_url) as upload:
                    data = {"file_url": videos[0]["url"], "description": post.text}
                    if post.title:
                        data["title"] = post.title[:255]
                    video = (await self._post(upload, f"/{page}/videos", data, "video upload"))["id"]
                await self._processed(client, str(video))
                return PostResult(publish_id=str(video), permalink_url=await self._permalink(client, str(video)))
            if len(post.media) == 1:
                body = await self._post(client, f"/{page}/photos", {"url": post.media[0]["url"],
                                                                      "message": post.text}, "photo")
                post_id = str(body.get("post_id") or body["id"])
            else:
                data: dict[str, Any] = {"message": post.text}
                for index, m in enumerate(post.media[:10]):
                    photo = (await self._post(client, f"/{page}/photos", {"url": m["url"], "published": "false"},
                                              "photo upload"))["id"]
                    data[f"attached_media[{index}]"] = json.dumps({"media_fbid": str(photo)})
                if not post.media:
                    link = _URL.search(post.text)
                    if link:
                        data["link"] = link.group(0)
                post_id = str((await self._post(client, f"/{page}/feed", data, "feed post"))["id"])
            return PostResult(publish_id=post_id, permalink_url=await self._permalink(client, post_id))

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        post_type = post.post_type or "FB_REEL"
        if post_type == "FB_STORY":
            return None
        page, token = self._page(account)
        is_video = any(str(m.get("content_type") or "").startswith("video/") for m in post.media)
        edge, text = ("video_reels", "description") if post_type == "FB_REEL" else \
            ("videos", "description") if is_video else ("posts", "message")
        async with self._client(token) as client:
            body = json_body(await call(client, "GET", f"/{page}/{edge}", network=NETWORK, classify=_classify,
                                        params={"fields": f"id,{text},created_time,permalink_url",
                                                "since": str(int(since.timestamp())), "limit": str(RECENT_MAX)}),
                             NETWORK)
        items = body.get("data") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", f"Facebook {edge} list answered an unexpected shape")
        for item in items:
            if isinstance(item, dict) and item.get("id") and (item.get(text) or "") == post.text:
                link = item.get("permalink_url")
                if isinstance(link, str) and link.startswith("/"):
                    link = "https://www.facebook.com" + link
                if post_type == "FB_REEL":
                    link = f"https://www.facebook.com/reel/{item['id']}"
                return PostResult(publish_id=str(item["id"]), permalink_url=link if isinstance(link, str) else None)
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """The Page post's counts (post fields) and views (insights); module docstring."""
        _, token = self._page(account)
        async with self._client(token) as client:
            post: str | None = publish_id
            if "_" not in publish_id:  # a video or Reel ID: its Page post
                try:
                    video = await meta_insights.read(client, f"/{publish_id}", {"fields": "post_id"}, NETWORK)
                except ProviderError as exc:
                    if exc.kind != "malformed":
                        raise
                    video = None  # not a video (a Story has no post_id): no Page post to read, readings stop
                if video is None:
                    return PostMetrics(gone=True)
                post = str(video.get("post_id") or "") if isinstance(video, dict) else ""
                if not post:
                    return PostMetrics()  # no feed post (yet): nothing to read this time
            counts = await meta_insights.read(client, f"/{post}", {"fields": POST_FIELDS}, NETWORK)
            if not isinstance(counts, dict):
                return PostMetrics(gone=True)
            try:
                insights = await meta_insights.read(client, f"/{post}/insights",
                                                    {"metric": ",".join(INSIGHT_METRICS), "period": "lifetime"},
                                                    NETWORK)
            except ProviderError as exc:
                if exc.kind != "malformed":
                    raise
                insights = {"data": []}  # the metric was retired: the counts still tell
        raw: dict[str, Any] = meta_insights.insight_values(insights or {"data": []}, NETWORK)
        for edge in ("reactions", "comments"):
            summary = (counts.get(edge) or {}).get("summary") if isinstance(counts.get(edge), dict) else None
            if isinstance(summary, dict):
                raw[edge] = summary.get("total_count")
        if isinstance(counts.get("shares"), dict):
            raw["shares"] = counts["shares"].get("count")
        return from_raw(raw, METRICS_MAP)

    async def delete_post(self, account: Account, publish_id: str) -> None:
        _, token = self._page(account)
        async with self._client(token) as client:
            try:
                await call(client, "DELETE", f"/{publish_id}", network=NETWORK, classify=_classify)
            except ProviderError as exc:
                if "404" not in exc.message:
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD, needs_refresh_token=False):
            return None
        user_token = creds.get("access_token")
        if not isinstance(user_token, str) or not user_token:
            raise ProviderError("reauth_required", "Facebook account has no user token")
        token = await _long_lived(self.graph_url, str(creds.get("client_id") or ""),
                                  str(creds.get("client_secret") or ""), user_token,
                                  "reauth_required")
        pages = await _pages(self.graph_url, token["access_token"])
        fresh = {**creds, "access_token": token["access_token"]}
        fresh["page_tokens"] = {**(creds.get("page_tokens") or {}),
                                **{str(p["id"]): p["access_token"] for p in pages}}
        fresh["expires_at"] = iso(now + timedelta(seconds=int(token.get("expires_in") or 60 * 86400)))
        return fresh
