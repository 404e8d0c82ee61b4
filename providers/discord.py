"""Discord: an incoming webhook posts to one channel (https://discord.com/developers/docs/resources/webhook).

- `POST {webhook_url}?wait=true` so Discord answers the created message (with `wait=false` it answers 204 and no
  ID). Text only: JSON `{"content", "allowed_mentions": {"parse": []}}`; with files: multipart with
  `payload_json` and `files[n]`, each listed in `attachments` (`{"id": n, "filename"}`).
- `content` is at most 2,000 characters and a message takes at most 10 attachments (the official OpenAPI
  description, IncomingWebhookRequestPartial); mentions are never parsed (no @everyone from a draft).
- `publish_to_followers` (crossposting to following servers) needs a bot with Manage Messages on an
  announcement channel; a webhook cannot do it, so a post asking for it is refused with that sentence.
- Discord does not deduplicate webhook messages: `find_post` cannot find an earlier message. The worker records
  the returned message ID in the transaction that settles the attempt; a crash between Discord's answer and
  that commit leaves the attempt unknown and a retry posts again (docs/networks.md).
- The webhook URL is the credential (its last path segment is the token): it is never logged or shown.

Account: credentials `{"webhook_url"}`; state `{"webhook_id", "channel_id", "guild_id", "name"}`.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import httpx

from providers.base import Account, CheckResult, Connection, Options, PostRequest, PostResult, ProviderError, probe
from providers.http import call, download, file_name, json_body, new_client, retry_after

NETWORK = "Discord"
UPLOAD_MAX = 25 * 1024 * 1024
WEBHOOK_PATH = re.compile(r"^/api(?:/v\d+)?/webhooks/(\d{1,25})/([A-Za-z0-9_.-]{1,200})/?$")
CONTENT_MAX = 2000


def _classify(response: httpx.Response) -> ProviderError:
    """Every non-2xx answer, without the URL (it holds the webhook token)."""
    status = response.status_code
    where = f"Discord answered {status}"
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    if status == 429:
        wait = body.get("retry_after")
        return ProviderError("rate_limited", where,
                             retry_after=float(wait) if isinstance(wait, int | float) else retry_after(response))
    if status in (401, 404):  # the webhook was deleted or its token changed
        return ProviderError("reauth_required", where, safe_reason="The Discord webhook no longer exists or its "
                                                                   "token changed; connect a new webhook URL.")
    if status == 403:
        return ProviderError("rejected", where, safe_reason="Discord refused the post: the webhook lacks permission "
                                                            "in its channel.")
    if status >= 500:
        return ProviderError("transient", where)
    reason = "the message is too long" if "content" in json.dumps(body.get("errors") or {}) else \
        "the message was not accepted"
    return ProviderError("rejected", where, safe_reason=f"Discord refused the post: {reason}.")


def parse_webhook_url(url: str, allowed_hosts: tuple[str, ...] = ()) -> httpx.URL:
    """A Discord webhook URL: https on discord.com (or a host the operator allowed, for tests and proxies)."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        raise ValueError("the webhook URL is not a URL") from None
    host = (parsed.host or "").lower()
    official = host in ("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com")
    if not (official and parsed.scheme == "https") and host not in allowed_hosts:
        raise ValueError("the webhook URL must be an https://discord.com/api/webhooks/... address")
    if parsed.userinfo or not WEBHOOK_PATH.match(parsed.path):
        raise ValueError("the webhook URL must look like https://discord.com/api/webhooks/<id>/<token>")
    return parsed.copy_with(query=None, fragment=None)


def _webhook(account: Account) -> str:
    url = (account.credentials or {}).get("webhook_url")
    if not isinstance(url, str) or not url:
        raise ProviderError("reauth_required", "Discord account has no webhook URL")
    return url.rstrip("/")


async def verify(webhook_url: str) -> Connection:
    """A GET of the webhook (Get Webhook with Token): it exists and the token is right."""
    async with new_client() as client:
        hook = json_body(await call(client, "GET", webhook_url, network=NETWORK, classify=_classify), NETWORK)
    if not isinstance(hook, dict) or not hook.get("id") or not hook.get("channel_id"):
        raise ProviderError("malformed", "Discord webhook answered without IDs")
    name = str(hook.get("name") or "Discord webhook")
    return Connection(
        provider_account_id=str(hook["id"]), username=name[:200], display_name=name[:200],
        credentials={"webhook_url": webhook_url},
        state={"webhook_id": str(hook["id"]), "channel_id": str(hook["channel_id"]),
               "guild_id": str(hook["guild_id"]) if hook.get("guild_id") else None, "name": name})


# A webhook URL carries no OAuth scopes: it posts to its one channel (https://discord.com/developers/docs/resources/webhook).
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {}


class DiscordProvider:
    name = "discord"
    needed_scopes = NEEDED_SCOPES

    async def check(self, account: Account) -> CheckResult:
        """Get Webhook with Token (`GET {webhook_url}`, https://discord.com/developers/docs/resources/webhook#get-webhook-with-token):
        it still exists (401/404 mean deleted or a changed token) and still points at the connected channel."""
        result = CheckResult(scopes_source="not_applicable")
        try:
            url = _webhook(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with new_client() as client:
            found = await probe(result, call(client, "GET", url, network=NETWORK, classify=_classify))
        if found is None:
            return result
        try:
            hook = json_body(found, NETWORK)
        except ProviderError as exc:
            result.failed(exc)
            return result
        result.token_valid = isinstance(hook, dict) and bool(hook.get("id"))
        channel = (account.state or {}).get("channel_id")
        result.reachable = result.token_valid and (not channel or str(hook.get("channel_id")) == str(channel))
        result.account = str(hook.get("name") or "Discord webhook")[:200] if isinstance(hook, dict) else None
        if result.token_valid and not result.reachable:
            result.notes.append("The webhook now posts to another channel than the one connected.")
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Discord has no dynamic options ({kind})")

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        settings = post.settings or {}
        if settings.get("publish_to_followers"):
            raise ProviderError("rejected", "publish_to_followers asked of a webhook",
                                safe_reason="Discord refused the post: a webhook cannot publish to following "
                                            "servers; turn publish_to_followers off.")
        payload: dict[str, Any] = {"content": post.text[:CONTENT_MAX], "allowed_mentions": {"parse": []}}
        url = _webhook(account)
        async with new_client() as client:
            if post.media:
                files, attachments = {}, []
                for i, media in enumerate(post.media[:10]):
                    name = file_name(media, i)
                    data = await download(str(media["url"]), NETWORK, max_bytes=UPLOAD_MAX)
                    files[f"files[{i}]"] = (name, data, str(media.get("content_type")))
                    attachments.append({"id": i, "filename": name})
                payload["attachments"] = attachments
                response = await call(client, "POST", url, params={"wait": "true"}, network=NETWORK,
                                      classify=_classify, data={"payload_json": json.dumps(payload)}, files=files)
            else:
                response = await call(client, "POST", url, params={"wait": "true"}, network=NETWORK,
                                      classify=_classify, json=payload)
        message = json_body(response, NETWORK)
        if not isinstance(message, dict) or not message.get("id"):
            raise ProviderError("malformed", "Discord answered without a message ID")
        state = account.state or {}
        guild, channel = state.get("guild_id"), message.get("channel_id") or state.get("channel_id")
        permalink = f"https://discord.com/channels/{guild}/{channel}/{message['id']}" if guild and channel else None
        return PostResult(publish_id=str(message["id"]), permalink_url=permalink)

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # webhooks keep no idempotency keys and cannot list a channel's messages

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with new_client() as client:
            try:
                await call(client, "DELETE", f"{_webhook(account)}/messages/{publish_id}", network=NETWORK,
                           classify=_classify)
            except ProviderError as exc:
                if "404" not in exc.message:
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        return None  # webhook URLs do not expire
