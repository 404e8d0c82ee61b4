"""Bluesky post metrics against the real PDS (`.ci/pds`): the adapter's getPosts, sent with the `atproto-proxy`
header, really goes through the PDS to the AppView it is configured with, and when the PDS cannot reach one the
outcome is a clear `unavailable` (readings tried again later), not a crash and not a refused permission.

The test PDS has no AppView of its own and no Internet, so it is started pointing its Bluesky AppView
(did:web:api.bsky.app) at a loopback stub that answers getPosts as the official lexicon describes
(tests/networks/lexicons/, checked with tests/networks/lexicon.py); the stub is then shut to make the PDS's proxy
fail. Nothing here needs a permission beyond the app password session."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from providers.base import Account, PostRequest, ProviderError
from providers.bluesky import APPVIEW_REASON, BlueskyProvider, connect
from storage.tables.analytics import PostMetricsState
from tests.networks.conftest import _unavailable
from tests.networks.lexicon import check_output
from tests.networks.pds import BlueskyAccount, Pds, PdsFailed, PdsUnavailable, start_pds, stop_pds
from tests.networks.support import Flow
from tools.analytics import collect
from tools.networks import connect as networks

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("loopback_allowed")]  # the PDS is on 127.0.0.1
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


class StubAppView:
    """A loopback stand-in for the Bluesky AppView: getPosts answers a postView per URI with fixed counts."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                stub.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                url = urlsplit(self.path)
                if url.path != "/xrpc/app.bsky.feed.getPosts":
                    self.send_response(404)
                    self.end_headers()
                    return
                uris = parse_qs(url.query).get("uris", [])
                body = {"posts": [stub.view(uri) for uri in uris]}
                check_output(body, "app.bsky.feed.getPosts")
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def view(uri: str) -> dict[str, Any]:
        did = uri.removeprefix("at://").split("/")[0]
        return {"uri": uri, "cid": "bafyreihw5ixmwbmsqfbu4zcaxtqllb2vy7pwatadfbmwyhpnfzkyvm2yke",
                "author": {"did": did, "handle": "someone.test"}, "record": {"$type": "app.bsky.feed.post"},
                "likeCount": 12, "repostCount": 4, "replyCount": 3, "quoteCount": 1, "bookmarkCount": 2,
                "indexedAt": "2026-11-28T12:00:00.000Z"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def appview() -> Iterator[StubAppView]:
    stub = StubAppView()
    try:
        yield stub
    finally:
        stub.close()


@pytest.fixture(scope="module")
def proxying_pds(tmp_path_factory: pytest.TempPathFactory, appview: StubAppView) -> Iterator[Pds]:
    try:
        server = start_pds(tmp_path_factory.mktemp("pds-appview"), appview_url=appview.url)
    except PdsUnavailable as exc:
        _unavailable(str(exc))
        raise  # _unavailable skips or fails; never reached
    except PdsFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        stop_pds(server)


def _jwt_claims(authorization: str) -> dict[str, Any]:
    payload = authorization.removeprefix("Bearer ").split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def _published(pds: Pds) -> tuple[Account, str, str]:
    who = pds.create_account("metrics")
    made = await connect(who.service, who.handle, who.app_password)
    account = Account(integration_id="int_bsky", platform="bluesky", status="connected",
                      provider_account_id=made.provider_account_id, credentials=made.credentials, state=made.state)
    post = await BlueskyProvider().publish(account, PostRequest(platform="bluesky", post_type="BS_TEXT",
                                                                text="Fresh roast", idempotency_token="sp_metrics_1"))
    return account, post.publish_id, who.app_password


async def test_the_pds_proxies_get_posts_to_its_appview_then_a_missing_appview_is_unavailable(
        proxying_pds: Pds, appview: StubAppView) -> None:
    account, uri, app_password = await _published(proxying_pds)
    got = await BlueskyProvider().post_metrics(account, uri, published_at=NOW, now=NOW)
    assert got.values == {"likes": 12, "reposts": 4, "replies": 3, "saves": 2} and got.raw["quoteCount"] == 1
    path, headers = appview.requests[-1]
    assert parse_qs(urlsplit(path).query)["uris"] == [uri]
    # the PDS called the AppView for the account: a service token it signed, for the AppView, for this method
    claims = _jwt_claims(headers["authorization"])
    assert claims["iss"].startswith(account.provider_account_id or "-") and claims["aud"] == "did:web:api.bsky.app"
    assert claims.get("lxm") in (None, "app.bsky.feed.getPosts")

    appview.close()  # the AppView goes away: the PDS can no longer proxy
    with pytest.raises(ProviderError) as err:
        await BlueskyProvider().post_metrics(account, uri, published_at=NOW, now=NOW)
    assert err.value.kind == "unavailable" and err.value.safe_reason == APPVIEW_REASON
    assert app_password not in err.value.message and app_password not in str(err.value.safe_reason)


async def test_reconnecting_a_real_account_resumes_its_stopped_readings(env, pds: Pds,
                                                                         bsky_account: BlueskyAccount) -> None:
    """The real reconnect path (tools/networks, which the console and `integrations reconnect` call): new
    credentials verified with the PDS, stored, and the account's readings stopped for a missing permission due
    again. (Bluesky itself never refuses metrics for a permission; the stopped row stands for one that did.)"""
    flow = await Flow(env).setup()
    env.rt.settings.fetch_allow_hosts = ("127.0.0.1",)
    options = {"service": pds.url, "handle": bsky_account.handle, "app_password": bsky_account.app_password}
    i = await networks.connect(env.rt, flow.brand.id, "bluesky", options)
    now = env.clock.now()
    async with env.db.session(write=True) as s:
        s.add(PostMetricsState(publication_id="pub_stopped", workspace_id=flow.ws.id, brand_id=flow.brand.id,
                               integration_id=i.id, platform="bluesky", post_id="cnt_stopped",
                               publish_id=f"at://{bsky_account.did}/app.bsky.feed.post/3lbsprtk2ds2a",
                               published_at=now, status="permission_missing", created_at=now, updated_at=now))
    assert await collect.collect_due(env.rt, "w1") == 0
    env.clock.advance(hours=2)
    await networks.reconnect(env.rt, i.id, options)
    async with env.db.session(write=False) as s:
        row = await s.get(PostMetricsState, "pub_stopped")
    assert row is not None and row.status == "collecting" and row.next_due_at == env.clock.now()
