"""Telegram and Discord: no local server exists, so these are request-level contract tests (respx) whose
assertions follow the networks' official references, plus the end-to-end publish through the in-process worker.

Facts asserted, transcribed from the references:
- Telegram Bot API (core.telegram.org/bots/api): methods at `POST {base}/bot<token>/<method>`; getMe, getChat
  {chat_id}; sendMessage {chat_id, text, disable_notification, link_preview_options: {is_disabled}}; sendPhoto /
  sendVideo as multipart with the file in `photo` / `video` and `caption`; sendMediaGroup as multipart with
  `media` a JSON array of InputMedia {type, media: "attach://<name>", caption on the first}; answers
  {"ok": true, "result": Message} or {"ok": false, "error_code", "description", "parameters": {"retry_after"}}.
- Discord (the official OpenAPI description, discord/discord-api-spec): `GET /webhooks/{id}/{token}` answers the
  webhook {id, type, channel_id, guild_id, name, ...}; `POST /webhooks/{id}/{token}` with query `wait` (boolean)
  answers 200 with the Message {id, channel_id, ...} when wait is true; the body (JSON, or multipart with
  `payload_json` and `files[n]`) has `content` (at most 2000 characters), `allowed_mentions` {parse: [...]} and
  `attachments` (at most 10); 429 answers a RatelimitedResponse {message, retry_after (seconds), global}.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import httpx
import pytest
import respx

from providers.base import Account, PostRequest, ProviderError
from providers.discord import DiscordProvider
from providers.telegram import TelegramProvider
from storage import vault
from storage.tables.integrations import Integration
from tests.mcp.support import envelope, in_memory
from tests.networks.support import (
    DISCORD_ENDPOINT,
    DISCORD_WEBHOOK,
    TELEGRAM_API,
    TELEGRAM_BOT_TOKEN,
    Flow,
    assert_no_secrets,
)
from tools.networks import connect as networks
from tools.publishing import worker as publishing

pytestmark = pytest.mark.anyio
BOT = f"{TELEGRAM_API}/bot{TELEGRAM_BOT_TOKEN}"
ASSET = "http://media.test/assets/ast_"
JPEG = b"\xff\xd8\xff\xe0" + b"0" * 64
CHAT = {"id": -1001234567890, "type": "channel", "title": "Acme news", "username": "acme_news"}
HOOK = {"id": "223344556677889900", "type": 1, "channel_id": "55555", "guild_id": "77777", "name": "Acme bot",
        "application_id": None, "avatar": None}


def ok(result) -> httpx.Response:
    return httpx.Response(200, json={"ok": True, "result": result})


def tg_account() -> Account:
    return Account(integration_id="int_t", platform="telegram", status="connected",
                   provider_account_id=str(CHAT["id"]), credentials={"bot_token": TELEGRAM_BOT_TOKEN},
                   state={"chat_id": str(CHAT["id"]), "chat_username": "acme_news", "api_base": TELEGRAM_API})


def dc_account() -> Account:
    return Account(integration_id="int_d", platform="discord", status="connected", provider_account_id=HOOK["id"],
                   credentials={"webhook_url": DISCORD_WEBHOOK},
                   state={"webhook_id": HOOK["id"], "channel_id": "55555", "guild_id": "77777"})


def media(n: int, kind: str = "image/jpeg") -> list[dict]:
    return [{"url": f"{ASSET}{i}", "content_type": kind} for i in range(n)]


def serve_assets(mock: respx.MockRouter) -> None:
    mock.get(url__startswith=ASSET).respond(200, content=JPEG, headers={"content-type": "image/jpeg"})


def multipart(request: httpx.Request) -> bytes:
    assert request.headers["content-type"].startswith("multipart/form-data; boundary=")
    return request.content


# --- Telegram ---------------------------------------------------------------------------------------------

async def test_telegram_text_photo_and_album_follow_the_bot_api() -> None:
    provider = TelegramProvider()
    with respx.mock(assert_all_called=True) as mock:
        serve_assets(mock)
        send = mock.post(f"{BOT}/sendMessage").mock(return_value=ok({"message_id": 41, "chat": CHAT}))
        photo = mock.post(f"{BOT}/sendPhoto").mock(return_value=ok({"message_id": 42, "chat": CHAT}))
        album = mock.post(f"{BOT}/sendMediaGroup").mock(return_value=ok([{"message_id": 43}, {"message_id": 44}]))

        text = await provider.publish(tg_account(), PostRequest(
            platform="telegram", post_type="TG_TEXT", text="Hello", settings={"disable_link_preview": True,
                                                                               "silent": True}))
        assert json.loads(send.calls.last.request.content) == {
            "chat_id": str(CHAT["id"]), "text": "Hello", "disable_notification": True,
            "link_preview_options": {"is_disabled": True}}
        assert (text.publish_id, text.permalink_url) == (f"{CHAT['id']}:41", "https://t.me/acme_news/41")

        one = await provider.publish(tg_account(), PostRequest(platform="telegram", post_type="TG_PHOTO",
                                                               text="Caption", media=media(1)))
        body = multipart(photo.calls.last.request)
        assert b'name="photo"; filename="file0.jpg"' in body and b'name="caption"' in body and b"Caption" in body
        assert one.publish_id.endswith(":42")

        many = await provider.publish(tg_account(), PostRequest(platform="telegram", post_type="TG_ALBUM",
                                                                text="Album", media=media(2)))
        body = multipart(album.calls.last.request)
        items = json.loads(body.split(b'name="media"\r\n\r\n')[1].split(b"\r\n--")[0])
        assert items == [{"type": "photo", "media": "attach://file0", "caption": "Album"},
                         {"type": "photo", "media": "attach://file1"}]
        assert b'name="file1"; filename="file1.jpg"' in body and many.permalink_url == "https://t.me/acme_news/43"


@pytest.mark.parametrize(("answer", "kind", "wait"), [
    (httpx.Response(429, json={"ok": False, "error_code": 429, "description": "Too Many Requests: retry after 7",
                                "parameters": {"retry_after": 7}}), "rate_limited", 7.0),
    (httpx.Response(403, json={"ok": False, "error_code": 403,
                               "description": "Forbidden: bot was kicked from the channel chat"}),
     "reauth_required", None),
    (httpx.Response(400, json={"ok": False, "error_code": 400, "description": "Bad Request: message is too long"}),
     "rejected", None),
    (httpx.Response(502, text="Bad Gateway"), "transient", None),
])
async def test_telegram_failures_are_classified_without_the_token(answer, kind, wait) -> None:
    with respx.mock() as mock:
        mock.post(f"{BOT}/sendMessage").mock(return_value=answer)
        with pytest.raises(ProviderError) as err:
            await TelegramProvider().publish(tg_account(), PostRequest(platform="telegram", post_type="TG_TEXT",
                                                                       text="x"))
    assert err.value.kind == kind and err.value.retry_after == wait
    assert TELEGRAM_BOT_TOKEN not in f"{err.value.message} {err.value.safe_reason}"
    if kind == "rejected":
        assert err.value.safe_reason == "Telegram refused the post: the text or caption is too long."


# --- Discord ----------------------------------------------------------------------------------------------

async def test_discord_webhook_waits_for_the_message_and_uploads_files() -> None:
    provider = DiscordProvider()
    with respx.mock(assert_all_called=True) as mock:
        serve_assets(mock)
        execute = mock.post(DISCORD_ENDPOINT, params={"wait": "true"}).mock(side_effect=[
            httpx.Response(200, json={"id": "9001", "channel_id": "55555", "content": "Hi"}),
            httpx.Response(200, json={"id": "9002", "channel_id": "55555", "content": "Pics"})])
        text = await provider.publish(dc_account(), PostRequest(platform="discord", post_type="DC_MESSAGE",
                                                                text="Hi @everyone"))
        assert json.loads(execute.calls[0].request.content) == {"content": "Hi @everyone",
                                                                "allowed_mentions": {"parse": []}}
        assert (text.publish_id, text.permalink_url) == ("9001", "https://discord.com/channels/77777/55555/9001")

        await provider.publish(dc_account(), PostRequest(platform="discord", post_type="DC_MESSAGE", text="Pics",
                                                         media=media(2)))
        body = multipart(execute.calls[1].request)
        payload = json.loads(body.split(b'name="payload_json"\r\n\r\n')[1].split(b"\r\n--")[0])
        assert payload["attachments"] == [{"id": "0", "filename": "file0.jpg"}, {"id": "1", "filename": "file1.jpg"}]  # snowflake ids
        assert b'name="files[0]"; filename="file0.jpg"' in body and b'name="files[1]"' in body

    with pytest.raises(ProviderError) as crosspost:
        await provider.publish(dc_account(), PostRequest(platform="discord", post_type="DC_ANNOUNCEMENT", text="x",
                                                         settings={"publish_to_followers": True}))
    assert crosspost.value.kind == "rejected" and "webhook cannot publish to following servers" in \
        (crosspost.value.safe_reason or "")

    with respx.mock() as mock:
        mock.post(DISCORD_ENDPOINT).respond(429, json={"message": "You are being rate limited.", "retry_after": 1.5,
                                                      "global": False})
        with pytest.raises(ProviderError) as limited:
            await provider.publish(dc_account(), PostRequest(platform="discord", post_type="DC_MESSAGE", text="x"))
    assert limited.value.kind == "rate_limited" and limited.value.retry_after == 1.5
    assert "planted-secret" not in limited.value.message


# --- connect refusals -------------------------------------------------------------------------------------

async def _count(env, platform: str) -> int:
    from sqlmodel import func, select

    async with env.db.session(write=False) as s:
        return (await s.exec(select(func.count()).select_from(Integration).where(
            Integration.platform == platform))).one()


async def test_connect_verifies_before_saving_and_refuses_bad_credentials(env) -> None:
    env.rt.settings.telegram_api_url = TELEGRAM_API
    flow = await Flow(env).setup()
    with respx.mock() as mock:
        mock.post(f"{BOT}/getMe").respond(401, json={"ok": False, "error_code": 401, "description": "Unauthorized"})
        with pytest.raises(networks.ConnectError, match="refused the credentials") as err:
            await networks.connect(env.rt, flow.brand.id, "telegram",
                                   {"bot_token": TELEGRAM_BOT_TOKEN, "chat_id": "@acme_news"})
        assert TELEGRAM_BOT_TOKEN not in str(err.value)
        mock.get(DISCORD_ENDPOINT).respond(404, json={"message": "Unknown Webhook", "code": 10015})
        with pytest.raises(networks.ConnectError, match="refused the credentials"):
            await networks.connect(env.rt, flow.brand.id, "discord", {"webhook_url": DISCORD_WEBHOOK})
    with pytest.raises(networks.ConnectError, match=r"must be an https://discord\.com"):
        await networks.connect(env.rt, flow.brand.id, "discord",
                               {"webhook_url": "http://169.254.169.254/api/webhooks/1/x"})
    assert await _count(env, "telegram") == await _count(env, "discord") == 0


# --- end to end: connect → draft → preflight → approved Schedule → worker ---------------------------------

async def test_telegram_and_discord_publish_end_to_end_and_never_echo_a_secret(env, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    env.rt.settings.telegram_api_url = TELEGRAM_API
    flow = await Flow(env).setup()
    with respx.mock(assert_all_called=False) as mock:
        mock.post(f"{BOT}/getMe").mock(return_value=ok({"id": 1, "is_bot": True, "username": "acme_bot"}))
        mock.post(f"{BOT}/getChat").mock(return_value=ok(CHAT))
        mock.get(DISCORD_ENDPOINT).respond(200, json={**HOOK, "token": "planted-secret-webhook-token_q7"})
        tg = await networks.connect(env.rt, flow.brand.id, "telegram",
                                    {"bot_token": TELEGRAM_BOT_TOKEN, "chat_id": "@acme_news"})
        dc = await networks.connect(env.rt, flow.brand.id, "discord", {"webhook_url": DISCORD_WEBHOOK})
    for i in (tg, dc):
        assert vault.is_sealed(i.credentials) and "planted" not in json.dumps(i.credentials)

    item = await flow.draft("Fresh beans today", telegram_settings={"silent": True},
                            discord_settings={"post_type": "DC_MESSAGE"})
    assert (await flow.preflight(item, [tg.id, dc.id]))["can_schedule"] is True
    schedule_id = await flow.schedule(item, [tg.id, dc.id])
    env.clock.advance(minutes=10)
    with respx.mock(assert_all_called=True) as mock:
        send = mock.post(f"{BOT}/sendMessage").mock(return_value=ok({"message_id": 77, "chat": CHAT}))
        hook = mock.post(DISCORD_ENDPOINT, params={"wait": "true"}).respond(
            200, json={"id": "123456789012345678", "channel_id": "55555"})
        assert await publishing.publish_due(env.rt, "w1") == 1
    assert json.loads(send.calls.last.request.content)["disable_notification"] is True
    assert json.loads(hook.calls.last.request.content)["content"] == "Fresh beans today"

    out = await flow.outcome(schedule_id)
    assert out["schedule"]["status"] == "published", out["schedule"]
    pubs = {p["integration_id"]: p for p in out["publications"]}
    assert pubs[tg.id]["publish_id"] == f"{CHAT['id']}:77" and pubs[dc.id]["publish_id"] == "123456789012345678"
    links = {h["permalink_url"] for h in out["history"]["items"]}
    assert {"https://t.me/acme_news/77", "https://discord.com/channels/77777/55555/123456789012345678"} <= links

    # A failed run shows the adapter's own safe sentence, not the fixed one and never the provider's words.
    item2 = await flow.draft("Second post", telegram_settings={})
    second = await flow.schedule(item2, [tg.id])
    env.clock.advance(minutes=10)
    with respx.mock() as mock:
        mock.post(f"{BOT}/sendMessage").respond(400, json={
            "ok": False, "error_code": 400, "description": f"Bad Request: chat not found {TELEGRAM_BOT_TOKEN}"})
        await publishing.publish_due(env.rt, "w1")
    failed = (await flow.outcome(second))
    texts = json.dumps(failed)
    assert "Telegram refused the post: the chat was not found." in texts and "Bad Request" not in texts

    async with in_memory(env, flow.key) as client:  # what an agent reads over MCP
        for name, args in (("list_targets", {"brand_id": flow.brand.id}),
                           ("list_history", {"brand_id": flow.brand.id}),
                           ("get_schedule_receipt", {"brand_id": flow.brand.id, "schedule_id": schedule_id})):
            flow.bodies.append(json.dumps(envelope(await client.call_tool(name, args))))
    assert_no_secrets([*flow.bodies, texts, caplog.text],
                      [TELEGRAM_BOT_TOKEN, DISCORD_WEBHOOK, "planted-secret-webhook-token_q7"])
    assert caplog.text  # the run did log


async def test_worker_stores_rotated_credentials_sealed(env) -> None:
    """An adapter that rotates credentials during a publish (Account.update_credentials): the worker stores
    them sealed in the settlement."""
    env.rt.settings.telegram_api_url = TELEGRAM_API
    flow = await Flow(env).setup()
    with respx.mock() as mock:
        mock.post(f"{BOT}/getMe").mock(return_value=ok({"id": 1, "is_bot": True}))
        mock.post(f"{BOT}/getChat").mock(return_value=ok(CHAT))
        tg = await networks.connect(env.rt, flow.brand.id, "telegram",
                                    {"bot_token": TELEGRAM_BOT_TOKEN, "chat_id": "@acme_news"})

    class Rotating(TelegramProvider):
        async def publish(self, account, post):
            account.update_credentials({**(account.credentials or {}), "bot_token": "999:rotated"})
            from providers.base import PostResult
            return PostResult(publish_id="1:1", permalink_url=None)

    env.rt.providers["telegram"] = Rotating()
    item = await flow.draft("Rotate", telegram_settings={})
    await flow.schedule(item, [tg.id])
    env.clock.advance(minutes=10)
    assert await publishing.publish_due(env.rt, "w1") == 1
    async with env.db.session(write=False) as s:
        row = await s.get(Integration, tg.id)
    assert row is not None and vault.is_sealed(row.credentials)
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None and creds["bot_token"] == "999:rotated"
    assert env.clock.now() - timedelta(hours=1) < row.updated_at
