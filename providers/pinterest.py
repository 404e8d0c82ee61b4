"""Pinterest through the Pinterest API v5 with an OAuth user token (refresh tokens; client authenticated with
HTTP Basic at `POST /v5/oauth/token`).

- Boards: `GET /v5/boards` (`page_size`, `bookmark`) is the live source of the `pinterest_boards` dynamic
  options (each board's `id` the value, its `name` the label). A 401 → reconnection needed, an answer that is
  not a list of boards → malformed, 5xx / timeouts → dependency failure: the targets route turns each into its
  explicit error, never stale choices.
- Pins: `POST /v5/pins` with `board_id` (required: every Pin needs a board), `description` (the copy),
  `title`, `link`, `alt_text`, `board_section_id` and `media_source`: `image_url` for one image,
  `multiple_image_urls` (2-5 `items`) for a carousel, `video_id` for a video.
- Video: `POST /v5/media` (`media_type=video`) → `media_id`, `upload_url`, `upload_parameters`; the file is
  POSTed to `upload_url` as multipart with those parameters; `GET /v5/media/{media_id}` until `status`
  succeeded (bounded backoff; `failed` is a rejection; still processing when the budget is spent is
  transient: nothing was pinned, so the retry starts again); then the Pin with `media_source.video_id`
  and `cover_image_key_frame_time`.
- Exactly-once: no idempotency key. `find_post_matching` lists the board's Pins (`GET /v5/boards/{id}/pins`)
  and recognises one created since the run began with exactly the post's description (and title).
- Errors: `{"code", "message"}` bodies; the status rules (401 reauth, 429 with Retry-After, 5xx transient).

The API base is `SOCIALPUB_PINTEREST_API_URL` (default https://api.pinterest.com), the authorize page
`SOCIALPUB_PINTEREST_AUTHORIZE_URL` (default https://www.pinterest.com/oauth/).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx

from providers.base import Account, CheckResult, Connection, Options, PostRequest, PostResult, ProviderError, recorded
from providers.http import DEFAULT_TIMEOUT, call, download, json_body, new_client
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due, refreshed

NETWORK = "Pinterest"
API_URL = os.environ.get("SOCIALPUB_PINTEREST_API_URL", "https://api.pinterest.com").rstrip("/")
# Pin analytics: the standard Pin metric types (the `metric_types` enum of the description) and how far back
# Pinterest answers ("Cannot be more than 90 days back from today").
PIN_METRIC_TYPES = ("IMPRESSION", "OUTBOUND_CLICK", "PIN_CLICK", "SAVE", "TOTAL_COMMENTS", "TOTAL_REACTIONS")
PIN_ANALYTICS_DAYS = 89
AUTHORIZE_URL = os.environ.get("SOCIALPUB_PINTEREST_AUTHORIZE_URL", "https://www.pinterest.com/oauth/")
# The OpenAPI description's security of POST /pins and DELETE /pins/{id} lists boards:write as well
# (tests/providers/test_description_scopes.py).
SCOPES = ("boards:read", "boards:write", "pins:read", "pins:write", "user_accounts:read")
BOARDS_MAX = 250  # one page; the targets route bounds the choices anyway
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60
POLL_MIN, POLL_MAX = 2.0, 30.0
RECENT_MAX = 50
REFRESH_AHEAD = timedelta(days=2)  # access tokens last 30 days


def _created(value: Any) -> datetime | None:
    """Pinterest's `created_at` (ISO 8601, UTC, usually without an offset)."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _classify(response: httpx.Response) -> ProviderError | None:
    if response.status_code in (400, 404):
        try:
            message = str(response.json().get("message") or "").lower()
        except (ValueError, AttributeError):
            message = ""
        where = f"Pinterest answered {response.status_code} to {response.request.url.path}"
        if "board" in message:
            return ProviderError("rejected", where, safe_reason="Pinterest refused the post: the board was not "
                                                                "found or is not the account's.")
        if "image" in message or "media" in message or "video" in message:
            return ProviderError("rejected", where, safe_reason="Pinterest refused the post: a media file was not "
                                                                "accepted.")
    return None


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Pinterest account has no access token")
    return token


async def verify(server: str, token: str) -> Connection:
    """The account a user token belongs to (`GET /v5/user_account`)."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        me = json_body(await call(client, "GET", "/v5/user_account", network=NETWORK, classify=_classify), NETWORK)
    if not isinstance(me, dict) or not (me.get("id") or me.get("username")):
        raise ProviderError("malformed", "Pinterest user_account answered without id or username")
    username = str(me.get("username") or "")[:200]
    avatar = me.get("profile_image")
    return Connection(provider_account_id=str(me.get("id") or username)[:200], username=username or None,
                      display_name=(str(me.get("business_name") or "") or username)[:200] or None, credentials={},
                      state={"username": username, "account_type": str(me.get("account_type") or "")[:20]},
                      avatar_url=avatar if isinstance(avatar, str) else None)


# The scopes each operation needs: the `pinterest_oauth2` security of each operation in Pinterest's OpenAPI
# description (https://github.com/pinterest/api-description, v5): `POST /v5/pins` and `DELETE /v5/pins/{id}`
# need boards:read, boards:write, pins:read and pins:write; `POST /v5/media` pins:read and pins:write, `GET
# /v5/media/{id}` pins:read; `GET /v5/boards/{id}/pins` boards:read and pins:read; `GET /v5/boards` boards:read;
# `GET /v5/user_account` user_accounts:read.
_PIN_SCOPES = ("boards:read", "boards:write", "pins:read", "pins:write")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:PIN_IMAGE": _PIN_SCOPES,
    "publish:PIN_VIDEO": _PIN_SCOPES,
    "find_post": ("boards:read", "pins:read"),
    "post_metrics": ("boards:read", "pins:read"),
    "delete_post": _PIN_SCOPES,
    "dynamic_options": ("boards:read",),
    "check": ("user_accounts:read",),
}


class PinterestProvider:
    name = "pinterest"
    refresh_ahead = REFRESH_AHEAD  # the token tick refreshes Pinterest tokens (30 days) this far ahead
    needed_scopes = NEEDED_SCOPES
    metrics_fields = SUPPORT["pinterest"].fields

    def __init__(self, *, api_url: str = API_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 processing_budget: float = PROCESSING_BUDGET, poll_min: float = POLL_MIN) -> None:
        self.api_url, self.timeout = api_url.rstrip("/"), timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    async def check(self, account: Account) -> CheckResult:
        """`GET /v5/user_account` (https://developers.pinterest.com/docs/api/v5/user_account-get). Pinterest has
        no token introspection: the granted scopes are those its token response named (`scope`)."""
        result = recorded(account.credentials)
        try:
            async with self._client(account) as client:
                me = json_body(await call(client, "GET", "/v5/user_account", network=NETWORK, classify=_classify),
                               NETWORK)
        except ProviderError as exc:
            result.failed(exc)
            return result
        if not isinstance(me, dict) or not (me.get("id") or me.get("username")):
            result.failed(ProviderError("malformed", "Pinterest user_account answered without id or username"))
            return result
        result.token_valid = result.reachable = True
        result.account = str(me.get("username") or me.get("id"))[:200]
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        if kind != "pinterest_boards":
            raise ProviderError("malformed", f"Pinterest has no dynamic options of kind {kind}")
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", "/v5/boards", network=NETWORK, classify=_classify,
                                        params={"page_size": str(BOARDS_MAX)}), NETWORK)
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "Pinterest boards answered without items")
        options = []
        for board in items:
            if not isinstance(board, dict) or not isinstance(board.get("id"), str) or not board["id"].isdigit() \
                    or not isinstance(board.get("name"), str) or not board["name"].strip():
                raise ProviderError("malformed", "Pinterest boards answered a board without id or name")
            options.append({"value": board["id"], "label": board["name"][:200]})
        return Options(kind, options)

    def pin(self, post: PostRequest, media_source: dict[str, Any]) -> dict[str, Any]:
        """The `POST /v5/pins` body (PinCreate)."""
        settings = post.settings or {}
        board = settings.get("board_id")
        if not isinstance(board, str) or not board.isdigit():
            raise ProviderError("rejected", "Pinterest pin without a board",
                                safe_reason="Pinterest refused the post: every Pin needs a board.")
        body: dict[str, Any] = {"board_id": board, "description": post.text[:800], "media_source": media_source}
        title = settings.get("title") or post.title
        if title:
            body["title"] = str(title)[:100]
        for key, limit in (("link", 2048), ("alt_text", 500)):
            if settings.get(key):
                body[key] = str(settings[key])[:limit]
        if isinstance(settings.get("board_section_id"), str) and settings["board_section_id"].isdigit():
            body["board_section_id"] = settings["board_section_id"]
        return body

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        if not post.media:
            raise ProviderError("rejected", "Pinterest pin without media",
                                safe_reason="Pinterest refused the post: a Pin needs an image or a video.")
        self.pin(post, {})  # the board is checked before anything is uploaded
        is_video = str(post.media[0].get("content_type") or "").startswith("video/")
        async with self._client(account) as client:
            if is_video:
                source: dict[str, Any] = {"source_type": "video_id", "media_id": await self._video(client, post.media[0]),
                                          "cover_image_key_frame_time": 0}
            elif len(post.media) == 1:
                source = {"source_type": "image_url", "url": post.media[0]["url"]}
            else:
                source = {"source_type": "multiple_image_urls", "items": [{"url": m["url"]} for m in post.media[:5]]}
            created = json_body(await call(client, "POST", "/v5/pins", network=NETWORK, classify=_classify,
                                           json=self.pin(post, source)), NETWORK)
        if not isinstance(created, dict) or not created.get("id"):
            raise ProviderError("malformed", "Pinterest pin create answered without an id")
        return PostResult(publish_id=str(created["id"]), permalink_url=f"https://www.pinterest.com/pin/{created['id']}/")

    async def _video(self, client: httpx.AsyncClient, media: dict[str, Any]) -> str:
        registered = json_body(await call(client, "POST", "/v5/media", network=NETWORK, classify=_classify,
                                          json={"media_type": "video"}), NETWORK)
        if not isinstance(registered, dict) or not str(registered.get("media_id") or "").isdigit() \
                or not str(registered.get("upload_url") or "").startswith("https://"):
            raise ProviderError("malformed", "Pinterest media register answered without media_id and upload_url")
        media_id, params = str(registered["media_id"]), registered.get("upload_parameters") or {}
        if not isinstance(params, dict):
            raise ProviderError("malformed", "Pinterest media register answered bad upload_parameters")
        data = await download(str(media["url"]), NETWORK)
        async with new_client(timeout=self.timeout) as upload:  # the upload URL is storage, not the API
            await call(upload, "POST", str(registered["upload_url"]), network=NETWORK,
                       data={str(k): str(v) for k, v in params.items()},
                       files={"file": ("video.mp4", data, str(media.get("content_type") or "video/mp4"))})
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            body = json_body(await call(client, "GET", f"/v5/media/{media_id}", network=NETWORK, classify=_classify),
                             NETWORK)
            status = body.get("status") if isinstance(body, dict) else None
            if status == "succeeded":
                return media_id
            if status == "failed":
                raise ProviderError("rejected", f"Pinterest media {media_id} failed",
                                    safe_reason="Pinterest could not process the video.")
            if status not in ("registered", "processing"):
                raise ProviderError("malformed", f"Pinterest media status {str(status)[:40]}")
            if waited + wait > self.processing_budget:
                break
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"Pinterest media {media_id} still processing",
                            safe_reason="Pinterest is still processing the video; it is tried again later.")

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        board = (post.settings or {}).get("board_id")
        if not isinstance(board, str) or not board.isdigit():
            return None
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", f"/v5/boards/{board}/pins", network=NETWORK,
                                        classify=_classify, params={"page_size": str(RECENT_MAX)}), NETWORK)
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "Pinterest board pins answered an unexpected shape")
        title = (post.settings or {}).get("title") or post.title
        for pin in items:
            if not isinstance(pin, dict) or not pin.get("id") or (pin.get("description") or "") != post.text[:800]:
                continue
            if title and (pin.get("title") or "") != str(title)[:100]:
                continue
            created = _created(pin.get("created_at"))
            if created is not None and created >= since:
                return PostResult(publish_id=str(pin["id"]), permalink_url=f"https://www.pinterest.com/pin/{pin['id']}/")
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """`GET /v5/pins/{pin_id}/analytics` (https://developers.pinterest.com/docs/api/v5/pins-analytics): the
        lifetime metrics of the standard Pin metric types over the dates Pinterest allows (start at most 90 days
        back). The answer is keyed by split; without a split, `ALL`."""
        end = now.astimezone(UTC).date()
        start = max(published_at.astimezone(UTC).date(), end - timedelta(days=PIN_ANALYTICS_DAYS))
        try:
            async with self._client(account) as client:
                body = json_body(await call(
                    client, "GET", f"/v5/pins/{publish_id}/analytics", network=NETWORK, classify=_classify,
                    params={"start_date": start.isoformat(), "end_date": end.isoformat(),
                            "metric_types": ",".join(PIN_METRIC_TYPES)}), NETWORK)
        except ProviderError as exc:
            if "answered 404" in exc.message:
                return PostMetrics(gone=True)
            raise
        group = None
        if isinstance(body, dict):
            group = body.get("all") or body.get("ALL") or next(iter(body.values()), None)
        lifetime = group.get("lifetime_metrics") if isinstance(group, dict) else None
        if not isinstance(lifetime, dict):
            raise ProviderError("malformed", "Pinterest Pin analytics answered without lifetime_metrics")
        return from_raw(lifetime, {"IMPRESSION": "impressions", "TOTAL_REACTIONS": "likes",
                                   "TOTAL_COMMENTS": "replies", "SAVE": "saves", "OUTBOUND_CLICK": "link_clicks"})

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with self._client(account) as client:
            try:
                await call(client, "DELETE", f"/v5/pins/{publish_id}", network=NETWORK, classify=_classify)
            except ProviderError as exc:
                if "404" not in exc.message:
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD):
            return None
        return await refreshed(creds, now, f"{self.api_url}/v5/oauth/token", network=NETWORK,
                               auth_method="client_secret_basic")
