"""X (formerly Twitter): posts through the X API v2 with an OAuth 2.0 user token (authorization code + PKCE,
`offline.access` for a refresh token).

- Post: `POST /2/tweets` with `text`, `media.media_ids` and, for thread parts, `reply.in_reply_to_tweet_id` (each
  part replies to the one before). Answer 201 `{"data": {"id", "text"}}`. Permalink `https://x.com/{username}/status/{id}`.
- Media: the v2 chunked upload: `POST /2/media/upload/initialize` (JSON `media_type`, `total_bytes`,
  `media_category`) → `data.id`; `POST /2/media/upload/{id}/append` (multipart `media`, `segment_index`, chunks
  of CHUNK_BYTES); `POST /2/media/upload/{id}/finalize`; when the answer carries `processing_info`, poll
  `GET /2/media/upload?command=STATUS&media_id=…` after `check_after_secs` (bounded by PROCESSING_BUDGET, inside
  the worker's publish timeout) until `succeeded`; `failed` is a rejection naming X's error, a budget spent is
  transient (the worker retries). Alt text: `POST /2/media/metadata`.
- Exactly-once: X has no idempotency key. After an attempt whose outcome was never learnt, `find_post_matching`
  reads the account's posts since the run started (`GET /2/users/{id}/tweets`, `start_time`) and recognises an
  exact match of the text (and the number of media) as the earlier post; only when none matches is it posted
  again. X rewrites links to t.co, so a text with URLs is matched on its text outside the links.
- Refresh: `POST /2/oauth2/token` (`grant_type=refresh_token`, client authenticated with HTTP Basic); X rotates
  the refresh token on every refresh. A refused refresh is `reauth_required` (the account is marked expired).
- Errors: 401 reauth; 403 is a refusal (duplicate content, missing permission) with our own sentence; 429 waits
  for `x-rate-limit-reset`; 5xx transient.

The API base is `SOCIALPUB_X_API_URL` (default https://api.x.com), the authorize page `SOCIALPUB_X_AUTHORIZE_URL`.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx

from providers.base import Account, CheckResult, Connection, Options, PostRequest, PostResult, ProviderError, recorded
from providers.http import DEFAULT_TIMEOUT, call, download, json_body, new_client, retry_after
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due
from schemas.time import iso

NETWORK = "X"
API_URL = os.environ.get("SOCIALPUB_X_API_URL", "https://api.x.com").rstrip("/")
AUTHORIZE_URL = os.environ.get("SOCIALPUB_X_AUTHORIZE_URL", "https://x.com/i/oauth2/authorize")
SCOPES = ("tweet.read", "tweet.write", "users.read", "media.write", "offline.access")
CHUNK_BYTES = 4 * 1024 * 1024  # APPEND segments (X accepts up to 5 MB each)
PROCESSING_BUDGET = 240.0  # seconds of media processing waited for per attempt (the worker's timeout is longer)
POLL_MIN, POLL_MAX = 1.0, 30.0
RECENT_MAX = 100  # posts read by find_post_matching
REFRESH_AHEAD = timedelta(minutes=15)
_URL = re.compile(r"https?://\S+")


def _classify(response: httpx.Response) -> ProviderError | None:
    status, path = response.status_code, response.request.url.path
    where = f"X answered {status} to {response.request.method} {path}"
    if status == 429:
        reset = response.headers.get("x-rate-limit-reset")
        wait = retry_after(httpx.Response(429, headers={"x-ratelimit-reset": reset})) if reset else None
        return ProviderError("rate_limited", where, retry_after=wait)
    if status in (400, 403):
        try:
            body = response.json()
            detail = str(body.get("detail") or (body.get("errors") or [{}])[0].get("message") or "").lower()
        except (ValueError, AttributeError, IndexError, TypeError):
            detail = ""
        if "duplicate" in detail:
            reason = "the same text was already posted on this account"
        elif status == 403:
            reason = "the account or app lacks permission for it"
        elif "media" in detail:
            reason = "a media attachment was not accepted"
        elif "text" in detail or "too long" in detail:
            reason = "the text was not accepted"
        else:
            reason = "the request was not accepted"
        return ProviderError("rejected", where, safe_reason=f"X refused the post: {reason}.")
    return None


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "X account has no access token")
    return token


def _category(content_type: str) -> str:
    if content_type == "image/gif":
        return "tweet_gif"
    return "tweet_video" if content_type.startswith("video/") else "tweet_image"


def _data(response: httpx.Response, what: str) -> dict[str, Any]:
    body = json_body(response, NETWORK)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or not data.get("id"):
        raise ProviderError("malformed", f"X {what} answered without data.id")
    return data


async def verify(server: str, token: str) -> Connection:
    """The account a user token belongs to (`GET /2/users/me`)."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        me = _data(await call(client, "GET", "/2/users/me", network=NETWORK, classify=_classify,
                              params={"user.fields": "profile_image_url"}), "users/me")
    username = str(me.get("username") or "")[:200]
    avatar = me.get("profile_image_url")
    return Connection(provider_account_id=str(me["id"]), username=username or None,
                      display_name=(str(me.get("name") or "") or username)[:200] or None, credentials={},
                      state={"username": username}, avatar_url=avatar if isinstance(avatar, str) else None)


def _core(text: str) -> str:
    return " ".join(_URL.sub("", text).split())


# The scopes each operation needs: the OAuth2UserToken security of each operation in X's OpenAPI description
# (https://api.x.com/2/openapi.json, as published by xdevplatform/xdk): POST /2/tweets and DELETE /2/tweets/{id}
# need tweet.read, tweet.write and users.read; the media upload (/2/media/upload/...) and POST /2/media/metadata
# need media.write; GET /2/users/{id}/tweets and GET /2/users/me need tweet.read and users.read. A refresh token
# is issued only with offline.access (https://docs.x.com/fundamentals/authentication/oauth-2-0/authorization-code).
_POST_SCOPES = ("tweet.read", "tweet.write", "users.read", "media.write")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:X_POST": _POST_SCOPES,
    "find_post": ("tweet.read", "users.read"),
    "delete_post": ("tweet.read", "tweet.write", "users.read"),
    "refresh_credentials": ("offline.access",),
    "check": ("tweet.read", "users.read"),
    "post_metrics": ("tweet.read", "users.read"),
}


class XProvider:
    name = "x"
    metrics_fields = SUPPORT["x"].fields
    refresh_ahead = REFRESH_AHEAD  # the token tick refreshes X tokens (2 hours) this far ahead
    needed_scopes = NEEDED_SCOPES

    def __init__(self, *, api_url: str = API_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 processing_budget: float = PROCESSING_BUDGET, poll_min: float = POLL_MIN) -> None:
        self.api_url, self.timeout = api_url.rstrip("/"), timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    async def check(self, account: Account) -> CheckResult:
        """`GET /2/users/me` (https://docs.x.com/x-api/users/get-my-user): the token works and whose it is. X has
        no introspection for OAuth 2.0 user tokens, so the granted scopes are those the token response named."""
        result = recorded(account.credentials)
        try:
            async with self._client(account) as client:
                me = _data(await call(client, "GET", "/2/users/me", network=NETWORK, classify=_classify), "users/me")
        except ProviderError as exc:
            result.failed(exc)
            return result
        result.token_valid = result.reachable = True
        result.account = f"@{str(me.get('username') or me['id'])[:200]}"
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"X has no dynamic options ({kind})")

    def _permalink(self, account: Account, post_id: str) -> str:
        username = (account.state or {}).get("username") or "i/web"
        return f"https://x.com/{username}/status/{post_id}"

    async def _upload(self, client: httpx.AsyncClient, media: dict[str, Any]) -> str:
        content_type = str(media.get("content_type") or "application/octet-stream")
        data = await download(str(media["url"]), NETWORK)
        init = _data(await call(client, "POST", "/2/media/upload/initialize", network=NETWORK, classify=_classify,
                                json={"media_type": content_type, "total_bytes": len(data),
                                      "media_category": _category(content_type)}), "media initialize")
        media_id = str(init["id"])
        for index, start in enumerate(range(0, len(data), CHUNK_BYTES)):
            await call(client, "POST", f"/2/media/upload/{media_id}/append", network=NETWORK, classify=_classify,
                       data={"segment_index": str(index)},
                       files={"media": ("chunk", data[start:start + CHUNK_BYTES], "application/octet-stream")})
        final = _data(await call(client, "POST", f"/2/media/upload/{media_id}/finalize", network=NETWORK,
                                 classify=_classify), "media finalize")
        await self._processed(client, media_id, final.get("processing_info"))
        alt = media.get("alt_text")
        if isinstance(alt, str) and alt:
            await call(client, "POST", "/2/media/metadata", network=NETWORK, classify=_classify,
                       json={"id": media_id, "metadata": {"alt_text": {"text": alt[:1000]}}})
        return media_id

    async def _processed(self, client: httpx.AsyncClient, media_id: str, info: Any) -> None:
        """Wait for X's media processing (bounded): `succeeded` returns, `failed` is a rejection naming X's error."""
        waited = 0.0
        while isinstance(info, dict):
            state = info.get("state")
            if state == "succeeded":
                return
            if state == "failed":
                error = found if isinstance(found := info.get("error"), dict) else {}
                name = str(error.get("name") or error.get("message") or "unknown error")
                name = re.sub(r"[^A-Za-z0-9 _.-]", "", name)[:80] or "unknown error"
                raise ProviderError("rejected", f"X media {media_id} processing failed",
                                    safe_reason=f"X could not process the media: {name}.")
            try:
                wait = float(info.get("check_after_secs") or self.poll_min)
            except (TypeError, ValueError):
                wait = self.poll_min
            wait = min(max(wait, self.poll_min), POLL_MAX)
            if waited + wait > self.processing_budget:
                raise ProviderError("transient", f"X media {media_id} still processing after {waited:.0f}s",
                                    safe_reason="X is still processing the media; it is tried again later.")
            await anyio.sleep(wait)
            waited += wait
            status = _data(await call(client, "GET", "/2/media/upload", network=NETWORK, classify=_classify,
                                      params={"command": "STATUS", "media_id": media_id}), "media status")
            info = status.get("processing_info")

    async def _tweet(self, client: httpx.AsyncClient, text: str, media_ids: list[str],
                     reply_to: str | None) -> str:
        body: dict[str, Any] = {"text": text}
        if media_ids:
            body["media"] = {"media_ids": media_ids}
        if reply_to:
            body["reply"] = {"in_reply_to_tweet_id": reply_to}
        return str(_data(await call(client, "POST", "/2/tweets", network=NETWORK, classify=_classify, json=body),
                         "create post")["id"])

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        async with self._client(account) as client:
            media_ids = [await self._upload(client, m) for m in post.media]
            first = await self._tweet(client, post.text, media_ids, None)
            parent = first
            for part in post.thread_parts:
                part_media = [await self._upload(client, m) for m in part.get("media") or []]
                parent = await self._tweet(client, str(part.get("text") or ""), part_media, parent)
        return PostResult(publish_id=first, permalink_url=self._permalink(account, first))

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # X keeps no idempotency key; the worker asks find_post_matching with the post instead

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        """The account's post since `since` whose text (and media count) is exactly the post's, or None."""
        if not account.provider_account_id:
            return None
        async with self._client(account) as client:
            body = json_body(await call(
                client, "GET", f"/2/users/{account.provider_account_id}/tweets", network=NETWORK, classify=_classify,
                params={"start_time": since.strftime("%Y-%m-%dT%H:%M:%SZ"), "max_results": str(RECENT_MAX),
                        "post.fields": "created_at,attachments", "exclude": "replies,retweets"}), NETWORK)
        posts = body.get("data") if isinstance(body, dict) else None
        if (body is not None and not isinstance(body, dict)) or (posts is not None and not isinstance(posts, list)):
            raise ProviderError("malformed", "X user posts answered an unexpected shape")
        want = _core(post.text)
        for found in posts or []:
            if not isinstance(found, dict) or not found.get("id"):
                continue
            attached = len(((found.get("attachments") or {}).get("media_keys")) or [])
            if _core(str(found.get("text") or "")) == want and attached == len(post.media):
                return PostResult(publish_id=str(found["id"]), permalink_url=self._permalink(account, str(found["id"])))
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """`GET /2/tweets/{id}` with `post.fields=public_metrics` (X's OpenAPI description; the counts are
        PostPublicMetrics). A post X no longer has answers 200 with `errors` and no `data`."""
        try:
            async with self._client(account) as client:
                body = json_body(await call(client, "GET", f"/2/tweets/{publish_id}", network=NETWORK,
                                            classify=_classify, params={"post.fields": "public_metrics"}), NETWORK)
        except ProviderError as exc:
            if "answered 404" in exc.message:
                return PostMetrics(gone=True)
            raise
        data = body.get("data") if isinstance(body, dict) else None
        if data is None and isinstance(body, dict) and body.get("errors"):
            return PostMetrics(gone=True)
        counts = data.get("public_metrics") if isinstance(data, dict) else None
        if not isinstance(counts, dict):
            raise ProviderError("malformed", "X post answered without public_metrics")
        return from_raw(counts, {"impression_count": "impressions", "like_count": "likes",
                                 "repost_count": "reposts", "reply_count": "replies", "bookmark_count": "saves"})

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with self._client(account) as client:
            try:
                await call(client, "DELETE", f"/2/tweets/{publish_id}", network=NETWORK, classify=_classify)
            except ProviderError as exc:
                if "404" not in exc.message:  # already gone is done
                    raise

    async def _refresh(self, client_id: str, client_secret: str, refresh: str) -> dict[str, Any]:
        """The refresh grant (RFC 6749 §6) on our HTTP client: a confidential client authenticates with HTTP
        Basic, a public one sends `client_id`. A 400/401 (`invalid_request`, `invalid_grant`) is for good."""
        def refused(response: httpx.Response) -> ProviderError | None:
            if response.status_code in (400, 401):
                return ProviderError("reauth_required", f"X token endpoint answered {response.status_code}",
                                     safe_reason="X refused the authorisation; connect the account again.")
            return None

        form = {"grant_type": "refresh_token", "refresh_token": refresh}
        auth = httpx.BasicAuth(client_id, client_secret) if client_secret else None
        if auth is None:
            form["client_id"] = client_id
        async with new_client(self.api_url, timeout=self.timeout) as client:
            token = json_body(await call(client, "POST", "/2/oauth2/token", network=NETWORK, classify=refused,
                                         data=form, auth=auth), NETWORK)
        if not isinstance(token, dict) or not isinstance(token.get("access_token"), str) or not token["access_token"]:
            raise ProviderError("malformed", "X token endpoint answered without an access token")
        return token

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD):
            return None
        refresh = creds["refresh_token"]
        token = await self._refresh(str(creds.get("client_id") or ""), str(creds.get("client_secret") or ""),
                                    str(refresh))
        fresh = {**creds, "access_token": token["access_token"]}
        if token.get("refresh_token"):
            fresh["refresh_token"] = token["refresh_token"]  # X rotates it; never drop the stored one otherwise
        fresh.pop("expires_at", None)
        if token.get("expires_in"):
            fresh["expires_at"] = iso(now + timedelta(seconds=int(token["expires_in"])))
        return fresh
