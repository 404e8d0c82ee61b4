"""Mastodon: statuses on the account's own instance (REST API, OAuth 2.0 bearer token).

- Media: `POST /api/v2/media` (multipart). 200 means processed; 202 means processing, so the adapter polls
  `GET /api/v1/media/{id}` until it answers 200 with a URL (bounded), then attaches it.
- Status: `POST /api/v1/statuses` with the target's idempotency token as the `Idempotency-Key` header (thread
  part n uses `<token>-n`): Mastodon answers a repeated key with the status it already made (it keeps keys for
  an hour), so a retry after a lost answer does not post twice. `thread_parts` are replies, each to the one before.
- Permalink: the status's `url`. `publish_id`: the first status's ID.
- Errors: 422 is a refusal with our own sentence; 401 reauth; 429 rate limited (`Retry-After` / `X-RateLimit-Reset`).

The account's state holds its instance (`instance`), its text limit (`max_characters`, read at connect time from
`configuration.statuses.max_characters`) and its handle; the credentials hold the access token and, where the
instance issued them, a refresh token and expiry plus the app's client credentials to refresh with.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx

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
from providers.http import DEFAULT_TIMEOUT, call, download, file_name, json_body, new_client
from providers.metrics import SUPPORT, PostMetrics, from_raw
from providers.oauth import refresh_due, refresh_token
from schemas.time import iso

NETWORK = "Mastodon"
DEFAULT_MAX_CHARACTERS = 500
MEDIA_POLLS = 30  # processing checks per file before giving up (transient: the worker retries later)
MEDIA_POLL_SECONDS = 1.0
REFRESH_AHEAD = timedelta(minutes=15)
log = logging.getLogger("socialpub.providers.mastodon")


def _classify(response: httpx.Response) -> ProviderError | None:
    """422 is Mastodon's validation refusal: say what kind of refusal, in our words, never its body."""
    if response.status_code != 422:
        return None
    try:
        error = str(response.json().get("error", ""))
    except (ValueError, AttributeError):
        error = ""
    lower = error.lower()
    if "character limit" in lower or "too long" in lower:
        reason = "the text is longer than the instance allows"
    elif "media" in lower or "attachment" in lower:
        reason = "an attachment was not accepted"
    elif "language" in lower:
        reason = "the language code is not accepted"
    else:
        reason = "it failed the instance's validation"
    return ProviderError("rejected", f"Mastodon answered 422 to {response.request.url.path}",
                         safe_reason=f"Mastodon refused the post: {reason}.")


def instance_of(account: Account) -> str:
    instance = (account.state or {}).get("instance")
    if not isinstance(instance, str) or not instance:
        raise ProviderError("reauth_required", "Mastodon account has no instance",
                            safe_reason="The Mastodon account has no instance on record; reconnect it.")
    return instance.rstrip("/")


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Mastodon account has no access token")
    return token


def _client(instance: str, token: str, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> httpx.AsyncClient:
    return new_client(instance, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)


async def verify(instance: str, token: str) -> Connection:
    """The account a token belongs to, with the instance's text limit (what connect stores)."""
    instance = instance.rstrip("/")
    async with _client(instance, token) as client:
        me = json_body(await call(client, "GET", "/api/v1/accounts/verify_credentials", network=NETWORK), NETWORK)
        max_characters = DEFAULT_MAX_CHARACTERS
        try:
            info = json_body(await call(client, "GET", "/api/v2/instance", network=NETWORK), NETWORK)
            found = ((info.get("configuration") or {}).get("statuses") or {}).get("max_characters")
            if isinstance(found, int) and 0 < found <= 100_000:
                max_characters = found
        except ProviderError as exc:  # an older instance without v2: keep the default limit
            log.info("instance limits unavailable (%s); using %d", exc.message, max_characters)
    if not isinstance(me, dict) or not me.get("id"):
        raise ProviderError("malformed", "Mastodon verify_credentials answered without an account ID")
    handle = str(me.get("acct") or me.get("username") or "")
    return Connection(
        provider_account_id=str(me["id"]), username=handle[:200] or None,
        display_name=(str(me.get("display_name") or "") or handle)[:200] or None,
        credentials={"access_token": token},
        state={"instance": instance, "max_characters": max_characters, "handle": handle},
        avatar_url=me.get("avatar") if isinstance(me.get("avatar"), str) else None)


# The scopes each operation needs (https://docs.joinmastodon.org/api/oauth-scopes/; each method's OAuth line):
# `POST /api/v1/statuses` and `DELETE /api/v1/statuses/:id` write:statuses
# (https://docs.joinmastodon.org/methods/statuses/), `POST /api/v2/media` and `GET /api/v1/media/:id` write:media
# (https://docs.joinmastodon.org/methods/media/), `GET /api/v1/accounts/verify_credentials` read:accounts
# (https://docs.joinmastodon.org/methods/accounts/#verify_credentials). The broad `write` and `read` scopes
# cover their granular children (`covers`).
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:MA_POST": ("write:statuses", "write:media"),
    "delete_post": ("write:statuses",),
    "check": ("read:accounts",),
    # GET /api/v1/statuses/:id is public for a public status; read:statuses only for a private one
    # (https://docs.joinmastodon.org/methods/statuses/#get), which socialpub never posts.
    "post_metrics": (),
}


class MastodonProvider:
    name = "mastodon"
    metrics_fields = SUPPORT["mastodon"].fields
    refresh_ahead = REFRESH_AHEAD  # instances that expire tokens: refreshed this far ahead
    needed_scopes = NEEDED_SCOPES

    def __init__(self, *, poll_seconds: float = MEDIA_POLL_SECONDS, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> None:
        self.poll_seconds, self.timeout = poll_seconds, timeout

    @staticmethod
    def covers(granted: set[str], needed: str) -> bool:
        """Mastodon's scope hierarchy: `write` grants every `write:*`, `read` every `read:*`."""
        return needed in granted or needed.split(":", 1)[0] in granted

    async def check(self, account: Account) -> CheckResult:
        """`GET /api/v1/accounts/verify_credentials` (the token works, whose account) and, when no token response
        named the scopes, the app's (`GET /api/v1/apps/verify_credentials`, `scopes` since Mastodon 4.3,
        https://docs.joinmastodon.org/methods/apps/#verify_credentials): a token never holds more than its app's."""
        result = recorded(account.credentials)
        try:
            client = _client(instance_of(account), _token(account), self.timeout)
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with client:
            me = await probe(result, call(client, "GET", "/api/v1/accounts/verify_credentials", network=NETWORK,
                                          classify=_classify))
            if me is None:
                return result
            body = json_body(me, NETWORK)
            result.token_valid = True
            result.reachable = isinstance(body, dict) and str(body.get("id")) == account.provider_account_id
            result.account = f"@{str(body.get('acct') or body.get('username'))[:200]}" if isinstance(body, dict) \
                else None
            if result.granted_scopes is None:
                try:
                    app = json_body(await call(client, "GET", "/api/v1/apps/verify_credentials", network=NETWORK),
                                    NETWORK)
                except ProviderError:
                    app = None  # an older instance, or a token without an app: the scopes stay unknown
                if isinstance(app, dict) and isinstance(app.get("scopes"), list):
                    result.granted_scopes = tuple(str(s) for s in app["scopes"][:50])
                    result.scopes_source = "introspected"
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Mastodon has no dynamic options ({kind})")

    async def _upload(self, client: httpx.AsyncClient, media: dict[str, Any], index: int) -> str:
        data = await download(str(media["url"]), NETWORK)
        files = {"file": (file_name(media, index), data, str(media.get("content_type") or "application/octet-stream"))}
        response = await call(client, "POST", "/api/v2/media", network=NETWORK, classify=_classify, files=files)
        body = json_body(response, NETWORK)
        media_id = str(body.get("id") or "") if isinstance(body, dict) else ""
        if not media_id:
            raise ProviderError("malformed", "Mastodon media upload answered without an ID")
        if response.status_code == 200 and body.get("url"):
            return media_id
        for _ in range(MEDIA_POLLS):  # 202: still processing
            await anyio.sleep(self.poll_seconds)
            polled = await call(client, "GET", f"/api/v1/media/{media_id}", network=NETWORK)
            found = json_body(polled, NETWORK)
            if polled.status_code == 200 and isinstance(found, dict) and found.get("url"):
                return media_id
        raise ProviderError("transient", "Mastodon media still processing after polling")

    async def _status(self, client: httpx.AsyncClient, body: dict[str, Any], key: str) -> dict[str, Any]:
        response = await call(client, "POST", "/api/v1/statuses", network=NETWORK, classify=_classify, json=body,
                              headers={"Idempotency-Key": key})
        status = json_body(response, NETWORK)
        if not isinstance(status, dict) or not status.get("id"):
            raise ProviderError("malformed", "Mastodon status answered without an ID")
        return status

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        settings = post.settings or {}
        common: dict[str, Any] = {"visibility": settings.get("visibility") or "public"}
        if settings.get("language"):
            common["language"] = settings["language"]
        async with _client(instance_of(account), _token(account), self.timeout) as client:
            media_ids = [await self._upload(client, m, i) for i, m in enumerate(post.media)]
            body: dict[str, Any] = {**common, "status": post.text, "media_ids": media_ids,
                                    "sensitive": bool(settings.get("sensitive"))}
            if settings.get("spoiler_text"):
                body["spoiler_text"] = settings["spoiler_text"]
            first = await self._status(client, body, post.idempotency_token)
            parent = str(first["id"])
            for n, part in enumerate(post.thread_parts, start=1):
                part_media = [await self._upload(client, m, i) for i, m in enumerate(part.get("media") or [])]
                reply = {**common, "status": part.get("text") or "", "media_ids": part_media,
                         "in_reply_to_id": parent, "sensitive": bool(settings.get("sensitive"))}
                if settings.get("spoiler_text"):
                    reply["spoiler_text"] = settings["spoiler_text"]
                parent = str((await self._status(client, reply, f"{post.idempotency_token}-{n}"))["id"])
        url = first.get("url") or first.get("uri")
        return PostResult(publish_id=str(first["id"]), permalink_url=url if isinstance(url, str) else None)

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        # Mastodon cannot be asked for a status by its Idempotency-Key; publishing again with the same key
        # returns the status it made (within the hour it keeps keys), which is the lookup.
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """`GET /api/v1/statuses/:id` (https://docs.joinmastodon.org/methods/statuses/#get): the Status entity's
        favourites_count, reblogs_count and replies_count. 404: the status is gone."""
        try:
            async with _client(instance_of(account), _token(account)) as client:
                status = json_body(await call(client, "GET", f"/api/v1/statuses/{publish_id}", network=NETWORK),
                                   NETWORK)
        except ProviderError as exc:
            if "answered 404" in exc.message:
                return PostMetrics(gone=True)
            raise
        if not isinstance(status, dict):
            raise ProviderError("malformed", "Mastodon status answered an unexpected shape")
        return from_raw({k: status.get(k) for k in ("favourites_count", "reblogs_count", "replies_count")},
                        {"favourites_count": "likes", "reblogs_count": "reposts", "replies_count": "replies"})

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with _client(instance_of(account), _token(account)) as client:
            try:
                await call(client, "DELETE", f"/api/v1/statuses/{publish_id}", network=NETWORK)
            except ProviderError as exc:
                if "404" not in exc.message:  # already gone is done
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if not refresh_due(creds, now, REFRESH_AHEAD):
            return None  # Mastodon tokens do not expire unless the instance says so
        refresh = creds["refresh_token"]
        token = await refresh_token(f"{instance_of(account)}/oauth/token", str(creds.get("client_id") or ""),
                                    str(creds.get("client_secret") or ""), str(refresh), network=NETWORK)
        fresh = {**creds, "access_token": token["access_token"]}
        if token.get("refresh_token"):
            fresh["refresh_token"] = token["refresh_token"]  # never drop a stored refresh token
        fresh.pop("expires_at", None)
        if token.get("expires_in"):
            fresh["expires_at"] = iso(now + timedelta(seconds=int(token["expires_in"])))
        return fresh


async def register_app(instance: str, redirect_uri: str, scopes: tuple[str, ...], website: str) -> tuple[str, str]:
    """Register this service as an OAuth app on an instance (`POST /api/v1/apps`): (client_id, client_secret)."""
    async with new_client(instance.rstrip("/")) as client:
        app = json_body(await call(client, "POST", "/api/v1/apps", network=NETWORK, data={
            "client_name": "socialpub", "redirect_uris": redirect_uri, "scopes": " ".join(scopes),
            "website": website}), NETWORK)
    if not isinstance(app, dict) or not app.get("client_id") or not app.get("client_secret"):
        raise ProviderError("malformed", "Mastodon app registration answered without client credentials")
    return str(app["client_id"]), str(app["client_secret"])
