"""TikTok through the Content Posting API (direct post), with a user access token (`video.publish`).

- Dynamic options: `POST /v2/post/publish/creator_info/query/` is the live source of `creator_privacy_levels`
  (`privacy_level_options`) and its constraints (`comment_disabled`, `duet_disabled`, `stitch_disabled`); the
  targets dynamic-options routes read it through `dynamic_options`. TikTok requires it to be read before
  every post, so `publish` reads it too and refuses a privacy level the creator does not offer.
- Video: `POST /v2/post/publish/video/init/` with `post_info` (`title` = caption, `privacy_level` — never
  defaulted, as the spec says —, `disable_comment`/`disable_duet`/`disable_stitch`, `is_aigc`, brand toggles)
  and `source_info` `{"source": "PULL_FROM_URL", "video_url"}` (TikTok pulls from our media URL; the domain must
  be verified in the TikTok app). Photos: `POST /v2/post/publish/content/init/` with `media_type=PHOTO`,
  `post_mode=DIRECT_POST`, `photo_images`.
- Status: `POST /v2/post/publish/status/fetch/` (`publish_id`) polled with bounded backoff until
  `PUBLISH_COMPLETE` (the post ID is `publicaly_available_post_id[0]`, as TikTok spells it); `FAILED` is a
  rejection naming TikTok's `fail_reason`; still processing when the budget is spent is transient.
- Errors: TikTok's `error.code` (`access_token_invalid` → reauth, `rate_limit_exceeded` → rate limited,
  `spam_risk_*` and `*_mismatch` → refusals with our own sentence).
- Refresh: `POST /v2/oauth/token/` (`client_key`, `client_secret`, `grant_type=refresh_token`); access tokens last
  24 hours, refresh tokens a year; TikTok may rotate the refresh token.
- Exactly-once: TikTok has no idempotency key and the publish ID is the network's own, so a crash between
  TikTok's answer and our commit can post twice (documented in docs/networks.md).
- Metrics (providers/metrics.py): `POST /v2/video/query/?fields=id,view_count,like_count,comment_count,share_count`
  with `{"filters": {"video_ids": [id]}}` (`video.list`,
  https://developers.tiktok.com/doc/tiktok-api-v2-video-query): TikTok answers only the user's videos, so an ID
  missing from `data.videos` is a post TikTok no longer has. The video ID is what `publish` recorded when
  status/fetch gave one; a post still in moderation or never public (`SELF_ONLY`) has none
  ("developers are not provided with the post_id until this process is complete",
  https://developers.tiktok.com/doc/content-posting-api-reference-get-video-status), so `publish` recorded the
  publish ID: each reading asks status/fetch again, and while there is still no video ID that reading finds
  nothing (not an error). `scope_not_authorized` (video.list not granted) is a refusal: the collector stops the
  account's readings once.

The API base is `SOCIALPUB_TIKTOK_API_URL` (default https://open.tiktokapis.com).
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx

from providers.base import Account, CheckResult, Connection, Options, PostRequest, PostResult, ProviderError, recorded
from providers.http import DEFAULT_TIMEOUT, call, json_body, new_client, retry_after
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due
from schemas.time import iso

NETWORK = "TikTok"
API_URL = os.environ.get("SOCIALPUB_TIKTOK_API_URL", "https://open.tiktokapis.com").rstrip("/")
AUTHORIZE_URL = os.environ.get("SOCIALPUB_TIKTOK_AUTHORIZE_URL", "https://www.tiktok.com/v2/auth/authorize/")
SCOPES = ("user.info.basic", "video.publish", "video.upload", "video.list")
# Login Kit for Web, "Configure your authorization URL": `scope` is "a comma-separated string of authorization
# scope(s)" (https://developers.tiktok.com/doc/login-kit-web/), not RFC 6749's space-separated list.
SCOPE_SEPARATOR = ","
PRIVACY_LEVELS = ("PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "FOLLOWER_OF_CREATOR", "SELF_ONLY")
LABELS = {"PUBLIC_TO_EVERYONE": "Everyone", "MUTUAL_FOLLOW_FRIENDS": "Friends",
          "FOLLOWER_OF_CREATOR": "Followers", "SELF_ONLY": "Only me"}
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60
POLL_MIN, POLL_MAX = 2.0, 30.0
REFRESH_AHEAD = timedelta(hours=2)
_JSON = {"Content-Type": "application/json; charset=UTF-8"}
METRIC_FIELDS = "id,view_count,like_count,comment_count,share_count"
METRICS_COMMON = {"view_count": "video_views", "like_count": "likes", "share_count": "reposts",
                  "comment_count": "replies"}
_VIDEO_ID = re.compile(r"\d{1,30}")


def _classify(response: httpx.Response) -> ProviderError | None:
    try:
        code = str((response.json().get("error") or {}).get("code") or "")
    except (ValueError, AttributeError, TypeError):
        return None
    where = f"TikTok answered {response.status_code} ({code[:60]}) to {response.request.url.path}"
    if code in ("access_token_invalid", "scope_not_authorized", "token_not_authorized_for_specified_open_id"):
        return ProviderError("reauth_required", where,
                             safe_reason="TikTok no longer accepts the account's authorisation.")
    if code == "rate_limit_exceeded" or response.status_code == 429:
        return ProviderError("rate_limited", where, retry_after=retry_after(response))
    if code.startswith("spam_risk"):
        return ProviderError("rejected", where, safe_reason="TikTok refused the post: the account posted too "
                                                            "often or the post looks like spam to TikTok.")
    if code == "privacy_level_option_mismatch":
        return ProviderError("rejected", where, safe_reason="TikTok refused the post: the privacy level is not "
                                                            "one this creator can use now.")
    if code == "unaudited_client_can_only_post_to_private_accounts":
        return ProviderError("rejected", where, safe_reason="TikTok refused the post: an app not yet audited by "
                                                            "TikTok can only post to private accounts.")
    if response.status_code >= 500 or code in ("internal_error",):
        return None
    if code and code != "ok":
        return ProviderError("rejected", where, safe_reason="TikTok refused the post.")
    return None


def _metrics_classify(response: httpx.Response) -> ProviderError | None:
    """A metrics read (https://developers.tiktok.com/doc/tiktok-api-v2-error-handling): `scope_not_authorized`
    (401) and `scope_permission_missed` (400) are the permission not granted — a refusal, which stops the
    account's readings once, not a reconnect of an account that still publishes; rate limits and outages as
    usual; any other refusal is our request's fault, not the account's."""
    try:
        code = str((response.json().get("error") or {}).get("code") or "")
    except (ValueError, AttributeError, TypeError):
        code = ""
    where = f"TikTok answered {response.status_code} ({code[:60]}) to {response.request.url.path}"
    if code in ("scope_not_authorized", "scope_permission_missed"):
        return ProviderError("rejected", where, safe_reason="TikTok refused to share the post's statistics: the "
                                                            "account did not grant video.list.")
    if code == "access_token_invalid" or response.status_code == 401:
        return ProviderError("reauth_required", where,
                             safe_reason="TikTok no longer accepts the account's authorisation.")
    if code == "rate_limit_exceeded" or response.status_code == 429:
        return ProviderError("rate_limited", where, retry_after=retry_after(response))
    if response.status_code >= 500 or code == "internal_error":
        return None
    return ProviderError("malformed", where)


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "TikTok account has no access token")
    return token


def _object(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else (TikTok omits or nulls optional objects)."""
    return value if isinstance(value, dict) else {}


def _data(response: httpx.Response) -> dict[str, Any]:
    body = json_body(response, NETWORK)
    if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
        raise ProviderError("malformed", f"TikTok answered without data to {response.request.url.path}")
    if _object(body.get("error")).get("code") not in (None, "ok"):
        raise _classify(response) or ProviderError("rejected", "TikTok answered an error",
                                                   safe_reason="TikTok refused the post.")
    return body["data"]


# The scopes each operation needs (https://developers.tiktok.com/doc/tiktok-api-scopes and each endpoint's
# reference): the direct post endpoints (`/v2/post/publish/video/init/`, `/v2/post/publish/content/init/`),
# `creator_info/query` and `status/fetch` need video.publish
# (https://developers.tiktok.com/doc/content-posting-api-reference-direct-post); `GET /v2/user/info/` needs
# user.info.basic (https://developers.tiktok.com/doc/tiktok-api-v2-get-user-info). TikTok keeps no idempotency
# key to find a post by and offers no deletion, so find_post and delete_post call nothing. Post metrics:
# `/v2/video/query/` needs video.list (https://developers.tiktok.com/doc/tiktok-api-v2-video-query), and
# status/fetch (for a post whose video ID came after publishing) video.publish.
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:VIDEO": ("video.publish",),
    "publish:IMAGE": ("video.publish",),
    "publish:CAROUSEL": ("video.publish",),
    "dynamic_options": ("video.publish",),
    "check": ("user.info.basic",),
    "post_metrics": ("video.list", "video.publish"),
}


class TikTokProvider:
    name = "tiktok"
    metrics_fields = SUPPORT["tiktok"].fields
    refresh_ahead = REFRESH_AHEAD  # the token tick refreshes TikTok tokens (24 hours) this far ahead
    needed_scopes = NEEDED_SCOPES

    def __init__(self, *, api_url: str = API_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 processing_budget: float = PROCESSING_BUDGET, poll_min: float = POLL_MIN) -> None:
        self.api_url, self.timeout = api_url.rstrip("/"), timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    async def _creator(self, client: httpx.AsyncClient) -> dict[str, Any]:
        return _data(await call(client, "POST", "/v2/post/publish/creator_info/query/", network=NETWORK,
                                classify=_classify, headers=_JSON))

    async def check(self, account: Account) -> CheckResult:
        """`GET /v2/user/info/` (https://developers.tiktok.com/doc/tiktok-api-v2-get-user-info). TikTok has no
        token introspection: the granted scopes are those its token response named (`scope`, comma-separated)."""
        result = recorded(account.credentials)
        try:
            async with self._client(account) as client:
                user = _data(await call(client, "GET", "/v2/user/info/", network=NETWORK, classify=_classify,
                                        params={"fields": "open_id,display_name"})).get("user")
        except ProviderError as exc:
            result.failed(exc)
            return result
        if not isinstance(user, dict):
            result.failed(ProviderError("malformed", "TikTok user/info answered without a user"))
            return result
        result.token_valid = result.reachable = True
        result.account = str(user.get("display_name") or user.get("open_id") or "")[:200] or None
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        if kind != "creator_privacy_levels":
            raise ProviderError("malformed", f"TikTok has no dynamic options of kind {kind}")
        async with self._client(account) as client:
            creator = await self._creator(client)
        levels = creator.get("privacy_level_options")
        flags = [creator.get(k) for k in ("comment_disabled", "duet_disabled", "stitch_disabled")]
        if not isinstance(levels, list) or not levels or not all(isinstance(f, bool) for f in flags):
            raise ProviderError("malformed", "TikTok creator_info answered without privacy levels and flags")
        options = [{"value": str(v), "label": LABELS.get(str(v), str(v))} for v in levels[:20]]
        return Options(kind, options, {"comments_disabled": flags[0], "duets_disabled": flags[1],
                                       "stitches_disabled": flags[2]})

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        settings = post.settings or {}
        privacy = settings.get("privacy_level")
        if not privacy:  # never defaulted (spec): the creator chooses
            raise ProviderError("rejected", "TikTok post without privacy_level",
                                safe_reason="TikTok refused the post: no privacy level was chosen.")
        if not post.media:
            raise ProviderError("rejected", "TikTok post without media",
                                safe_reason="TikTok refused the post: a TikTok post needs a video or photos.")
        async with self._client(account) as client:
            creator = await self._creator(client)
            if privacy not in (creator.get("privacy_level_options") or []):
                raise ProviderError("rejected", "privacy level not offered by creator_info",
                                    safe_reason="TikTok refused the post: the privacy level is not one this "
                                                "creator can use now.")
            info: dict[str, Any] = {
                "privacy_level": privacy,
                "disable_comment": bool(creator.get("comment_disabled")) or settings.get("allow_comment") is False,
                "is_aigc": bool(settings.get("is_aigc"))}
            commercial = set(settings.get("commercial_types") or []) if settings.get("is_commercial_content") else set()
            info["brand_content_toggle"] = "BRANDED_CONTENT" in commercial
            info["brand_organic_toggle"] = "YOUR_BRAND" in commercial
            is_video = str(post.media[0].get("content_type") or "").startswith("video/")
            if is_video:
                info.update(title=post.text,
                            disable_duet=bool(creator.get("duet_disabled")) or settings.get("allow_duet") is False,
                            disable_stitch=bool(creator.get("stitch_disabled")) or settings.get("allow_stitch") is False)
                body = {"post_info": info, "source_info": {"source": "PULL_FROM_URL",
                                                           "video_url": post.media[0]["url"]}}
                path = "/v2/post/publish/video/init/"
            else:
                info.update(title=(post.title or "")[:90], description=post.text,
                            auto_add_music=bool(settings.get("auto_add_music")))
                body = {"post_info": info, "post_mode": "DIRECT_POST", "media_type": "PHOTO",
                        "source_info": {"source": "PULL_FROM_URL", "photo_cover_index": 0,
                                        "photo_images": [m["url"] for m in post.media[:35]]}}
                path = "/v2/post/publish/content/init/"
            publish_id = str(_data(await call(client, "POST", path, network=NETWORK, classify=_classify,
                                              headers=_JSON, json=body)).get("publish_id") or "")
            if not publish_id:
                raise ProviderError("malformed", "TikTok init answered without a publish_id")
            post_id = await self._published(client, publish_id)
        username = (account.state or {}).get("username")
        link = f"https://www.tiktok.com/@{username}/{'video' if is_video else 'photo'}/{post_id}" \
            if username and post_id else None
        return PostResult(publish_id=post_id or publish_id, permalink_url=link)

    async def _published(self, client: httpx.AsyncClient, publish_id: str) -> str | None:
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            data = _data(await call(client, "POST", "/v2/post/publish/status/fetch/", network=NETWORK,
                                    classify=_classify, headers=_JSON, json={"publish_id": publish_id}))
            status = data.get("status")
            if status == "PUBLISH_COMPLETE":
                ids = data.get("publicaly_available_post_id") or []
                return str(ids[0]) if isinstance(ids, list) and ids else None
            if status == "FAILED":
                reason = re.sub(r"[^a-z0-9_ ]", "", str(data.get("fail_reason") or "").lower())[:80] or "unknown"
                raise ProviderError("rejected", f"TikTok publish {publish_id} failed",
                                    safe_reason=f"TikTok could not process the media: {reason}.")
            if waited + wait > self.processing_budget:
                break
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"TikTok publish {publish_id} still processing",
                            safe_reason="TikTok is still processing the media; it is tried again later.")

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key (docs/networks.md)

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """The video's counts by its video ID (module docstring); nothing this time while it has none."""
        async with self._client(account) as client:
            video_id = publish_id if _VIDEO_ID.fullmatch(publish_id) else await self._video_id(client, publish_id)
            if video_id is None:
                return PostMetrics()
            body = json_body(await call(client, "POST", "/v2/video/query/", network=NETWORK,
                                        classify=_metrics_classify, params={"fields": METRIC_FIELDS},
                                        headers={"Content-Type": "application/json"},
                                        json={"filters": {"video_ids": [video_id]}}), NETWORK)
        data = body.get("data") if isinstance(body, dict) else None
        error = _object(body.get("error") if isinstance(body, dict) else None)
        if error.get("code") not in (None, "ok") or not isinstance(data, dict) or \
                not isinstance(data.get("videos", []), list):
            raise ProviderError("malformed", "TikTok video query answered an unexpected shape")
        for video in data.get("videos") or []:
            if isinstance(video, dict) and str(video.get("id")) == video_id:
                return from_raw({k: v for k, v in video.items() if k != "id"}, METRICS_COMMON)
        return PostMetrics(gone=True)  # not among the user's videos: deleted on TikTok

    async def _video_id(self, client: httpx.AsyncClient, publish_id: str) -> str | None:
        """The video ID status/fetch gives for a post published without one, if TikTok has made it public since."""
        body = json_body(await call(client, "POST", "/v2/post/publish/status/fetch/", network=NETWORK,
                                    classify=_metrics_classify, headers=_JSON, json={"publish_id": publish_id}),
                         NETWORK)
        data = body.get("data") if isinstance(body, dict) else None
        ids = data.get("publicaly_available_post_id") if isinstance(data, dict) else None  # TikTok's spelling
        found = str(ids[0]) if isinstance(ids, list) and ids else ""
        return found if _VIDEO_ID.fullmatch(found) else None

    async def delete_post(self, account: Account, publish_id: str) -> None:
        raise ProviderError("rejected", "TikTok posts cannot be deleted through the API",
                            safe_reason="TikTok does not allow deleting posts through its API; delete it in the app.")

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD):
            return None
        refresh = creds["refresh_token"]

        def refused(response: httpx.Response) -> ProviderError | None:
            if response.status_code in (400, 401):
                return ProviderError("reauth_required", f"TikTok token endpoint answered {response.status_code}",
                                     safe_reason="TikTok refused the authorisation; connect the account again.")
            return None

        async with new_client(self.api_url, timeout=self.timeout) as client:
            token = json_body(await call(client, "POST", "/v2/oauth/token/", network=NETWORK, classify=refused,
                                         data={"client_key": str(creds.get("client_id") or ""),
                                               "client_secret": str(creds.get("client_secret") or ""),
                                               "grant_type": "refresh_token", "refresh_token": str(refresh)}),
                              NETWORK)
        if isinstance(token, dict) and token.get("error"):
            raise ProviderError("reauth_required", "TikTok refused the refresh token",
                                safe_reason="TikTok refused the authorisation; connect the account again.")
        if not isinstance(token, dict) or not isinstance(token.get("access_token"), str) or not token["access_token"]:
            raise ProviderError("malformed", "TikTok token endpoint answered without an access token")
        fresh = {**creds, "access_token": token["access_token"]}
        if token.get("refresh_token"):
            fresh["refresh_token"] = token["refresh_token"]
        fresh["expires_at"] = iso(now + timedelta(seconds=int(token.get("expires_in") or 86400)))
        return fresh


async def exchange_code(endpoint: str, client_key: str, client_secret: str | None, redirect_uri: str, code: str,
                        code_verifier: str) -> dict[str, Any]:
    """TikTok's code exchange: `client_key` where OAuth says `client_id` (so not the generic authlib one)."""
    def refused(response: httpx.Response) -> ProviderError | None:
        if response.status_code in (400, 401):
            return ProviderError("rejected", f"TikTok token endpoint answered {response.status_code}",
                                 safe_reason="TikTok refused the authorisation code")
        return None

    async with new_client() as client:
        token = json_body(await call(client, "POST", endpoint, network=NETWORK, classify=refused, data={
            "client_key": client_key, "client_secret": client_secret or "", "code": code,
            "grant_type": "authorization_code", "redirect_uri": redirect_uri, "code_verifier": code_verifier}),
            NETWORK)
    if not isinstance(token, dict) or token.get("error") or not isinstance(token.get("access_token"), str):
        raise ProviderError("rejected", "TikTok refused the authorisation code",
                            safe_reason="TikTok refused the authorisation code")
    return token


async def verify(server: str, token: str) -> Connection:
    """The creator a user token belongs to (`GET /v2/user/info/`)."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        data = _data(await call(client, "GET", "/v2/user/info/", network=NETWORK, classify=_classify,
                                params={"fields": "open_id,union_id,avatar_url,display_name,username"}))
    user = _object(data.get("user"))
    if not user.get("open_id"):
        raise ProviderError("malformed", "TikTok user info answered without open_id")
    username = str(user.get("username") or "")[:200]
    avatar = user.get("avatar_url")
    return Connection(provider_account_id=str(user["open_id"]), username=username or None,
                      display_name=(str(user.get("display_name") or "") or username)[:200] or None, credentials={},
                      state={"username": username}, avatar_url=avatar if isinstance(avatar, str) else None)
