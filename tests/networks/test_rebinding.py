"""Issue 27 item 3: a stored network base URL is checked again at every connection, not only at connect.

A Mastodon account is connected on `social.test` (a fake resolver points the name at mastodon-mock on 127.0.0.1,
allowed by name as SOCIALPUB_FETCH_ALLOW_HOSTS does). Then the name rebinds (and the allow-list entry is
removed): the worker's publish, the token refresh tick and a connect are refused before any connection opens,
the token never leaves, and the receipt, the integration's status or the error says why. `dialled` records
every address a connection was opened to. SQLite and PostgreSQL (the `env` fixture's legs)."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest

from providers import addresses
from providers.addresses import AddressRefused
from providers.base import Account, PostRequest
from providers.bluesky import BlueskyProvider
from server.worker import Worker
from storage.tables.integrations import Integration
from tests.networks.support import (
    MASTODON_TOKEN,
    Flow,
    assert_no_secrets,
    mastodon_server,  # noqa: F401  (fixture)
)
from tools.networks import connect as networks
from tools.networks import tokens
from tools.services.accounts import store_credentials

pytestmark = pytest.mark.anyio
HOST = "social.test"
# (the address the name answers later, whether the allow-list still names the host)
REBOUND = [("10.0.0.1", False), ("::1", False), ("169.254.169.254", True)]


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    table: dict[str, list[list[str]]] = {}  # answers per name; the last one repeats

    async def resolve(host: str, port: int) -> list[str]:
        answers = table.get(host)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(answers.pop(0) if len(answers) > 1 else answers[0])

    monkeypatch.setattr(addresses, "resolve_host", resolve)
    return SimpleNamespace(table=table)



def _instance(server) -> str:
    return f"http://{HOST}:{urlsplit(server.base_url).port}"


async def _connected(env, server, dns) -> tuple[Flow, Integration]:
    dns.table[HOST] = [["127.0.0.1"]]
    env.rt.settings.fetch_allow_hosts = (HOST,)
    flow = await Flow(env).setup()
    integration = await networks.connect(env.rt, flow.brand.id, "mastodon",
                                         {"instance": _instance(server), "access_token": MASTODON_TOKEN})
    assert integration.provider_state is not None and integration.provider_state["instance"] == _instance(server)
    return flow, integration


def _rebind(env, dns, address: str, keep_allowed: bool) -> None:
    dns.table[HOST] = [[address]]
    env.rt.settings.fetch_allow_hosts = (HOST,) if keep_allowed else ()


@pytest.mark.parametrize(("address", "keep_allowed"), REBOUND)
async def test_the_worker_refuses_to_publish_to_a_rebound_instance(env, mastodon_server, dns, dialled,  # noqa: F811
                                                                   address, keep_allowed) -> None:
    flow, integration = await _connected(env, mastodon_server, dns)
    assert dialled and set(dialled) == {"127.0.0.1"}  # the connect reached the instance
    item = await flow.draft("Rebound?", mastodon_settings={"visibility": "public"})
    schedule_id = await flow.schedule(item, [integration.id])

    _rebind(env, dns, address, keep_allowed)
    dialled.clear()
    env.clock.advance(minutes=6)
    assert await Worker(env.rt, owner="w1").run_once() >= 1
    assert dialled == []  # no connection opened: the token never left

    out = await flow.outcome(schedule_id)
    [target] = out["receipt"]["receipt"]["targets"]
    assert (target["state"], target["next_action"]) == ("action_required", "reconnect_integration")
    category = {"10.0.0.1": "a private or non-public address", "::1": "a loopback address",
                "169.254.169.254": "a cloud metadata address"}[address]
    assert target["failure_reason"].startswith(f"The account's server address now resolves to {category}, so the "
                                               "call was refused before connecting and no credential was sent.")
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, integration.id)).status == "needs_reauth"
    assert_no_secrets([*flow.bodies, str(out)], [MASTODON_TOKEN])


async def test_a_token_refresh_to_a_rebound_instance_sends_nothing(env, mastodon_server, dns,  # noqa: F811
                                                                   dialled) -> None:
    _, integration = await _connected(env, mastodon_server, dns)
    soon = env.clock.now().isoformat().replace("+00:00", "Z")
    async with env.db.session(write=True) as s:
        row = await s.get(Integration, integration.id)
        store_credentials(row, {"access_token": MASTODON_TOKEN, "refresh_token": "r-planted", "client_id": "c",
                                "client_secret": "s", "expires_at": soon}, env.rt.settings, env.rt.providers)
        s.add(row)
    _rebind(env, dns, "10.0.0.1", keep_allowed=False)
    dialled.clear()
    assert await tokens.refresh_due(env.rt, "w1") == 1
    assert dialled == []  # neither the refresh token nor the client secret left
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, integration.id)).status == "expired"  # reconnect, which checks again


async def test_connect_checks_the_address_again_when_it_opens_the_connection(env, mastodon_server, dns,  # noqa: F811
                                                                              dialled) -> None:
    """The name passes the up-front check, then answers the metadata address when the client connects."""
    env.rt.settings.fetch_allow_hosts = (HOST,)
    flow = await Flow(env).setup()
    dns.table[HOST] = [["127.0.0.1"], ["169.254.169.254"]]
    with pytest.raises(networks.ConnectError) as refused:
        await networks.connect(env.rt, flow.brand.id, "mastodon",
                               {"instance": _instance(mastodon_server), "access_token": MASTODON_TOKEN})
    assert "was not contacted" in str(refused.value) and "cloud metadata address" in str(refused.value)
    assert "Nothing was saved" in str(refused.value) and MASTODON_TOKEN not in str(refused.value)
    assert dialled == []


async def test_bluesky_calls_to_a_rebound_pds_send_neither_session_nor_app_password(dns, dialled) -> None:
    """A Bluesky account's PDS name now answers a private address: the publish (whose expired session would be
    renewed, then recreated with the app password) and the refresh are refused before any connection, and the
    error is the address refusal, not a refused password."""
    dns.table["pds.test"] = [["10.0.0.1"]]
    account = Account(integration_id="int_b", platform="bluesky", status="connected", provider_account_id="did:plc:x",
                      credentials={"service": "https://pds.test", "handle": "a.test", "did": "did:plc:x",
                                   "app_password": "planted-app-password", "access_jwt": "planted.access",
                                   "refresh_jwt": "planted.refresh", "access_expires_at": 1})
    post = PostRequest(platform="bluesky", post_type="BS_POST", text="Rebound?", idempotency_token="sp_rebound")
    with pytest.raises(AddressRefused) as publishing:
        await BlueskyProvider().publish(account, post)
    with pytest.raises(AddressRefused) as refreshing:
        await BlueskyProvider().refresh_credentials(account, datetime.now(UTC))
    for refused in (publishing.value, refreshing.value):
        assert refused.kind == "reauth_required" and refused.category == "private"
        assert "no credential was sent" in (refused.safe_reason or "")
    assert dialled == [] and not account.credentials_changed
