"""Instagram (professional accounts) through the Instagram Graph API with Facebook Login: a Page's linked
Instagram business/creator account, a long-lived user token.

- Containers: `POST /{ig-user-id}/media` — GRID_POST one image (`image_url`) or video (`media_type=REELS`,
  `video_url`, `share_to_feed=true`); a carousel creates one child per item (`is_carousel_item=true`) and then
  `media_type=CAROUSEL` with `children` (comma-separated); REEL `media_type=REELS` + `video_url`; STORY
  `media_type=STORIES` + `image_url` or `video_url`. `caption` on the parent; `collaborators` (usernames) on
  feed posts and Reels; `trial_params` for trial Reels.
- Processing: `GET /{container-id}?fields=status_code,status` until `FINISHED` (bounded backoff inside the
  worker's publish timeout); `ERROR` is a rejection ("Instagram could not process the media: …" with the
  status's own short reason redacted to letters and digits), `EXPIRED` too; still `IN_PROGRESS` when the budget
  is spent is transient (the worker retries).
- Publish: `POST /{ig-user-id}/media_publish` with `creation_id` → `{id}`; permalink from
  `GET /{media-id}?fields=permalink`.
- Metrics (`post_metrics`, Instagram Media Insights,
  https://developers.facebook.com/docs/instagram-platform/reference/instagram-media/insights): the media's
  `media_product_type` (`GET /{ig-media-id}?fields=media_product_type`), then
  `GET /{ig-media-id}/insights?metric=…` with the metrics that product type offers on the pinned Graph version
  (v22.0 and later refuse `impressions`, `plays` and `video_views`; `views` replaced them): FEED and REELS
  `views,reach,likes,comments,saved,shares,total_interactions` (REELS adds `ig_reels_avg_watch_time` and
  `ig_reels_video_view_total_time`, in milliseconds), STORY `views,reach,replies,shares,total_interactions`.
  Story metrics exist for 24 hours only, so a Story older than that is `gone`. Needs `instagram_manage_insights`
  (Facebook Login); errors as providers/meta_insights.py says.
- Exactly-once: Instagram has no idempotency key. `find_post_matching` reads the account's media since the run
  began (`GET /{ig-user-id}/media?fields=id,caption,timestamp,permalink,media_type`) and recognises an exact
  caption match (Stories carry no caption and are not recoverable this way: documented).
- Errors (Graph API `error.code`): 190 (invalid/expired token) → reauth_required; 4, 17, 32, 613 and 80002
  (rate limits) → rate_limited; `is_transient` or 1/2 → transient; others refused with our own sentence.
- Tokens (Facebook Login, "Long-Lived Access Tokens",
  https://developers.facebook.com/docs/facebook-login/guides/access-tokens/get-long-lived): the code exchange
  gives a short-lived user token ("expiring in hours"), so the connect exchanges it at once for a long-lived one
  (`GET /oauth/access_token?grant_type=fb_exchange_token`, about 60 days; `exchange_code`). The token tick tries
  the exchange again a week ahead; when that does not extend the token it sends a reconnect notice before
  expiry (`reconnect_notice_ahead`): Meta documents no server-side refresh of a long-lived user token. A refusal
  is reauth_required. (This adapter uses the Facebook Login path — `graph.facebook.com`, the Page's linked
  account — so `ig_exchange_token`/`ig_refresh_token` of Instagram Login do not apply.)

The Graph base is `SOCIALPUB_GRAPH_API_URL` (default https://graph.facebook.com/{version}, the Graph API version
of providers/versions.py); the token is sent as an
`Authorization: Bearer` header, never in a URL.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx

from providers import versions
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
from providers.http import DEFAULT_TIMEOUT, call, json_body, new_client, retry_after
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due, token_request
from schemas.time import iso

NETWORK = "Instagram"
GRAPH_URL = os.environ.get("SOCIALPUB_GRAPH_API_URL",
                           f"https://graph.facebook.com/{versions.GRAPH.version}").rstrip("/")
AUTHORIZE_URL = os.environ.get("SOCIALPUB_FACEBOOK_AUTHORIZE_URL",
                               f"https://www.facebook.com/{versions.GRAPH.version}/dialog/oauth")
# instagram_manage_insights: post metrics (an account connected before it was asked for lacks it: its metrics
# stop once with `permission_missing` until it is reconnected).
SCOPES = ("instagram_basic", "instagram_content_publish", "pages_show_list", "pages_read_engagement",
          "business_management", "instagram_manage_insights")
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60  # status reads per container per attempt (with the budget, whichever ends first)
POLL_MIN, POLL_MAX = 2.0, 30.0
RECENT_MAX = 50
REFRESH_AHEAD = timedelta(days=7)  # long-lived tokens last 60 days; exchanged again a week ahead
LONG_LIVED = timedelta(days=60)
_RATE_CODES = {4, 17, 32, 613, 80002}
STORY_METRICS_FOR = timedelta(hours=24)  # Instagram keeps a Story's metrics this long
# The metrics each media product type offers (IG Media Insights reference, "Metrics"), asked in one request.
_FEED = ("views", "reach", "likes", "comments", "saved", "shares", "total_interactions")
INSIGHT_METRICS: dict[str, tuple[str, ...]] = {
    "FEED": _FEED,
    "REELS": (*_FEED, "ig_reels_avg_watch_time", "ig_reels_video_view_total_time"),
    "STORY": ("views", "reach", "replies", "shares", "total_interactions"),
}
# Instagram's names -> the common ones; `views` ("the number of times the post was played or displayed") is the
# successor of impressions; reach, total_interactions and the average watch time stay Instagram's own names.
METRICS_MAP = {"views": "impressions", "likes": "likes", "comments": "replies", "replies": "replies",
               "saved": "saves", "shares": "reposts", "ig_reels_video_view_total_time": "watch_time_seconds"}
MS = {"ig_reels_video_view_total_time": 0.001}


def graph_classify(network: str) -> Any:
    def classify(response: httpx.Response) -> ProviderError | None:
        try:
            error = response.json().get("error") or {}
            code = int(error.get("code") or 0)
        except (ValueError, AttributeError, TypeError):
            return None
        if not code:
            return None  # not a Graph error body: the status rules
        where = f"{network} answered {response.status_code} (code {code}) to {response.request.url.path}"
        if code == 190:
            return ProviderError("reauth_required", where,
                                 safe_reason=f"{network} no longer accepts the account's authorisation.")
        if code in _RATE_CODES or response.status_code == 429:
            return ProviderError("rate_limited", where, retry_after=retry_after(response))
        if error.get("is_transient") or code in (1, 2) or response.status_code >= 500:
            return None  # the status rules: transient / unavailable
        if code == 10 or (200 <= code < 300) or response.status_code == 403:
            return ProviderError("rejected", where, safe_reason=f"{network} refused the post: the account lacks "
                                                                "permission for it.")
        if code == 9004 or code == 36003 or "media" in str(error.get("message") or "").lower():
            return ProviderError("rejected", where, safe_reason=f"{network} refused the post: a media file was "
                                                                "not accepted.")
        return ProviderError("rejected", where, safe_reason=f"{network} refused the post.")
    return classify


_classify = graph_classify(NETWORK)


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Instagram account has no access token")
    return token


def _id(body: Any, what: str) -> str:
    if not isinstance(body, dict) or not body.get("id"):
        raise ProviderError("malformed", f"Instagram {what} answered without an ID")
    return str(body["id"])


async def exchange_code(endpoint: str, client_id: str, client_secret: str | None, redirect_uri: str, code: str,
                        code_verifier: str) -> dict[str, Any]:
    """The code exchange (`/oauth/access_token`), then at once the long-lived user token (`fb_exchange_token`,
    about 60 days): the short-lived one expires in hours (Facebook Login, Long-Lived Access Tokens)."""
    short = await token_request("POST", endpoint, network=NETWORK, refused_kind="rejected", data={
        "client_id": client_id, "client_secret": client_secret or "", "code": code,
        "grant_type": "authorization_code", "redirect_uri": redirect_uri, "code_verifier": code_verifier})
    graph = endpoint.rsplit("/oauth/", 1)[0]
    long = await token_request("GET", f"{graph}/oauth/access_token", network=NETWORK, refused_kind="rejected",
                               params={"grant_type": "fb_exchange_token", "client_id": client_id,
                                       "client_secret": client_secret or "",
                                       "fb_exchange_token": short["access_token"]})
    # Meta's answer carries `expires_in` (seconds); a missing one is the documented ~60 days.
    return {**short, **long, "expires_in": int(long.get("expires_in") or LONG_LIVED.total_seconds())}


async def verify(server: str, token: str) -> Connection:
    """The Instagram professional account linked to the user's Page (`GET /me/accounts` with
    `instagram_business_account`). Several: the first is connected and the others recorded in the state
    (`candidates`) for the operator's selection step."""
    async with new_client(server.rstrip("/"), headers={"Authorization": f"Bearer {token}"}) as client:
        pages = json_body(await call(client, "GET", "/me/accounts", network=NETWORK, classify=_classify, params={
            "fields": "id,name,instagram_business_account{id,username,name,profile_picture_url}", "limit": "100"}),
            NETWORK)
    found = [p["instagram_business_account"] for p in (pages.get("data") or []) if isinstance(p, dict)
             and isinstance(p.get("instagram_business_account"), dict) and p["instagram_business_account"].get("id")] \
        if isinstance(pages, dict) else []
    if not found:
        raise ProviderError("rejected", "no Instagram professional account on the user's Pages",
                            safe_reason="no Instagram professional account is linked to a Facebook Page you manage")
    ig = found[0]
    username = str(ig.get("username") or "")[:200]
    avatar = ig.get("profile_picture_url")
    return Connection(provider_account_id=str(ig["id"]), username=username or None,
                      display_name=(str(ig.get("name") or "") or username)[:200] or None, credentials={},
                      state={"username": username, "candidates": [
                          {"id": str(c["id"]), "username": str(c.get("username") or "")[:200]} for c in found[:50]]},
                      avatar_url=avatar if isinstance(avatar, str) else None)


# The permissions each operation needs: content publishing (`POST /{ig-user-id}/media`, `media_publish`, the
# container status) needs instagram_basic, instagram_content_publish and pages_read_engagement
# (https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/content-publishing#requirements);
# reading the account's media (`GET /{ig-user-id}/media`) instagram_basic and pages_read_engagement
# (https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media#reading);
# finding the account through the user's Pages (`GET /me/accounts`) pages_show_list
# (https://developers.facebook.com/docs/permissions#p). Instagram offers no deletion, so delete_post calls nothing.
_PUBLISH = ("instagram_basic", "instagram_content_publish", "pages_read_engagement")
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:GRID_POST": _PUBLISH,
    "publish:STORY": _PUBLISH,
    "publish:REEL": _PUBLISH,
    "find_post": ("instagram_basic", "pages_read_engagement"),
    "check": ("instagram_basic", "pages_show_list"),
    # the IG Media Insights reference's Facebook Login permissions
    "post_metrics": ("instagram_basic", "instagram_manage_insights", "pages_read_engagement"),
}


class InstagramProvider:
    name = "instagram"
    refresh_ahead = REFRESH_AHEAD  # the token tick's window for these accounts (60-day tokens)
    reconnect_notice_ahead = REFRESH_AHEAD  # ... and the reconnect notice when the exchange cannot extend them
    needed_scopes = NEEDED_SCOPES
    metrics_fields = SUPPORT["instagram"].fields

    def __init__(self, *, graph_url: str = GRAPH_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 processing_budget: float = PROCESSING_BUDGET, poll_min: float = POLL_MIN) -> None:
        self.graph_url, self.timeout = graph_url.rstrip("/"), timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.graph_url, headers={"Authorization": f"Bearer {_token(account)}"},
                          timeout=self.timeout)

    async def check(self, account: Account) -> CheckResult:
        """The permissions the user granted (`GET /me/permissions`) and the professional account itself
        (`GET /{ig-user-id}?fields=id,username`,
        https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user)."""
        result = recorded(account.credentials)
        try:
            user = self._user(account)
            client = self._client(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with client:
            await granted_permissions(client, result, NETWORK)
            found = await probe(result, call(client, "GET", f"/{user}", network=NETWORK, classify=_classify,
                                             params={"fields": "id,username"}))
        if found is not None:
            body = json_body(found, NETWORK)
            result.reachable = isinstance(body, dict) and str(body.get("id")) == user
            result.account = f"@{str(body.get('username') or user)[:200]}" if isinstance(body, dict) else None
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Instagram has no dynamic options ({kind})")

    @staticmethod
    def _user(account: Account) -> str:
        if not account.provider_account_id:
            raise ProviderError("reauth_required", "Instagram account has no account ID")
        return account.provider_account_id

    async def _container(self, client: httpx.AsyncClient, user: str, params: dict[str, Any]) -> str:
        return _id(json_body(await call(client, "POST", f"/{user}/media", network=NETWORK, classify=_classify,
                                        data=params), NETWORK), "container")

    async def _finished(self, client: httpx.AsyncClient, container: str) -> None:
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            body = json_body(await call(client, "GET", f"/{container}", network=NETWORK, classify=_classify,
                                        params={"fields": "status_code,status"}), NETWORK)
            code = body.get("status_code") if isinstance(body, dict) else None
            if code in ("FINISHED", "PUBLISHED"):
                return
            if code in ("ERROR", "EXPIRED"):
                detail = re.sub(r"[^A-Za-z0-9 .,:-]", "", str(body.get("status") or ""))[:120].strip()
                raise ProviderError("rejected", f"Instagram container {container} {code}",
                                    safe_reason="Instagram could not process the media" +
                                    (f": {detail}." if detail else "."))
            if code not in ("IN_PROGRESS", None):
                raise ProviderError("malformed", f"Instagram container status {str(code)[:40]}")
            if waited + wait > self.processing_budget:
                raise ProviderError("transient", f"Instagram container {container} still processing",
                                    safe_reason="Instagram is still processing the media; it is tried again later.")
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"Instagram container {container} still processing after {MAX_POLLS} reads",
                            safe_reason="Instagram is still processing the media; it is tried again later.")

    def _item(self, media: dict[str, Any], post_type: str) -> dict[str, Any]:
        is_video = str(media.get("content_type") or "").startswith("video/")
        if post_type == "STORY":
            return {"media_type": "STORIES", ("video_url" if is_video else "image_url"): media["url"]}
        if is_video:
            return {"media_type": "REELS", "video_url": media["url"]}
        return {"image_url": media["url"]}

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        user, settings = self._user(account), post.settings or {}
        post_type = post.post_type or "REEL"
        if not post.media:
            raise ProviderError("rejected", "Instagram post without media",
                                safe_reason="Instagram refused the post: every Instagram post needs media.")
        extra: dict[str, Any] = {}
        collaborators = [str(c)[:30] for c in settings.get("collaborators") or [] if c][:3]
        if collaborators and post_type != "STORY":
            extra["collaborators"] = ",".join(collaborators)
        async with self._client(account) as client:
            if len(post.media) > 1:
                children = []
                for m in post.media[:10]:
                    child = {**self._item(m, post_type), "is_carousel_item": "true"}
                    if child.get("media_type") == "REELS":
                        child["media_type"] = "VIDEO"
                    children.append(await self._container(client, user, child))
                for child in children:
                    await self._finished(client, child)
                params = {"media_type": "CAROUSEL", "children": ",".join(children), "caption": post.text, **extra}
            else:
                params = self._item(post.media[0], post_type)
                if post_type != "STORY":
                    params.update(caption=post.text, **extra)
                if params.get("media_type") == "REELS":
                    params["share_to_feed"] = "true"
                    if settings.get("trial_reel"):
                        strategy = "SS_PERFORMANCE" if settings.get("graduation_strategy") == "SS_PERFORMANCE" \
                            else "MANUAL"
                        params["trial_params"] = json.dumps({"graduation_strategy": strategy})
            container = await self._container(client, user, params)
            await self._finished(client, container)
            media_id = _id(json_body(await call(client, "POST", f"/{user}/media_publish", network=NETWORK,
                                                classify=_classify, data={"creation_id": container}), NETWORK),
                           "media_publish")
            try:
                found = json_body(await call(client, "GET", f"/{media_id}", network=NETWORK, classify=_classify,
                                             params={"fields": "permalink"}), NETWORK)
                permalink = found.get("permalink") if isinstance(found, dict) else None
            except ProviderError:
                permalink = None  # published; the link is a nicety
        return PostResult(publish_id=media_id, permalink_url=permalink if isinstance(permalink, str) else None)

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        if (post.post_type or "") == "STORY":
            return None
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", f"/{self._user(account)}/media", network=NETWORK,
                                        classify=_classify, params={
                                            "fields": "id,caption,timestamp,permalink,media_type",
                                            "since": str(int(since.timestamp())), "limit": str(RECENT_MAX)}), NETWORK)
        items = body.get("data") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "Instagram media list answered an unexpected shape")
        for item in items:
            if isinstance(item, dict) and item.get("id") and (item.get("caption") or "") == post.text:
                link = item.get("permalink")
                return PostResult(publish_id=str(item["id"]), permalink_url=link if isinstance(link, str) else None)
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """The media's product type, then its insights with the metrics that type offers (module docstring)."""
        from providers import meta_insights  # it imports graph_classify from here

        async with self._client(account) as client:
            media = await meta_insights.read(client, f"/{publish_id}", {"fields": "media_product_type"}, NETWORK)
            if media is None:
                return PostMetrics(gone=True)
            kind = str(media.get("media_product_type") or "FEED") if isinstance(media, dict) else "FEED"
            if kind == "STORY" and now - published_at > STORY_METRICS_FOR:
                return PostMetrics(gone=True)
            metrics = INSIGHT_METRICS.get(kind, INSIGHT_METRICS["FEED"])
            body = await meta_insights.read(client, f"/{publish_id}/insights", {"metric": ",".join(metrics)},
                                            NETWORK)
        if body is None:
            return PostMetrics(gone=True)
        return from_raw(meta_insights.insight_values(body, NETWORK), METRICS_MAP, scale=MS)

    async def delete_post(self, account: Account, publish_id: str) -> None:
        raise ProviderError("rejected", "Instagram media cannot be deleted through the API",
                            safe_reason="Instagram does not allow deleting posts through its API; delete it in the app.")

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD, needs_refresh_token=False):
            return None  # long-lived tokens are exchanged again with the token itself

        def refused(response: httpx.Response) -> ProviderError | None:
            error = _classify(response)
            if (error is not None and error.kind == "rejected") or response.status_code in (400, 401):
                return ProviderError("reauth_required", f"Instagram token exchange answered {response.status_code}",
                                     safe_reason="Instagram refused the authorisation; connect the account again.")
            return error

        async with new_client(self.graph_url, timeout=self.timeout) as client:
            token = json_body(await call(client, "GET", "/oauth/access_token", network=NETWORK, classify=refused,
                                         params={"grant_type": "fb_exchange_token",
                                                 "client_id": str(creds.get("client_id") or ""),
                                                 "client_secret": str(creds.get("client_secret") or ""),
                                                 "fb_exchange_token": _token(account)}), NETWORK)
        if not isinstance(token, dict) or not isinstance(token.get("access_token"), str) or not token["access_token"]:
            raise ProviderError("malformed", "Instagram token exchange answered without an access token")
        fresh = {**creds, "access_token": token["access_token"]}
        fresh.pop("expires_at", None)
        fresh["expires_at"] = iso(now + timedelta(seconds=int(token.get("expires_in") or 60 * 86400)))
        return fresh


async def granted_permissions(client: httpx.AsyncClient, result: CheckResult, network: str) -> None:
    """The permissions the user granted the app (`GET /me/permissions` with the user token,
    https://developers.facebook.com/docs/graph-api/reference/user/permissions/): those with status `granted`.
    Fills `result`; a failure is recorded on it."""
    body = await probe(result, call(client, "GET", "/me/permissions", network=network,
                                    classify=graph_classify(network)))
    if body is None:
        return
    try:
        answer = json_body(body, network)
    except ProviderError as exc:
        result.failed(exc)
        return
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        result.failed(ProviderError("malformed", f"{network} /me/permissions answered an unexpected shape"))
        return
    result.token_valid = True
    result.granted_scopes = tuple(str(p["permission"]) for p in data[:200] if isinstance(p, dict)
                                  and p.get("status") == "granted" and p.get("permission"))
    result.scopes_source = "introspected"
