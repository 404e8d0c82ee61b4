"""BlueskyProvider against a real PDS (`.ci/pds`): connect, facets, images, threads, exactly-once, sessions."""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from PIL import Image

from providers.base import Account, PostRequest, ProviderError
from providers.bluesky import BlueskyProvider, classify, connect
from providers.bluesky_text import record_key
from tests.media.support import video_bytes
from tests.networks.conftest import MediaServer
from tests.networks.pds import BlueskyAccount, Pds

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("loopback_allowed")]  # the PDS is on 127.0.0.1
GARBAGE_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkaWQ6cGxjOm5vYm9keSJ9.c2lnbmF0dXJl"


class CountingTransport(httpx.AsyncBaseTransport):
    """The real network, with the XRPC methods called counted (to prove one refresh, no extra sessions)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.calls: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls.append(request.url.path.removeprefix("/xrpc/"))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _account(who: BlueskyAccount) -> Account:
    made = await connect(who.service, who.handle, who.app_password)
    return Account(integration_id="int_bsky", platform="bluesky", status="connected",
                   provider_account_id=made.provider_account_id, credentials=made.credentials, state=made.state)


def _creds(account: Account) -> dict[str, Any]:
    assert account.credentials is not None  # a connected Bluesky account always has its session
    return account.credentials


def _post(text: str, token: str = "sp_token_1", **kwargs: Any) -> PostRequest:
    return PostRequest(platform="bluesky", post_type=kwargs.pop("post_type", "BS_TEXT"), text=text,
                       idempotency_token=token, **kwargs)


def _records(pds: Pds, did: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{pds.url}/xrpc/com.atproto.repo.listRecords",
                       params={"repo": did, "collection": "app.bsky.feed.post", "limit": 100})
    answer.raise_for_status()
    return answer.json()["records"]


def _record(pds: Pds, uri: str) -> dict[str, Any]:
    did, _, rkey = uri.removeprefix("at://").partition("/app.bsky.feed.post/")
    answer = httpx.get(f"{pds.url}/xrpc/com.atproto.repo.getRecord",
                       params={"repo": did, "collection": "app.bsky.feed.post", "rkey": rkey})
    answer.raise_for_status()
    return answer.json()


def _assert_no_secret(exc: ProviderError, *secrets: str) -> None:
    for text in (str(exc), repr(exc), exc.message, exc.safe_reason or ""):
        for secret in secrets:
            assert secret not in text


def _png(width: int, height: int, *, noise: bool = False) -> bytes:
    out = io.BytesIO()
    if noise:  # incompressible, to exceed the size limit
        import os
        Image.frombytes("RGB", (width, height), os.urandom(width * height * 3)).save(out, "PNG")
    else:
        Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


# --- connect -----------------------------------------------------------------------------------------------

async def test_connect_creates_a_session(pds: Pds, bsky_account: BlueskyAccount) -> None:
    made = await connect(pds.url + "/", "@" + bsky_account.handle, bsky_account.app_password)
    assert made.provider_account_id == bsky_account.did and made.username == bsky_account.handle
    creds = made.credentials
    assert creds["service"] == pds.url and creds["app_password"] == bsky_account.app_password
    assert creds["access_jwt"] and creds["refresh_jwt"]
    assert creds["access_expires_at"] > time.time() and creds["refresh_expires_at"] > creds["access_expires_at"]


async def test_connect_refuses_a_wrong_password_and_an_unreachable_service(pds: Pds,
                                                                           bsky_account: BlueskyAccount) -> None:
    with pytest.raises(ProviderError) as info:
        await connect(pds.url, bsky_account.handle, "wrong-pass-word-1234")
    assert info.value.kind == "rejected"
    assert "refused the handle or app password" in (info.value.safe_reason or "")
    _assert_no_secret(info.value, "wrong-pass-word-1234")

    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ProviderError) as info:
        await connect(f"http://127.0.0.1:{port}", bsky_account.handle, bsky_account.app_password)
    assert info.value.kind == "transient" and "Could not reach" in (info.value.safe_reason or "")
    _assert_no_secret(info.value, bsky_account.app_password)

    with pytest.raises(ProviderError) as info:
        await connect("https://user:pw@bsky.example", bsky_account.handle, bsky_account.app_password)
    assert info.value.kind == "rejected" and "pw" not in (info.value.safe_reason or "")


# --- publish -----------------------------------------------------------------------------------------------

async def test_publish_text_with_facets_at_utf8_byte_offsets(pds: Pds, bsky_account: BlueskyAccount) -> None:
    friend = pds.create_account("friend")
    account = await _account(bsky_account)
    text = f"🎉 Launch day: https://example.com/launch?ref=bsky with @{friend.handle} #launch #2024 @nobody.test"
    result = await BlueskyProvider().publish(account, _post(text))

    rkey = record_key("sp_token_1")
    assert result.publish_id == f"at://{bsky_account.did}/app.bsky.feed.post/{rkey}"
    assert result.permalink_url == f"https://bsky.app/profile/{bsky_account.handle}/post/{rkey}"
    record = _record(pds, result.publish_id)["value"]
    assert record["text"] == text
    raw = text.encode()
    found = {f["features"][0]["$type"].split("#")[1]: (raw[f["index"]["byteStart"]:f["index"]["byteEnd"]].decode(),
                                                       f["features"][0]) for f in record["facets"]}
    assert found["link"] == ("https://example.com/launch?ref=bsky", {"$type": "app.bsky.richtext.facet#link",
                                                                     "uri": "https://example.com/launch?ref=bsky"})
    assert found["mention"][0] == f"@{friend.handle}" and found["mention"][1]["did"] == friend.did
    assert found["tag"][0] == "#launch"
    # The emoji before the link is 4 bytes: a character offset (14) would be wrong.
    link = next(f for f in record["facets"] if f["features"][0]["$type"].endswith("#link"))
    assert link["index"]["byteStart"] == 17 != text.index("https")
    assert len(record["facets"]) == 3  # "#2024" is no tag, "@nobody.test" resolves to nobody


async def test_publish_images_with_alt_text(pds: Pds, bsky_account: BlueskyAccount,
                                            media_server: MediaServer) -> None:
    account = await _account(bsky_account)
    first, second = _png(40, 30), _png(10, 20)
    media = [{"url": media_server.add("a.png", "image/png", first), "content_type": "image/png", "width": 40,
              "height": 30},
             {"url": media_server.add("b.png", "image/png", second), "content_type": "image/png", "width": 10,
              "height": 20}]
    settings = {"post_type": "BS_IMAGE", "media_ids": ["med_a", "med_b"], "alt_text": {"med_b": "A tall red box"}}
    result = await BlueskyProvider().publish(account, _post("Two pictures", media=media, settings=settings,
                                                            post_type="BS_IMAGE"))
    embed = _record(pds, result.publish_id)["value"]["embed"]
    assert embed["$type"] == "app.bsky.embed.images"
    assert [(i["alt"], i["aspectRatio"], i["image"]["mimeType"], i["image"]["size"]) for i in embed["images"]] == [
        ("", {"width": 40, "height": 30}, "image/png", len(first)),
        ("A tall red box", {"width": 10, "height": 20}, "image/png", len(second))]
    cid = embed["images"][1]["image"]["ref"]["$link"]
    blob = httpx.get(f"{pds.url}/xrpc/com.atproto.sync.getBlob", params={"did": bsky_account.did, "cid": cid})
    assert blob.content == second


async def test_publish_a_video_with_alt_text(pds: Pds, bsky_account: BlueskyAccount,
                                            media_server: MediaServer) -> None:
    account = await _account(bsky_account)
    clip = video_bytes(64, 48)
    media = [{"url": media_server.add("clip.mp4", "video/mp4", clip), "content_type": "video/mp4", "width": 64,
              "height": 48, "duration": 1.0}]
    settings = {"post_type": "BS_VIDEO", "media_ids": ["med_v"], "alt_text": {"med_v": "A short test clip"}}
    result = await BlueskyProvider().publish(account, _post("A clip", media=media, settings=settings,
                                                            post_type="BS_VIDEO"))
    embed = _record(pds, result.publish_id)["value"]["embed"]
    assert embed["$type"] == "app.bsky.embed.video" and embed["alt"] == "A short test clip"
    assert embed["video"]["mimeType"] == "video/mp4" and embed["video"]["size"] == len(clip)
    assert embed["aspectRatio"] == {"width": 64, "height": 48}


async def test_an_image_over_the_registry_limit_is_refused_before_anything_is_written(
        pds: Pds, bsky_account: BlueskyAccount, media_server: MediaServer) -> None:
    account = await _account(bsky_account)
    big = _png(600, 600, noise=True)
    assert len(big) > 1_000_000
    media = [{"url": media_server.add("big.png", "image/png", big), "content_type": "image/png"}]
    with pytest.raises(ProviderError) as info:
        await BlueskyProvider().publish(account, _post("Big", media=media, post_type="BS_IMAGE"))
    assert info.value.kind == "rejected"
    assert info.value.safe_reason == "Bluesky refused the post: an image is larger than 1,000,000 bytes."
    assert _records(pds, bsky_account.did) == []


async def test_thread_parts_are_a_reply_chain_and_delete_removes_them(pds: Pds,
                                                                      bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    transport = CountingTransport()
    provider = BlueskyProvider(transport=transport)
    post = _post("1/3 the start", thread_parts=[{"text": "2/3 the middle", "media": []},
                                                 {"text": "3/3 the end #fin", "media": []}])
    result = await provider.publish(account, post)
    # One write per post: the reply refs' CIDs computed locally matched what the PDS wrote (no relinking).
    assert transport.calls.count("com.atproto.repo.putRecord") == 3
    root = _record(pds, result.publish_id)
    assert "reply" not in root["value"]
    records = {r["value"]["text"]: r for r in _records(pds, bsky_account.did)}
    assert len(records) == 3
    middle, end = records["2/3 the middle"], records["3/3 the end #fin"]
    root_ref = {"uri": root["uri"], "cid": root["cid"]}
    assert middle["value"]["reply"] == {"root": root_ref, "parent": root_ref}
    assert end["value"]["reply"] == {"root": root_ref, "parent": {"uri": middle["uri"], "cid": middle["cid"]}}
    assert end["value"]["facets"][0]["features"][0] == {"$type": "app.bsky.richtext.facet#tag", "tag": "fin"}

    # A retry rewrites the same three records.
    again = await provider.publish(account, post)
    assert again == result and len(_records(pds, bsky_account.did)) == 3

    await provider.delete_post(account, result.publish_id)
    assert _records(pds, bsky_account.did) == []
    assert await provider.find_post(account, "sp_token_1") is None


class CrashingTransport(CountingTransport):
    """The real network until the n-th putRecord, which never arrives (a worker killed mid-thread)."""

    def __init__(self, crash_at: int) -> None:
        super().__init__()
        self.crash_at = crash_at

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("putRecord") and self.calls.count("com.atproto.repo.putRecord") + 1 == \
                self.crash_at:
            self.calls.append("crash")
            raise httpx.ConnectError("killed", request=request)
        return await super().handle_async_request(request)


async def test_a_thread_cut_off_midway_is_not_found_and_the_retry_completes_it(pds: Pds,
                                                                              bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    post = _post("1/3", token="sp_cut", thread_parts=[{"text": "2/3", "media": []}, {"text": "3/3", "media": []}])
    with pytest.raises(ProviderError) as info:
        await BlueskyProvider(transport=CrashingTransport(crash_at=2)).publish(account, post)
    assert info.value.kind == "transient"
    assert [r["value"]["text"] for r in _records(pds, bsky_account.did)] == ["3/3"]  # written last part first
    provider = BlueskyProvider()
    assert await provider.find_post(account, "sp_cut") is None  # so the worker publishes again
    result = await provider.publish(account, post)
    records = {r["value"]["text"]: r for r in _records(pds, bsky_account.did)}
    assert sorted(records) == ["1/3", "2/3", "3/3"]
    root_ref = {"uri": result.publish_id, "cid": records["1/3"]["cid"]}
    assert records["2/3"]["value"]["reply"] == {"root": root_ref, "parent": root_ref}
    assert records["3/3"]["value"]["reply"]["parent"] == {"uri": records["2/3"]["uri"], "cid": records["2/3"]["cid"]}
    assert await provider.find_post(account, "sp_cut") == result


async def test_the_same_token_twice_is_one_record_and_find_post_finds_it(pds: Pds,
                                                                          bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    provider = BlueskyProvider()
    assert await provider.find_post(account, "sp_once") is None
    first = await provider.publish(account, _post("Exactly once", token="sp_once"))
    second = await provider.publish(account, _post("Exactly once", token="sp_once"))
    assert first == second
    records = _records(pds, bsky_account.did)
    assert [r["uri"] for r in records] == [first.publish_id]
    assert await provider.find_post(account, "sp_once") == first
    other = await provider.publish(account, _post("Another target", token="sp_other"))
    assert other.publish_id != first.publish_id and len(_records(pds, bsky_account.did)) == 2


async def test_a_post_over_300_graphemes_is_rejected_with_a_safe_reason(pds: Pds,
                                                                         bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    with pytest.raises(ProviderError) as info:
        await BlueskyProvider().publish(account, _post("é" * 301))
    assert info.value.kind == "rejected"
    assert info.value.safe_reason == "Bluesky refused the post: text is longer than 300 graphemes."
    _assert_no_secret(info.value, bsky_account.app_password, _creds(account)["access_jwt"])
    assert _records(pds, bsky_account.did) == []
    # 300 graphemes of 2 code points each (e + combining acute) are accepted.
    assert await BlueskyProvider().publish(account, _post("e\u0301" * 300, token="sp_300"))


# --- sessions ----------------------------------------------------------------------------------------------

async def test_a_refused_access_token_is_refreshed_once_then_the_call_succeeds(pds: Pds,
                                                                                bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    old_refresh = _creds(account)["refresh_jwt"]
    account.credentials = {**_creds(account), "access_jwt": GARBAGE_JWT}
    transport = CountingTransport()
    result = await BlueskyProvider(transport=transport).publish(account, _post("After a refresh"))
    assert _record(pds, result.publish_id)["value"]["text"] == "After a refresh"
    assert transport.calls.count("com.atproto.server.refreshSession") == 1
    assert transport.calls.count("com.atproto.server.createSession") == 0
    assert transport.calls.count("com.atproto.repo.putRecord") == 2  # refused once, then written
    assert account.credentials_changed
    assert _creds(account)["access_jwt"] != GARBAGE_JWT and _creds(account)["refresh_jwt"] != old_refresh

    # The renewed session is reused: the next publish makes no session call at all.
    transport.calls.clear()
    await BlueskyProvider(transport=transport).publish(account, _post("Reused", token="sp_reused"))
    assert transport.calls == ["com.atproto.repo.putRecord"]


async def test_a_refused_refresh_falls_back_to_the_app_password_once(pds: Pds,
                                                                      bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    account.credentials = {**_creds(account), "access_jwt": GARBAGE_JWT, "refresh_jwt": GARBAGE_JWT}
    transport = CountingTransport()
    await BlueskyProvider(transport=transport).publish(account, _post("Via the app password"))
    assert transport.calls.count("com.atproto.server.refreshSession") == 1
    assert transport.calls.count("com.atproto.server.createSession") == 1
    assert _creds(account)["refresh_jwt"] != GARBAGE_JWT


async def test_a_revoked_app_password_is_reauth_required_and_leaks_nothing(pds: Pds,
                                                                            bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    stored = dict(_creds(account))
    pds.revoke_app_passwords(bsky_account)  # revokes its sessions' refresh tokens too
    account.credentials = {**stored, "access_jwt": GARBAGE_JWT}
    provider = BlueskyProvider()
    with pytest.raises(ProviderError) as info:
        await provider.publish(account, _post("Never"))
    assert info.value.kind == "reauth_required"
    assert info.value.safe_reason == "Bluesky no longer accepts the account's app password; reconnect the account."
    _assert_no_secret(info.value, bsky_account.app_password, stored["access_jwt"], stored["refresh_jwt"],
                      GARBAGE_JWT)
    with pytest.raises(ProviderError) as info:
        await provider.refresh_credentials(account, datetime.fromtimestamp(stored["access_expires_at"] - 60, UTC))
    assert info.value.kind == "reauth_required"
    _assert_no_secret(info.value, bsky_account.app_password, stored["refresh_jwt"])
    assert _records(pds, bsky_account.did) == []


async def test_refresh_credentials_renews_ahead_of_expiry_only(pds: Pds, bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    transport = CountingTransport()
    provider = BlueskyProvider(transport=transport)
    assert await provider.refresh_credentials(account, datetime.now(UTC)) is None
    assert not account.credentials_changed and transport.calls == []
    expires = _creds(account)["access_expires_at"]
    soon = datetime.fromtimestamp(expires - 60, UTC)
    old = dict(_creds(account))
    fresh = await provider.refresh_credentials(account, soon)
    assert fresh is not None and account.credentials_changed and fresh == account.credentials
    assert transport.calls == ["com.atproto.server.refreshSession"]
    assert fresh["refresh_jwt"] != old["refresh_jwt"]  # rotated (the access JWT may match within one second)
    assert fresh["app_password"] == old["app_password"] and fresh["service"] == old["service"]


async def test_dynamic_options_are_unsupported(bsky_account: BlueskyAccount) -> None:
    account = await _account(bsky_account)
    with pytest.raises(ProviderError) as info:
        await BlueskyProvider().dynamic_options(account, "pinterest_boards", refresh=False)
    assert info.value.kind == "malformed"


# --- classification of answers the local PDS does not give (its rate limits are off) ----------------------

def _answer(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers,
                          request=httpx.Request("POST", "https://pds.example/xrpc/com.atproto.repo.putRecord"))


async def test_rate_limits_server_errors_and_validation_are_classified() -> None:  # async, as the module's fixture
    reset = int(time.time()) + 120
    limited = classify(_answer(429, {"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"},
                               {"ratelimit-reset": str(reset)}))
    assert limited is not None and limited.kind == "rate_limited" and 100 < (limited.retry_after or 0) <= 120
    assert classify(_answer(500, {"error": "InternalServerError"})).kind == "transient"  # pyright: ignore[reportOptionalMemberAccess]  # classify returns a failure for an error answer
    expired = classify(_answer(400, {"error": "ExpiredToken", "message": "Token has expired"}))
    assert expired is not None and expired.kind == "reauth_required"
    refused = classify(_answer(400, {"error": "InvalidRequest", "message": "Invalid app.bsky.feed.post record: "
                                     "Record/embed/images/0/alt must not be longer than 1000 graphemes"}))
    assert refused is not None and refused.kind == "rejected"
    assert refused.safe_reason == "Bluesky refused the post: alt text is longer than 1000 graphemes."
    current = classify(_answer(400, {"error": "InvalidRequest", "message": "Invalid app.bsky.feed.post record: "
                                     "grapheme too big (maximum 1000, got 1001) at $.record.embed.images[0].alt"}))
    assert current is not None and current.safe_reason == refused.safe_reason
    secret = classify(_answer(400, {"error": "InvalidRequest", "message": "token sbx_secret_9 bad"}))
    assert secret is not None and secret.safe_reason == "Bluesky refused the post."
    assert "sbx_secret_9" not in secret.message
