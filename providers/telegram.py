"""Telegram: a bot posts to one channel or group (Bot API, https://core.telegram.org/bots/api).

- `sendMessage` for text (`link_preview_options.is_disabled` from `disable_link_preview`), `sendPhoto` /
  `sendVideo` for one file with a caption, `sendMediaGroup` for an album of 2-10 (the caption on the first item);
  `silent` is `disable_notification`. Files are uploaded as multipart (`attach://fileN` in albums).
- Every answer is `{"ok": bool, "result" | "description", "error_code", "parameters": {"retry_after"}}`.
- The bot token is part of every URL (`/bot<token>/<method>`), so no URL or path reaches an error message or a
  log line here: failures are classified from the JSON answer alone (providers/http.py also hides request
  paths from httpx's own log).
- Telegram does not deduplicate: `find_post` cannot find an earlier message. The worker records the returned
  message ID in the transaction that settles the attempt; a crash between Telegram's answer and that commit
  leaves the attempt unknown and a retry sends the message again (docs/networks.md).

Account: credentials `{"bot_token"}`; state `{"chat_id", "chat_username", "api_base"}` (the Bot API base URL,
from SOCIALPUB_TELEGRAM_API_URL at connect time, so tests and local Bot API servers work).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

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
)
from providers.http import call, download, file_name, new_client, retry_after

NETWORK = "Telegram"
DEFAULT_API = "https://api.telegram.org"
UPLOAD_MAX = 50 * 1024 * 1024  # bots upload files up to 50 MB


def _classify(response: httpx.Response) -> ProviderError:
    """Every non-2xx answer, from its JSON only (the request URL carries the token)."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    code = int(body.get("error_code") or response.status_code)
    description = str(body.get("description") or "").lower()
    where = f"Telegram answered {code}"
    if code == 429:
        wait = (body.get("parameters") or {}).get("retry_after")
        return ProviderError("rate_limited", where,
                             retry_after=float(wait) if isinstance(wait, int | float) else retry_after(response))
    if code == 401 or (code == 404 and description in ("not found", "")):  # a bad token in the URL
        return ProviderError("reauth_required", where, safe_reason="Telegram no longer accepts the bot's token; "
                                                                   "reconnect the account with a new token.")
    if code == 403:
        return ProviderError("reauth_required", where, safe_reason="The Telegram bot was removed from the chat or "
                                                                   "lost its right to post there; add it again.")
    if code >= 500:
        return ProviderError("transient", where)
    if "chat not found" in description:
        reason = "the chat was not found"
    elif "too long" in description:
        reason = "the text or caption is too long"
    elif "wrong file" in description or "failed to get http url content" in description or "photo" in description:
        reason = "a media file was not accepted"
    else:
        reason = "the request was not accepted"
    return ProviderError("rejected", where, safe_reason=f"Telegram refused the post: {reason}.")


def _result(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        raise ProviderError("malformed", "Telegram answered a body that is not JSON") from None
    if not isinstance(body, dict) or body.get("ok") is not True:
        raise _classify(response)
    return body.get("result")


def _base(account_or_base: Account | str) -> str:
    if isinstance(account_or_base, str):
        return account_or_base.rstrip("/")
    return str((account_or_base.state or {}).get("api_base") or DEFAULT_API).rstrip("/")


def _bot_token(account: Account) -> str:
    token = (account.credentials or {}).get("bot_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Telegram account has no bot token")
    return token


async def _method(client: httpx.AsyncClient, token: str, method: str, **kwargs: Any) -> Any:
    return _result(await call(client, "POST", f"/bot{token}/{method}", network=NETWORK, classify=_classify,
                              **kwargs))


async def verify(api_base: str, bot_token: str, chat_id: str) -> Connection:
    """getMe (the token works) and getChat (the bot can see the chat): what connect stores."""
    async with new_client(_base(api_base)) as client:
        me = await _method(client, bot_token, "getMe")
        chat = await _method(client, bot_token, "getChat", json={"chat_id": chat_id})
    if not isinstance(me, dict) or not isinstance(chat, dict) or "id" not in chat:
        raise ProviderError("malformed", "Telegram getMe/getChat answered without IDs")
    title = str(chat.get("title") or chat.get("username") or chat.get("first_name") or chat["id"])
    username = chat.get("username") if isinstance(chat.get("username"), str) else None
    return Connection(
        provider_account_id=str(chat["id"]), username=username, display_name=title[:200],
        credentials={"bot_token": bot_token},
        state={"chat_id": str(chat["id"]), "chat_username": username, "chat_type": chat.get("type"),
               "bot_username": me.get("username"), "api_base": _base(api_base)})


# A bot token carries no OAuth scopes: what the bot may do is its membership and rights in the chat, which `check`
# reads with getChatMember (https://core.telegram.org/bots/api#getchatmember,
# https://core.telegram.org/bots/api#chatmemberadministrator: a channel needs `can_post_messages`).
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {}


class TelegramProvider:
    name = "telegram"
    refresh_ahead = None  # bot tokens do not expire
    needed_scopes = NEEDED_SCOPES

    async def check(self, account: Account) -> CheckResult:
        """getMe (the bot token works), getChat (the chat is there) and getChatMember for the bot (it may post:
        a member or administrator of a group, an administrator with `can_post_messages` in a channel). Read-only
        Bot API methods (https://core.telegram.org/bots/api#getme, #getchat, #getchatmember)."""
        result = CheckResult(scopes_source="not_applicable")
        chat_id = (account.state or {}).get("chat_id") or account.provider_account_id
        try:
            token = _bot_token(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        async with new_client(_base(account)) as client:
            me = await probe(result, _method(client, token, "getMe"))
            if not isinstance(me, dict) or not me.get("id"):
                return result
            result.token_valid = True
            chat = await probe(result, _method(client, token, "getChat", json={"chat_id": str(chat_id)}))
            if not isinstance(chat, dict):
                result.reachable = False
                return result
            member = await probe(result, _method(client, token, "getChatMember",
                                                 json={"chat_id": str(chat_id), "user_id": me["id"]}))
        title = chat.get("title") or chat.get("username") or chat.get("id")
        result.account = str(title)[:200]
        rights = member if isinstance(member, dict) else {}
        status = rights.get("status")
        if chat.get("type") == "channel":
            allowed = status == "creator" or (status == "administrator" and rights.get("can_post_messages") is True)
        else:
            allowed = status in ("creator", "administrator", "member") or \
                (status == "restricted" and rights.get("can_send_messages") is True)
        result.reachable = allowed
        if not allowed and status is not None:
            result.notes.append(f"The bot is {status} in the chat and may not post there"
                                + (" (a channel needs an administrator with the right to post messages)."
                                   if chat.get("type") == "channel" else "."))
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Telegram has no dynamic options ({kind})")

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        state = account.state or {}
        chat_id = state.get("chat_id") or account.provider_account_id
        if not chat_id:
            raise ProviderError("reauth_required", "Telegram account has no chat ID")
        settings = post.settings or {}
        common: dict[str, Any] = {"chat_id": str(chat_id), "disable_notification": bool(settings.get("silent"))}
        token = _bot_token(account)
        async with new_client(_base(account)) as client:
            if not post.media:
                body = {**common, "text": post.text,
                        "link_preview_options": {"is_disabled": bool(settings.get("disable_link_preview"))}}
                message = await _method(client, token, "sendMessage", json=body)
            elif len(post.media) == 1:
                media = post.media[0]
                field = "video" if str(media.get("content_type", "")).startswith("video/") else "photo"
                data = await download(str(media["url"]), NETWORK, max_bytes=UPLOAD_MAX)
                files = {field: (file_name(media, 0), data, str(media.get("content_type")))}
                form = {**{k: str(v).lower() if isinstance(v, bool) else v for k, v in common.items()},
                        "caption": post.text}
                message = await _method(client, token, "sendVideo" if field == "video" else "sendPhoto",
                                        data=form, files=files)
            else:
                items, files = [], {}
                for i, media in enumerate(post.media):
                    kind = "video" if str(media.get("content_type", "")).startswith("video/") else "photo"
                    data = await download(str(media["url"]), NETWORK, max_bytes=UPLOAD_MAX)
                    files[f"file{i}"] = (file_name(media, i), data, str(media.get("content_type")))
                    item = {"type": kind, "media": f"attach://file{i}"}
                    if i == 0 and post.text:
                        item["caption"] = post.text
                    items.append(item)
                form = {"chat_id": str(chat_id), "media": json.dumps(items),
                        "disable_notification": str(common["disable_notification"]).lower()}
                messages = await _method(client, token, "sendMediaGroup", data=form, files=files)
                message = messages[0] if isinstance(messages, list) and messages else None
        if not isinstance(message, dict) or "message_id" not in message:
            raise ProviderError("malformed", "Telegram answered without a message ID")
        message_id = str(message["message_id"])
        username = state.get("chat_username")
        permalink = f"https://t.me/{username}/{message_id}" if username else None
        return PostResult(publish_id=f"{chat_id}:{message_id}", permalink_url=permalink)

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # Telegram keeps no idempotency keys and bots cannot search a chat's history

    async def delete_post(self, account: Account, publish_id: str) -> None:
        chat_id, _, message_id = publish_id.rpartition(":")
        async with new_client(_base(account)) as client:
            await _method(client, _bot_token(account), "deleteMessage",
                          json={"chat_id": chat_id, "message_id": int(message_id)})

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        return None  # bot tokens do not expire
