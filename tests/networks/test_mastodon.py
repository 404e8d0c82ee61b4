"""Mastodon against mastodon-mock (a real Mastodon-shaped HTTP server from PyPI, on 127.0.0.1): the adapter
(statuses, threads as replies, Idempotency-Key, media with the 202 → poll path, 422 / 401 / 429 / timeouts),
the connect flows (access token; OAuth 2.0 + PKCE through `GET /connect/mastodon/callback` with a single-use,
10-minute state) and the end-to-end publish through `socialpub worker --once` in a subprocess.

Mastodon publishes no machine-readable description; the shapes asserted follow https://docs.joinmastodon.org/methods/
statuses/ (POST /api/v1/statuses: status, media_ids, in_reply_to_id, visibility, sensitive; Idempotency-Key header),
https://docs.joinmastodon.org/methods/media/ (POST /api/v2/media, 202 then GET /api/v1/media/{id}) and
https://docs.joinmastodon.org/methods/oauth/ (authorize with PKCE S256, POST /oauth/token)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import respx

from providers.base import Account, PostRequest, ProviderError
from providers.mastodon import MastodonProvider
from storage import vault
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification
from tests.networks.support import (
    MASTODON_TOKEN,
    Flow,
    assert_no_secrets,
    clear_faults,
    fault,
    mastodon_server,  # noqa: F401  (fixture)
    status_of,
    statuses_of_alice,
)
from tools.networks import connect as networks
from tools.networks import oauth, tokens
from tools.services.accounts import store_credentials

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("loopback_allowed")]  # mastodon-mock is on 127.0.0.1
CLI = str(Path(sys.executable).parent / "socialpub")
ASSET = "http://media.test/assets/ast_1"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00"
       b"\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")


def account(server, token: str = MASTODON_TOKEN) -> Account:
    return Account(integration_id="int_x", platform="mastodon", status="connected", provider_account_id="1",
                   credentials={"access_token": token}, state={"instance": server.base_url})


def post(token: str, text: str = "Hello from socialpub", **kw) -> PostRequest:
    return PostRequest(platform="mastodon", post_type="MA_POST", text=text, idempotency_token=token, **kw)


@pytest.fixture(autouse=True)
def _no_faults(mastodon_server):  # noqa: F811
    clear_faults(mastodon_server)
    yield
    clear_faults(mastodon_server)


# --- the adapter ------------------------------------------------------------------------------------------

async def test_publish_thread_as_replies_and_idempotency_key_dedupes(mastodon_server) -> None:  # noqa: F811
    provider = MastodonProvider()
    req = post("sp_thread_1", settings={"visibility": "unlisted", "spoiler_text": "cw", "language": "en"},
               thread_parts=[{"text": "part two", "media": []}, {"text": "part three", "media": []}])
    first = await provider.publish(account(mastodon_server), req)
    again = await provider.publish(account(mastodon_server), req)  # a retry after a lost answer
    assert again.publish_id == first.publish_id and (first.permalink_url or "").startswith("https://")
    root = status_of(mastodon_server, first.publish_id)
    assert root["visibility"] == "unlisted" and root["spoiler_text"] == "cw" and root["language"] == "en"
    texts = [s for s in statuses_of_alice(mastodon_server) if "part" in s["content"] or s["id"] == root["id"]]
    replies = {s["in_reply_to_id"] for s in texts if s["in_reply_to_id"]}
    assert root["id"] in replies and len([s for s in texts if "part two" in s["content"]]) == 1

    await provider.delete_post(account(mastodon_server), first.publish_id)
    with pytest.raises(httpx.HTTPStatusError):
        status_of(mastodon_server, first.publish_id)


async def test_media_upload_including_the_202_processing_path(mastodon_server) -> None:  # noqa: F811
    provider = MastodonProvider(poll_seconds=0.01)
    media = [{"url": ASSET, "content_type": "image/png"}]
    with respx.mock(assert_all_called=False) as mock:
        mock.get(ASSET).respond(200, content=PNG, headers={"content-type": "image/png"})
        mock.route(host="127.0.0.1").pass_through()
        done = await provider.publish(account(mastodon_server), post("sp_media_1", media=media))
        attached = status_of(mastodon_server, done.publish_id)["media_attachments"]
        assert len(attached) == 1 and attached[0]["type"] == "image"
        # The instance answers 202 (still processing) for the next upload: the adapter polls until processed.
        fault(mastodon_server, {"match": {"methods": ["POST"], "path": "/api/v2/media"}, "count": 1,
                                "effect": {"type": "status", "status": 202,
                                           "body": {"id": attached[0]["id"], "type": "image", "url": None}}})
        polled = await provider.publish(account(mastodon_server), post("sp_media_2", media=media))
        assert status_of(mastodon_server, polled.publish_id)["media_attachments"][0]["id"] == attached[0]["id"]


async def test_failures_are_classified_without_provider_words(mastodon_server) -> None:  # noqa: F811
    provider = MastodonProvider()
    with pytest.raises(ProviderError) as bad_token:
        await provider.publish(account(mastodon_server, "not-a-token"), post("sp_f1"))
    assert bad_token.value.kind == "reauth_required"

    with pytest.raises(ProviderError) as too_long:
        await provider.publish(account(mastodon_server), post("sp_f2", text="x" * 600))
    assert too_long.value.kind == "rejected"
    assert too_long.value.safe_reason == "Mastodon refused the post: the text is longer than the instance allows."

    fault(mastodon_server, {"match": {"path": "/api/v1/statuses"}, "count": 1, "effect": {"type": "ratelimit"}})
    with pytest.raises(ProviderError) as limited:
        await provider.publish(account(mastodon_server), post("sp_f3"))
    assert limited.value.kind == "rate_limited" and limited.value.retry_after == 300

    fault(mastodon_server, {"match": {"path": "/api/v1/statuses"}, "count": 1,
                            "effect": {"type": "status", "status": 503}})
    with pytest.raises(ProviderError) as down:
        await provider.publish(account(mastodon_server), post("sp_f4"))
    assert down.value.kind == "unavailable"

    fault(mastodon_server, {"match": {"path": "/api/v1/statuses"}, "count": 1,
                            "effect": {"type": "latency", "delay_ms": 1500}})
    with pytest.raises(ProviderError) as slow:
        await MastodonProvider(timeout=httpx.Timeout(0.5)).publish(account(mastodon_server), post("sp_f5"))
    assert slow.value.kind == "transient"


# --- connect ----------------------------------------------------------------------------------------------

def _allow_local(env) -> None:
    env.rt.settings.fetch_allow_hosts = ("127.0.0.1",)


async def _integrations(env) -> list[Integration]:
    from sqlmodel import select

    async with env.db.session(write=False) as s:
        return list((await s.exec(select(Integration).where(Integration.platform == "mastodon"))).all())


async def test_connect_with_access_token_verifies_and_seals(env, mastodon_server) -> None:  # noqa: F811
    _allow_local(env)
    flow = await Flow(env).setup()
    with pytest.raises(networks.ConnectError, match="refused the credentials"):
        await networks.connect(env.rt, flow.brand.id, "mastodon",
                               {"instance": mastodon_server.base_url, "access_token": "wrong"})
    assert await _integrations(env) == []  # nothing saved
    i = await networks.connect(env.rt, flow.brand.id, "mastodon",
                               {"instance": mastodon_server.base_url, "access_token": MASTODON_TOKEN})
    assert i.provider_state is not None
    assert (i.provider, i.username, i.provider_state["max_characters"]) == ("mastodon", "alice", 500)
    assert vault.is_sealed(i.credentials) and MASTODON_TOKEN not in str(i.credentials)
    assert vault.open_credentials(env.rt.settings, i.credentials) == {"access_token": MASTODON_TOKEN}


async def test_private_instance_is_refused(env) -> None:
    flow = await Flow(env).setup()
    with pytest.raises(networks.ConnectError, match="refused"):
        await networks.connect(env.rt, flow.brand.id, "mastodon",
                               {"instance": "http://127.0.0.1:9", "access_token": "t"})


def _authorise(server, authorize_url: str) -> dict[str, str]:
    """What the operator's browser does on mastodon-mock's authorize page: pick alice, follow the redirect."""
    q = {k: v[0] for k, v in parse_qs(urlsplit(authorize_url).query).items()}
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43 and q["scope"] == "read write"
    resp = httpx.post(f"{server.base_url}/oauth/authorize", data={
        "username": "alice", "redirect_uri": q["redirect_uri"], "client_id": q["client_id"], "scope": q["scope"],
        "state": q["state"]})
    assert resp.status_code == 302
    back = urlsplit(resp.headers["location"])
    assert back.path == "/connect/mastodon/callback"
    return {k: v[0] for k, v in parse_qs(back.query).items()}


async def test_oauth_connect_state_is_single_use_matched_and_expires(env, mastodon_server) -> None:  # noqa: F811
    _allow_local(env)
    flow = await Flow(env).setup()
    started = await oauth.start(env.rt, flow.brand.id, "mastodon", server=mastodon_server.base_url)
    again = await oauth.start(env.rt, flow.brand.id, "mastodon", server=mastodon_server.base_url)
    assert parse_qs(urlsplit(started["authorize_url"]).query)["client_id"] == \
        parse_qs(urlsplit(again["authorize_url"]).query)["client_id"]  # the app is registered once per instance
    query = _authorise(mastodon_server, started["authorize_url"])

    mismatched = await env.rest.get("/connect/mastodon/callback", params={**query, "state": "forged"})
    assert mismatched.status_code == 400 and "does not match" in mismatched.text
    done = await env.rest.get("/connect/mastodon/callback", params=query)
    assert done.status_code == 200 and "connected" in done.text, done.text
    assert done.headers["cache-control"] == "no-store" and query["code"] not in done.text
    reused = await env.rest.get("/connect/mastodon/callback", params=query)
    assert reused.status_code == 400 and "already used" in reused.text
    [i] = await _integrations(env)
    creds = vault.open_credentials(env.rt.settings, i.credentials)
    assert creds is not None
    assert i.username == "alice" and creds["access_token"] and creds["access_token"] not in done.text

    late = _authorise(mastodon_server, again["authorize_url"])
    env.clock.advance(minutes=11)
    expired = await env.rest.get("/connect/mastodon/callback", params=late)
    assert expired.status_code == 400 and "expired" in expired.text
    assert len(await _integrations(env)) == 1


# --- token lifecycle --------------------------------------------------------------------------------------

async def test_refused_refresh_marks_expired_notifies_and_targets_offer_reconnect(env, mastodon_server) -> None:  # noqa: F811
    _allow_local(env)
    flow = await Flow(env).setup()
    i = await networks.connect(env.rt, flow.brand.id, "mastodon",
                               {"instance": mastodon_server.base_url, "access_token": MASTODON_TOKEN})
    soon = (env.clock.now()).isoformat().replace("+00:00", "Z")
    async with env.db.session(write=True) as s:
        row = await s.get(Integration, i.id)
        store_credentials(row, {"access_token": MASTODON_TOKEN, "refresh_token": "revoked", "client_id": "c",
                                "client_secret": "s", "expires_at": soon}, env.rt.settings, env.rt.providers)
        s.add(row)
    assert await tokens.refresh_due(env.rt, "w1") == 1
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, i.id)).status == "expired"
        from sqlmodel import select

        notes = (await s.exec(select(Notification).where(Notification.category == "integration_refresh"))).all()
    assert len(notes) == 1 and "Reconnect Mastodon" in notes[0].title
    targets = await flow.request("GET", f"/v1/brands/{flow.brand.id}/targets")
    [target] = [t for t in targets["data"]["targets"] if t["integration_id"] == i.id]
    assert "RECONNECT_REQUIRED" in str(target) and "reconnect_integration" in str(target)
    assert await tokens.refresh_due(env.rt, "w1") == 0  # expired accounts are not retried


# --- end to end through the worker subprocess -------------------------------------------------------------

async def test_draft_preflight_schedule_worker_subprocess_publishes_for_real(env, mastodon_server, caplog) -> None:  # noqa: F811
    caplog.set_level(logging.DEBUG)
    _allow_local(env)
    flow = await Flow(env).setup()
    i = await networks.connect(env.rt, flow.brand.id, "mastodon",
                               {"instance": mastodon_server.base_url, "access_token": MASTODON_TOKEN})
    item = await flow.draft("Spring roast is here", mastodon_settings={
        "visibility": "public", "thread_parts": [{"text": "Tasting notes: cherry, cocoa."}]})
    report = await flow.preflight(item, [i.id])
    assert report["can_schedule"] is True, report
    too_long = await flow.draft("x" * 501, mastodon_settings={})
    blocked = await flow.preflight(too_long, [i.id])
    assert blocked["can_schedule"] is False and "CAPTION_TOO_LONG" in str(blocked)
    schedule_id = await flow.schedule(item, [i.id])

    env_vars = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env_vars.update(SOCIALPUB_HOME=str(env.rt.settings.home), SOCIALPUB_DATABASE_URL=env.db.url,
                    SOCIALPUB_FETCH_ALLOW_HOSTS="127.0.0.1")  # the instance's address is checked again on publish
    done = subprocess.run([CLI, "worker", "--once", "--log-level", "DEBUG"], env=env_vars, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "1 item(s) processed" in done.stdout, done.stdout + done.stderr

    out = await flow.outcome(schedule_id)
    assert out["schedule"]["status"] == "published", out["schedule"]
    assert "'has_permalink': True" in str(out["receipt"]), out["receipt"]
    [pub] = [p for p in out["publications"] if p["integration_id"] == i.id]
    status = status_of(mastodon_server, pub["publish_id"])  # the post exists on the instance
    assert "Spring roast" in status["content"]
    assert any(h.get("permalink_url") == status["url"] for h in out["history"]["items"]), out["history"]
    assert_no_secrets([*flow.bodies, done.stdout, done.stderr, caplog.text], [MASTODON_TOKEN])
