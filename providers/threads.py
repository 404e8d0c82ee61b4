"""Threads through the Threads API (graph.threads.net), with a long-lived Threads user token.

- Containers: `POST /v1.0/{threads-user-id}/threads` (form) — `media_type=TEXT` + `text`; `IMAGE` + `image_url`;
  `VIDEO` + `video_url`; a carousel creates one child per item (`is_carousel_item=true`, 2-20 items) and then
  `media_type=CAROUSEL` with `children` (comma-separated). `reply_control` and `topic_tag` go on the post's
  container; `reply_to_id` makes a container a reply.
- Processing: `GET /v1.0/{container-id}?fields=status,error_message` until `FINISHED` (bounded backoff inside the
  worker's publish timeout); `ERROR` is a rejection naming Threads' own error code ("Threads could not process
  the media: FAILED_PROCESSING_VIDEO."), `EXPIRED` too; still `IN_PROGRESS` when the budget is spent is
  transient (the worker retries).
- Publish: `POST /v1.0/{threads-user-id}/threads_publish` with `creation_id` → `{id}`; permalink from
  `GET /v1.0/{media-id}?fields=permalink`.
- `thread_parts` are published after the post, each a reply (`reply_to_id`) to the part before it (the first to
  the post); `follow_up_reply` is published once the post is live, as a reply to the post. The post is live
  once `threads_publish` answered, so a part or follow-up that fails afterwards does not fail the post (it is
  logged): failing it would make a retry post the main post again.
- Metrics (`post_metrics`, Threads Insights API, https://developers.facebook.com/docs/threads/insights):
  `GET /v1.0/{threads-media-id}/insights?metric=views,likes,replies,reposts,quotes,shares` (lifetime values);
  needs `threads_manage_insights`. Errors as providers/meta_insights.py says.
- Exactly-once: Threads has no idempotency key. `find_post_matching` reads the account's posts since the run
  began (`GET /v1.0/{threads-user-id}/threads?fields=id,text,timestamp,permalink,media_type&since=…`) and
  recognises an exact text match as the earlier post.
- Errors: Graph-style `{"error": {"code", ...}}` (providers.instagram.graph_classify): 190 → reauth_required,
  4/17/32/613 → rate_limited, others refused with our own sentence.
- Tokens: the code exchange (`POST /oauth/access_token`) gives a short-lived token (an hour) that the connect at
  once exchanges for a long-lived one (`GET /access_token?grant_type=th_exchange_token`, 60 days); the token
  tick refreshes it ahead of expiry (`GET /refresh_access_token?grant_type=th_refresh_token`), which Threads
  allows for tokens at least a day old and not yet expired. A refused refresh is reauth_required.

The API root is `SOCIALPUB_THREADS_API_URL` (default https://graph.threads.net), the authorize page
`SOCIALPUB_THREADS_AUTHORIZE_URL`; the token is sent as an `Authorization: Bearer` header on API calls.
"""

from __future__ import annotations

import logging
import os
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx

from providers import meta_insights
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
from providers.instagram import graph_classify
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due, token_request
from schemas.time import iso

log = logging.getLogger("socialpub.providers.threads")

NETWORK = "Threads"
API_URL = os.environ.get("SOCIALPUB_THREADS_API_URL", "https://graph.threads.net").rstrip("/")
AUTHORIZE_URL = os.environ.get("SOCIALPUB_THREADS_AUTHORIZE_URL", "https://threads.net/oauth/authorize")
VERSION = "/v1.0"
# threads_manage_replies: the thread parts and the follow-up reply are replies of the account's own post.
# threads_delete: DELETE /{threads-media-id} (https://developers.facebook.com/docs/threads/posts/delete-posts).
# threads_manage_insights: post metrics (an account connected before it was asked for lacks it: its metrics stop
# once with `permission_missing` until it is reconnected).
SCOPES = ("threads_basic", "threads_content_publish", "threads_manage_replies", "threads_delete",
          "threads_manage_insights")
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60
POLL_MIN, POLL_MAX = 2.0, 30.0
RECENT_MAX = 50
CAROUSEL_MAX = 20
REFRESH_AHEAD = timedelta(days=7)  # long-lived tokens last 60 days; refreshed a week ahead
_classify = graph_classify(NETWORK)
INSIGHT_METRICS = ("views", "likes", "replies", "reposts", "quotes", "shares")
# Threads' names -> the common ones; quotes and shares (sends of the post) stay Threads' own names.
METRICS_MAP = {"views": "impressions", "likes": "likes", "replies": "replies", "reposts": "reposts"}


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Threads account has no access token")
    return token


def _id(body: Any, what: str) -> str:
    if not isinstance(body, dict) or not body.get("id"):
        raise ProviderError("malformed", f"Threads {what} answered without an ID")
    return str(body["id"])


async def exchange_code(endpoint: str, client_id: str, client_secret: str | None, redirect_uri: str, code: str,
                        code_verifier: str) -> dict[str, Any]:
    """The code exchange (`POST /oauth/access_token`), then at once the long-lived token (`th_exchange_token`):
    the short-lived one lasts an hour and carries no expiry the token tick could act on."""
    short = await token_request("POST", endpoint, network=NETWORK, refused_kind="rejected", data={
        "client_id": client_id, "client_secret": client_secret or "", "code": code,
        "grant_type": "authorization_code", "redirect_uri": redirect_uri, "code_verifier": code_verifier})
    root = endpoint.rsplit("/oauth/", 1)[0]
    token = await token_request("GET", f"{root}/access_token", network=NETWORK, refused_kind="rejected", params={
        "grant_type": "th_exchange_token", "client_secret": client_secret or "", "access_token": short["access_token"]})
    return {**short, **token}


async def verify(server: str, token: str) -> Connection:
    """The Threads profile a user token belongs to (`GET /v1.0/me`)."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        me = json_body(await call(client, "GET", f"{VERSION}/me", network=NETWORK, classify=_classify,
                                  params={"fields": "id,username,name,threads_profile_picture_url"}), NETWORK)
    user = _id(me, "profile")
    username = str(me.get("username") or "")[:200]
    avatar = me.get("threads_profile_picture_url")
    return Connection(provider_account_id=user, username=username or None,
                      display_name=(str(me.get("name") or "") or username)[:200] or None, credentials={},
                      state={"username": username}, avatar_url=avatar if isinstance(avatar, str) else None)


# The permissions each operation needs (https://developers.facebook.com/docs/threads/get-started#authorization):
# threads_basic for every endpoint; threads_content_publish for the publishing endpoints
# (https://developers.facebook.com/docs/threads/posts); threads_manage_replies for replies (`reply_to_id`: thread
# parts and the follow-up reply, https://developers.facebook.com/docs/threads/reply-management); threads_delete
# for `DELETE /{threads-media-id}` (https://developers.facebook.com/docs/threads/posts/delete-posts).
_PUBLISH = ("threads_basic", "threads_content_publish", "threads_manage_replies")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:TH_TEXT": _PUBLISH,
    "publish:TH_IMAGE": _PUBLISH,
    "publish:TH_VIDEO": _PUBLISH,
    "publish:TH_CAROUSEL": _PUBLISH,
    "find_post": ("threads_basic",),
    "delete_post": ("threads_basic", "threads_delete"),
    "refresh_credentials": ("threads_basic",),
    "check": ("threads_basic",),
    "post_metrics": ("threads_basic", "threads_manage_insights"),  # the Insights API's permissions
}


class ThreadsProvider:
    name = "threads"
    needed_scopes = NEEDED_SCOPES
    metrics_fields = SUPPORT["threads"].fields
    refresh_ahead = REFRESH_AHEAD  # the token tick looks this far ahead for these accounts

    def __init__(self, *, api_url: str = API_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 processing_budget: float = PROCESSING_BUDGET, poll_min: float = POLL_MIN) -> None:
        self.api_url, self.timeout = api_url.rstrip("/"), timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    async def check(self, account: Account) -> CheckResult:
        """The profile (`GET /v1.0/me?fields=id,username`) and the token's data (`GET /v1.0/debug_token`:
        `is_valid`, `expires_at`, `scopes`, https://developers.facebook.com/docs/threads/troubleshooting/debug-access-token).
        Meta answers debug_token only when the inspecting token is a Threads tester's of the same app, so for other
        users the scopes stay those the token response named, or unknown."""
        result = recorded(account.credentials)
        try:
            user, token = self._user(account), _token(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with self._client(account) as client:
            me = await probe(result, call(client, "GET", f"{VERSION}/me", network=NETWORK, classify=_classify,
                                          params={"fields": "id,username"}))
            if me is None:
                return result
            body = json_body(me, NETWORK)
            result.token_valid = True
            result.reachable = isinstance(body, dict) and str(body.get("id")) == user
            result.account = f"@{str(body.get('username') or user)[:200]}" if isinstance(body, dict) else None
            try:
                debug = json_body(await call(client, "GET", f"{VERSION}/debug_token", network=NETWORK,
                                             classify=_classify, params={"input_token": token}), NETWORK)
            except ProviderError:
                debug = None  # not a tester's token: the documented limit, not a problem of the account
        data = debug.get("data") if isinstance(debug, dict) else None
        if isinstance(data, dict) and isinstance(data.get("scopes"), list):
            result.granted_scopes = tuple(str(s) for s in data["scopes"][:100])
            result.scopes_source = "introspected"
            if isinstance(data.get("expires_at"), int) and data["expires_at"] > 0:
                result.expires_at = iso(datetime.fromtimestamp(data["expires_at"], UTC))
            if data.get("is_valid") is False:
                result.token_valid = False
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Threads has no dynamic options ({kind})")

    @staticmethod
    def _user(account: Account) -> str:
        if not account.provider_account_id:
            raise ProviderError("reauth_required", "Threads account has no user ID")
        return account.provider_account_id

    async def _container(self, client: httpx.AsyncClient, user: str, params: dict[str, Any]) -> str:
        return _id(json_body(await call(client, "POST", f"{VERSION}/{user}/threads", network=NETWORK,
                                        classify=_classify, data=params), NETWORK), "container")

    async def _finished(self, client: httpx.AsyncClient, container: str) -> None:
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            body = json_body(await call(client, "GET", f"{VERSION}/{container}", network=NETWORK, classify=_classify,
                                        params={"fields": "status,error_message"}), NETWORK)
            status = body.get("status") if isinstance(body, dict) else None
            if status in ("FINISHED", "PUBLISHED"):
                return
            if status in ("ERROR", "EXPIRED"):
                found = re.match(r"[A-Z0-9_]{1,60}", str(body.get("error_message") or "").upper())
                detail = found.group(0) if found else ""
                raise ProviderError("rejected", f"Threads container {container} {status}",
                                    safe_reason="Threads could not process the media" +
                                    (f": {detail}." if detail else "."))
            if status not in ("IN_PROGRESS", None):
                raise ProviderError("malformed", f"Threads container status {str(status)[:40]}")
            if waited + wait > self.processing_budget:
                break
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"Threads container {container} still processing",
                            safe_reason="Threads is still processing the media; it is tried again later.")

    @staticmethod
    def _item(media: dict[str, Any]) -> dict[str, Any]:
        if str(media.get("content_type") or "").startswith("video/"):
            return {"media_type": "VIDEO", "video_url": media["url"]}
        return {"media_type": "IMAGE", "image_url": media["url"]}

    async def _publish(self, client: httpx.AsyncClient, user: str, container: str) -> str:
        return _id(json_body(await call(client, "POST", f"{VERSION}/{user}/threads_publish", network=NETWORK,
                                        classify=_classify, data={"creation_id": container}), NETWORK),
                   "threads_publish")

    async def _reply(self, client: httpx.AsyncClient, user: str, text: str, reply_to: str) -> str:
        container = await self._container(client, user, {"media_type": "TEXT", "text": text,
                                                         "reply_to_id": reply_to})
        await self._finished(client, container)
        return await self._publish(client, user, container)

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        user, settings = self._user(account), post.settings or {}
        extra: dict[str, Any] = {}
        if settings.get("reply_control") and settings["reply_control"] != "everyone":
            extra["reply_control"] = str(settings["reply_control"])
        if settings.get("topic_tag"):
            extra["topic_tag"] = str(settings["topic_tag"])[:50]
        async with self._client(account) as client:
            if len(post.media) > 1:
                children = [await self._container(client, user, {**self._item(m), "is_carousel_item": "true"})
                            for m in post.media[:CAROUSEL_MAX]]
                for child in children:
                    await self._finished(client, child)
                params = {"media_type": "CAROUSEL", "children": ",".join(children), "text": post.text, **extra}
            elif post.media:
                params = {**self._item(post.media[0]), "text": post.text, **extra}
            else:
                params = {"media_type": "TEXT", "text": post.text, **extra}
            container = await self._container(client, user, params)
            await self._finished(client, container)
            media_id = await self._publish(client, user, container)
            # Live from here: what follows never fails the post (a retry would post it again).
            permalink = await self._permalink(client, media_id)
            try:
                parent = media_id
                for part in post.thread_parts:
                    parent = await self._reply(client, user, str(part.get("text") or ""), parent)
                follow_up = settings.get("follow_up_reply")
                if isinstance(follow_up, dict) and follow_up.get("text"):
                    await self._reply(client, user, str(follow_up["text"]), media_id)
            except ProviderError as exc:
                log.warning("Threads post %s is live but a reply of it failed (%s)", media_id, exc.message)
        return PostResult(publish_id=media_id, permalink_url=permalink)

    async def _permalink(self, client: httpx.AsyncClient, media_id: str) -> str | None:
        try:
            found = json_body(await call(client, "GET", f"{VERSION}/{media_id}", network=NETWORK, classify=_classify,
                                         params={"fields": "permalink"}), NETWORK)
        except ProviderError:
            return None  # published; the link is a nicety
        link = found.get("permalink") if isinstance(found, dict) else None
        return link if isinstance(link, str) else None

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", f"{VERSION}/{self._user(account)}/threads", network=NETWORK,
                                        classify=_classify, params={
                                            "fields": "id,text,timestamp,permalink,media_type",
                                            "since": str(int(since.timestamp())), "limit": str(RECENT_MAX)}), NETWORK)
        items = body.get("data") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "Threads posts list answered an unexpected shape")
        for item in items:
            if isinstance(item, dict) and item.get("id") and (item.get("text") or "") == post.text:
                link = item.get("permalink")
                return PostResult(publish_id=str(item["id"]), permalink_url=link if isinstance(link, str) else None)
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """The post's lifetime insights (module docstring)."""
        async with self._client(account) as client:
            body = await meta_insights.read(client, f"{VERSION}/{publish_id}/insights",
                                            {"metric": ",".join(INSIGHT_METRICS)}, NETWORK)
        if body is None:
            return PostMetrics(gone=True)
        return from_raw(meta_insights.insight_values(body, NETWORK), METRICS_MAP)

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with self._client(account) as client:
            try:
                await call(client, "DELETE", f"{VERSION}/{publish_id}", network=NETWORK, classify=_classify)
            except ProviderError as exc:
                if "404" not in exc.message:  # already gone is done
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD, needs_refresh_token=False):
            return None  # long-lived tokens are refreshed with the token itself
        token = await token_request("GET", f"{self.api_url}/refresh_access_token", network=NETWORK,
                                    refused_kind="reauth_required",
                                    params={"grant_type": "th_refresh_token", "access_token": _token(account)})
        fresh = {**creds, "access_token": token["access_token"]}
        fresh["expires_at"] = iso(now + timedelta(seconds=int(token.get("expires_in") or 60 * 86400)))
        return fresh
