"""Tumblr through the Tumblr API v2 with an OAuth 2.0 user token (`offline_access` for a refresh token).

- Post: `POST /v2/blog/{blog-identifier}/posts` with Neue Post Format `content` blocks and `tags` (a
  comma-separated string), `state=published`. Blocks: a `heading1` text block for the title, a text block
  for the copy, `image` blocks (media objects by `url`, Tumblr fetches them) for TB_TEXT/TB_PHOTO/TB_LINK
  images, one `video` block for TB_VIDEO, a `link` block (`url`) for TB_LINK. Answer 201
  `{"response": {"id"}}`; permalink `https://www.tumblr.com/{blog-name}/{id}`.
- Blog: the blog identifier is its UUID (`t:…`, stable across renames). At connect `GET /v2/user/info` lists
  the user's blogs; the primary one is connected and the others recorded as `candidates` for
  `integrations select-account`.
- Exactly-once: no idempotency key. `find_post_matching` reads the blog's recent posts
  (`GET /v2/blog/{id}/posts?npf=true`) and recognises one posted since the run began whose text blocks are
  exactly the ones this post sends.
- Refresh: `POST /v2/oauth2/token` (`grant_type=refresh_token`, client credentials in the form); Tumblr
  rotates the refresh token. A refusal is reauth_required.
- Metrics: `GET /v2/blog/{blog}/notes?id={post}&mode=conversation` (api.md, "/notes - Get notes for a specific
  Post", https://github.com/tumblr/docs/blob/master/api.md#notes---get-notes-for-a-specific-post): in that mode
  the answer carries `total_likes` and `total_reblogs` beside `total_notes`, so likes and reblogs are Tumblr's own
  split, never guessed from the note count; `total_notes` stays under its own name.
- Errors: the status rules (Tumblr answers `{"meta": {"status", "msg"}, "errors": [...]}`).

The API base is `SOCIALPUB_TUMBLR_API_URL` (default https://api.tumblr.com), the authorize page
`SOCIALPUB_TUMBLR_AUTHORIZE_URL` (default https://www.tumblr.com/oauth2/authorize).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

import httpx

from providers.base import Account, CheckResult, Connection, Options, PostRequest, PostResult, ProviderError, recorded
from providers.http import DEFAULT_TIMEOUT, call, json_body, new_client
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due, refreshed

NETWORK = "Tumblr"
API_URL = os.environ.get("SOCIALPUB_TUMBLR_API_URL", "https://api.tumblr.com").rstrip("/")
AUTHORIZE_URL = os.environ.get("SOCIALPUB_TUMBLR_AUTHORIZE_URL", "https://www.tumblr.com/oauth2/authorize")
SCOPES = ("basic", "write", "offline_access")
RECENT_MAX = 20  # the posts endpoint's own maximum per page
REFRESH_AHEAD = timedelta(minutes=10)  # access tokens last 42 minutes


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Tumblr account has no access token")
    return token


def _response(body: Any, what: str) -> dict[str, Any]:
    found = body.get("response") if isinstance(body, dict) else None
    if not isinstance(found, dict):
        raise ProviderError("malformed", f"Tumblr {what} answered without a response object")
    return found


async def verify(server: str, token: str) -> Connection:
    """The user's blogs (`GET /v2/user/info`): the primary blog is connected, all are candidates."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        user = _response(json_body(await call(client, "GET", "/v2/user/info", network=NETWORK), NETWORK),
                         "user/info").get("user")
    blogs = [b for b in (user.get("blogs") or []) if isinstance(b, dict) and b.get("uuid") and b.get("name")] \
        if isinstance(user, dict) else []
    if not blogs:
        raise ProviderError("rejected", "no Tumblr blog on the account", safe_reason="the Tumblr account has no blog")
    blog = next((b for b in blogs if b.get("primary")), blogs[0])
    name = str(blog["name"])[:200]
    return Connection(provider_account_id=str(blog["uuid"])[:200], username=name,
                      display_name=str(blog.get("title") or name)[:200], credentials={},
                      state={"username": name, "candidates": [{"id": str(b["uuid"])[:200],
                                                               "username": str(b["name"])[:200]} for b in blogs[:50]]})


def _media(media: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = {"url": media["url"], "type": str(media.get("content_type") or "")}
    for key in ("width", "height"):
        if isinstance(media.get(key), int):
            obj[key] = media[key]
    return obj


# The scopes each operation needs (https://www.tumblr.com/docs/en/api/v2#oauth2-authorization): `basic` reads
# (`GET /v2/user/info`, `GET /v2/blog/{blog}/posts`), `write` creates and deletes posts
# (`POST /v2/blog/{blog}/posts`, `POST /v2/blog/{blog}/post/delete`), `offline_access` gives a refresh token.
_POST_SCOPES = ("basic", "write")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:TB_TEXT": _POST_SCOPES,
    "publish:TB_PHOTO": _POST_SCOPES,
    "publish:TB_VIDEO": _POST_SCOPES,
    "publish:TB_LINK": _POST_SCOPES,
    "find_post": ("basic",),
    "delete_post": ("write",),
    "refresh_credentials": ("offline_access",),
    "check": ("basic",),
    "post_metrics": ("basic",),  # GET /v2/blog/{blog}/notes, a read like the posts listing
}
# The note totals of a post (conversation mode) -> the common names; total_notes stays raw.
NOTE_TOTALS = {"total_likes": "likes", "total_reblogs": "reposts"}


class TumblrProvider:
    name = "tumblr"
    metrics_fields = SUPPORT["tumblr"].fields
    refresh_ahead = REFRESH_AHEAD  # the token tick refreshes Tumblr tokens (42 minutes) this far ahead
    needed_scopes = NEEDED_SCOPES

    def __init__(self, *, api_url: str = API_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> None:
        self.api_url, self.timeout = api_url.rstrip("/"), timeout

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    @staticmethod
    def _blog(account: Account) -> str:
        if not account.provider_account_id:
            raise ProviderError("reauth_required", "Tumblr account has no blog")
        return account.provider_account_id

    async def check(self, account: Account) -> CheckResult:
        """`GET /v2/user/info` (https://www.tumblr.com/docs/en/api/v2#userinfo--get-a-users-information): the token
        works and the account's blog is still among the user's. Tumblr has no token introspection: the granted
        scopes are those its token response named (`scope`)."""
        result = recorded(account.credentials)
        try:
            async with self._client(account) as client:
                user = _response(json_body(await call(client, "GET", "/v2/user/info", network=NETWORK), NETWORK),
                                 "user/info").get("user")
        except ProviderError as exc:
            result.failed(exc)
            return result
        result.token_valid = True
        blogs = [b for b in (user.get("blogs") or []) if isinstance(b, dict)] if isinstance(user, dict) else []
        names = {str(b.get(k)) for b in blogs for k in ("name", "uuid") if b.get(k)}
        result.reachable = bool(account.provider_account_id) and account.provider_account_id in names
        result.account = str(account.provider_account_id or "")[:200] or None
        if not result.reachable:
            result.notes.append("The connected blog is not among the blogs of the authorising user.")
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Tumblr has no dynamic options ({kind})")

    @staticmethod
    def _texts(post: PostRequest) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        title = (post.settings or {}).get("title") or post.title
        if title:
            blocks.append({"type": "text", "subtype": "heading1", "text": str(title)[:500]})
        if post.text.strip():
            blocks.append({"type": "text", "text": post.text})
        return blocks

    def content(self, post: PostRequest) -> list[dict[str, Any]]:
        """The NPF `content` blocks of the post."""
        settings, post_type = post.settings or {}, post.post_type or "TB_TEXT"
        blocks = self._texts(post)
        if post_type == "TB_VIDEO":
            if len(post.media) != 1:
                raise ProviderError("rejected", "Tumblr video post without one video",
                                    safe_reason="Tumblr refused the post: a video post needs one video.")
            blocks.append({"type": "video", "media": _media(post.media[0])})
        else:
            blocks += [{"type": "image", "media": [_media(m)]} for m in post.media[:10]]
        if post_type == "TB_LINK":
            link = settings.get("link")
            if not isinstance(link, str) or not link:
                raise ProviderError("rejected", "Tumblr link post without a link",
                                    safe_reason="Tumblr refused the post: a link post needs its URL.")
            blocks.append({"type": "link", "url": link})
        if post_type == "TB_PHOTO" and not post.media:
            raise ProviderError("rejected", "Tumblr photo post without images",
                                safe_reason="Tumblr refused the post: a photo post needs images.")
        if not blocks:
            raise ProviderError("rejected", "empty Tumblr post", safe_reason="Tumblr refused the post: it is empty.")
        return blocks

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        body: dict[str, Any] = {"content": self.content(post), "state": "published"}
        tags = [str(t).replace(",", " ")[:140] for t in (post.settings or {}).get("tags") or [] if t]
        if tags:
            body["tags"] = ",".join(tags)
        async with self._client(account) as client:
            created = _response(json_body(await call(client, "POST", f"/v2/blog/{self._blog(account)}/posts",
                                                     network=NETWORK, json=body), NETWORK), "create post")
        post_id = created.get("id_string") or created.get("id")
        if not post_id:
            raise ProviderError("malformed", "Tumblr create post answered without an id")
        return PostResult(publish_id=str(post_id), permalink_url=self._link(account, str(post_id)))

    @staticmethod
    def _link(account: Account, post_id: str) -> str | None:
        name = (account.state or {}).get("username")
        return f"https://www.tumblr.com/{name}/{post_id}" if name else None

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        want = [(b.get("subtype"), b["text"]) for b in self._texts(post)]
        async with self._client(account) as client:
            found = _response(json_body(await call(client, "GET", f"/v2/blog/{self._blog(account)}/posts",
                                                   network=NETWORK, params={"npf": "true", "limit": str(RECENT_MAX)}),
                                        NETWORK), "posts")
        posts = found.get("posts")
        if not isinstance(posts, list):
            raise ProviderError("malformed", "Tumblr posts answered without a list")
        for item in posts:
            if not isinstance(item, dict) or not (item.get("id_string") or item.get("id")):
                continue
            timestamp = item.get("timestamp")
            try:
                recent = timestamp is not None and float(timestamp) >= since.timestamp()
            except (TypeError, ValueError):
                recent = False
            texts = [(b.get("subtype"), b.get("text")) for b in item.get("content") or []
                     if isinstance(b, dict) and b.get("type") == "text"]
            if recent and texts == want:
                post_id = str(item.get("id_string") or item["id"])
                return PostResult(publish_id=post_id, permalink_url=self._link(account, post_id))
        return None

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with self._client(account) as client:
            try:
                await call(client, "POST", f"/v2/blog/{self._blog(account)}/post/delete", network=NETWORK,
                           data={"id": publish_id})
            except ProviderError as exc:
                if "404" not in exc.message:
                    raise

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """The post's note totals (`GET /v2/blog/{blog}/notes`, `mode=conversation`). 404: the post is gone."""
        try:
            async with self._client(account) as client:
                found = _response(json_body(await call(
                    client, "GET", f"/v2/blog/{self._blog(account)}/notes", network=NETWORK,
                    params={"id": publish_id, "mode": "conversation"}), NETWORK), "notes")
        except ProviderError as exc:
            if "answered 404" in exc.message:
                return PostMetrics(gone=True)
            raise
        if not any(k in found for k in (*NOTE_TOTALS, "total_notes")):
            raise ProviderError("malformed", "Tumblr notes answered without totals")
        return from_raw({k: found.get(k) for k in ("total_notes", *NOTE_TOTALS)}, NOTE_TOTALS)

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD):
            return None
        return await refreshed(creds, now, f"{self.api_url}/v2/oauth2/token", network=NETWORK)
