"""The address policy as the network adapters meet it (providers/addresses.py through providers/http.py
`new_client`): the host is resolved when a connection opens, every answer is checked, and the connection goes
to a checked address while the Host header, TLS SNI and certificate check use the name.

Names resolve through a fake resolver; the only server reached is a loopback test server allowed by name.
`dialled` records every address a connection was opened to, so a refusal is shown to send nothing at all."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest

from providers import addresses
from providers.addresses import AddressRefused
from providers.base import ProviderError
from providers.http import call, new_client
from tests.media.support import FileServer, Reply
from tests.services.test_fetch_ssrf import _self_signed

pytestmark = pytest.mark.anyio
TOKEN = "planted-bearer-token"


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    table: dict[str, list[str] | Exception] = {}
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        answer = table.get(host, socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    monkeypatch.setattr(addresses, "resolve_host", resolve)
    return SimpleNamespace(table=table, calls=calls)



@pytest.fixture
def server():
    srv = FileServer().start()
    srv.routes["/api"] = Reply(body=b"{}", headers={"Content-Type": "application/json"})
    yield srv
    srv.stop()


async def get(base: str, **kwargs) -> None:
    async with new_client(base, headers={"Authorization": f"Bearer {TOKEN}"}, **kwargs) as client:
        await call(client, "GET", "/api", network="Net")


async def test_an_allowed_name_is_connected_at_its_checked_address_under_its_own_name(dns, dialled, server) -> None:
    dns.table["social.test"] = ["127.0.0.1"]
    with addresses.allowing(["Social.Test."]):
        await get(f"http://social.test:{server.port}")
    assert dialled == ["127.0.0.1"] and dns.calls == ["social.test"]
    assert server.hits == ["/api"] and server.host_headers == [f"social.test:{server.port}"]


REFUSED = [
    (["10.0.0.1"], True, "private"),
    (["169.254.169.254"], True, "metadata"),  # never allowed, even for an allowed name
    (["::1"], False, "loopback"),
    (["::ffff:127.0.0.1"], False, "loopback"),  # IPv4-mapped
    (["93.184.216.34", "192.168.1.5"], False, "private"),  # one private answer refuses the name
    (["0.0.0.0"], True, "unspecified"),
]


@pytest.mark.parametrize(("answers", "allowed", "category"), REFUSED)
async def test_a_name_resolving_to_a_refused_address_is_never_connected(dns, dialled, server, answers, allowed,
                                                                        category) -> None:
    dns.table["social.test"] = answers
    with addresses.allowing(["social.test"] if allowed and category == "metadata" else []), \
            pytest.raises(AddressRefused) as refused:
        await get(f"http://social.test:{server.port}")
    assert dialled == [] and server.hits == []  # nothing was sent anywhere, the token least of all
    error = refused.value
    assert (error.kind, error.retryable, error.category) == ("reauth_required", False, category)
    reason = error.safe_reason or ""
    assert "no credential was sent" in reason and "Reconnect" in reason
    assert TOKEN not in error.message and "social.test" not in reason


async def test_literal_addresses_and_the_default_context_are_judged_too(dns, dialled, server) -> None:
    with pytest.raises(AddressRefused):  # no allow-list in force: loopback is refused
        await get(f"http://127.0.0.1:{server.port}")
    with pytest.raises(AddressRefused):
        await get("http://[::ffff:a9fe:a9fe]:80")  # 169.254.169.254 written as IPv6
    assert dialled == [] and dns.calls == []  # literals are never looked up
    with addresses.allowing(["127.0.0.1"]):
        await get(f"http://127.0.0.1:{server.port}")
    assert dialled == ["127.0.0.1"]


async def test_an_allowance_ends_with_its_block(dns, dialled, server) -> None:
    dns.table["social.test"] = ["127.0.0.1"]
    with addresses.allowing(["social.test"]):
        await get(f"http://social.test:{server.port}")
    with pytest.raises(AddressRefused):
        await get(f"http://social.test:{server.port}")
    assert dialled == ["127.0.0.1"]


async def test_a_name_that_does_not_resolve_is_transient_and_dials_nothing(dns, dialled) -> None:
    dns.table["flaky.test"] = socket.gaierror(socket.EAI_AGAIN, "temporary failure")
    for host in ("flaky.test", "missing.test"):
        with pytest.raises(ProviderError) as failed:
            await get(f"https://{host}")
        assert failed.value.kind == "transient" and not isinstance(failed.value, AddressRefused)
    assert dialled == []


async def test_the_next_checked_address_is_tried_when_one_refuses(dns, dialled, server) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.2", 0))  # a loopback address where nothing listens on the server's port
    closed.close()
    dns.table["social.test"] = ["127.0.0.2", "127.0.0.1"]
    with addresses.allowing(["social.test"]):
        await get(f"http://social.test:{server.port}")
    assert dialled == ["127.0.0.2", "127.0.0.1"] and server.hits == ["/api"]


@pytest.mark.parametrize(("cert_name", "ok"), [("social.test", True), ("other.test", False)])
async def test_https_is_pinned_and_verified_by_name(tmp_path, dns, dialled, cert_name: str, ok: bool) -> None:
    server_ctx, client_ctx = _self_signed(tmp_path, cert_name)
    srv = FileServer(tls=server_ctx).start()
    srv.routes["/api"] = Reply(body=b"{}", headers={"Content-Type": "application/json"})
    try:
        dns.table["social.test"] = ["127.0.0.1"]
        with addresses.allowing(["social.test"]):
            if ok:
                await get(f"https://social.test:{srv.port}", verify=client_ctx)
                assert srv.host_headers == [f"social.test:{srv.port}"]
            else:
                with pytest.raises(ProviderError) as failed:
                    await get(f"https://social.test:{srv.port}", verify=client_ctx)
                assert failed.value.kind == "transient" and srv.hits == []
        assert dialled == ["127.0.0.1"]
    finally:
        srv.stop()
