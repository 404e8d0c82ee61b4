"""The SSRF policy of tools/services/fetch.py: every refused form of address, every spelling, DNS answers and redirects.

No test here reaches a network: names resolve through a fake resolver, and the only server contacted is a
loopback test server that the policy allows by name (the allow-hosts setting)."""

from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest

from providers import addresses
from tests.media.support import FileServer, Reply
from tools.services import fetch
from tools.services.fetch import FetchError, FetchPolicy, check_url, open_url

pytestmark = pytest.mark.anyio

POLICY = FetchPolicy(max_bytes=1_000_000)


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    table: dict[str, list[str] | Exception] = {
        "public.example": ["93.184.216.34"],
        "public6.example": ["2606:4700::1111"],
        "localhost": ["127.0.0.1", "::1"],
        "internal.example": ["10.1.2.3"],
        "metadata.example": ["169.254.169.254"],
        "mixed.example": ["93.184.216.34", "192.168.0.10"],
        "nip.example": ["127.0.0.1"],
        "v6local.example": ["fd12:3456::1"],
        "slow.example": socket.gaierror(socket.EAI_AGAIN, "temporary failure"),
    }
    calls: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        answer = table.get(host)
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if isinstance(answer, Exception):
            raise answer
        return list(answer)

    monkeypatch.setattr(addresses, "resolve_host", resolve)
    return SimpleNamespace(table=table, calls=calls)


async def refused(url: str, policy: FetchPolicy = POLICY) -> FetchError:
    with pytest.raises(FetchError) as exc:
        await check_url(url, policy)
    assert exc.value.retryable is False
    assert not url or url not in exc.value.message  # never echoes the input
    return exc.value


LITERALS = [
    ("http://127.0.0.1/x", "loopback"),
    ("http://127.255.0.9:8080/x", "loopback"),
    ("http://[::1]/x", "loopback"),
    ("http://[::ffff:127.0.0.1]/x", "loopback"),  # IPv4-mapped
    ("http://[::ffff:7f00:1]/x", "loopback"),
    ("http://[0:0:0:0:0:ffff:a00:1]/x", "private"),
    ("http://[::127.0.0.1]/x", "loopback"),  # IPv4-compatible
    ("http://[2002:7f00:1::]/x", "loopback"),  # 6to4 embedding 127.0.0.1
    ("http://[64:ff9b::a00:1]/x", "private"),  # NAT64 embedding 10.0.0.1
    ("http://[fe80::1]/x", "link_local"),
    ("http://[fc00::1]/x", "private"),
    ("http://[fd00::1]/x", "private"),
    ("http://[fec0::1]/x", "private"),  # site-local
    ("http://10.0.0.1/x", "private"),
    ("http://172.16.5.4/x", "private"),
    ("http://172.31.255.255/x", "private"),
    ("http://192.168.1.1/x", "private"),
    ("http://100.64.0.1/x", "private"),  # CGNAT
    ("http://169.254.10.10/x", "link_local"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),
    ("http://100.100.100.200/latest/meta-data/", "metadata"),
    ("http://0.0.0.0/x", "unspecified"),
    ("http://0.1.2.3/x", "unspecified"),
    ("http://[::]/x", "unspecified"),
    ("http://224.0.0.1/x", "multicast"),
    ("http://239.255.255.250/x", "multicast"),
    ("http://[ff02::1]/x", "multicast"),
    ("http://240.0.0.1/x", "reserved"),
    ("http://255.255.255.255/x", "reserved"),
    ("http://198.18.0.1/x", "private"),  # benchmarking
    ("http://192.0.0.8/x", "private"),
    ("http://[2001:db8::1]/x", "private"),  # documentation
]


@pytest.mark.parametrize(("url", "category"), LITERALS)
async def test_refused_address_literals(dns, url: str, category: str) -> None:
    err = await refused(url)
    assert (err.code, err.category) == ("URL_HOST_NOT_ALLOWED", category)
    assert dns.calls == []  # a literal is never looked up


@pytest.mark.parametrize("url", [
    "http://2130706433/x",  # decimal
    "http://0x7f000001/x",  # hex
    "http://0177.0.0.1/x",  # octal
    "http://127.1/x",  # short form
    "http://127.0.1/x",
    "http://0/x",
    "http://017700000001/x",
    "http://0x7f.0.0.1/x",
    "http://127.000.000.001/x",  # leading zeros
    "http://3232235521/x",  # 192.168.0.1
    "http://1.2.3.04/x",  # a leading zero (octal to some parsers)
    "http://134744072/x",  # 8.8.8.8 spelt as one number: refused too, spellings are never guessed
])
async def test_refused_ip_spellings(dns, url: str) -> None:
    err = await refused(url)
    assert err.code == "URL_HOST_NOT_ALLOWED" and err.category == "ip_spelling"
    assert dns.calls == []


@pytest.mark.parametrize(("url", "code"), [
    ("ftp://public.example/x.png", "URL_SCHEME_NOT_ALLOWED"),
    ("file:///etc/passwd", "URL_SCHEME_NOT_ALLOWED"),
    ("gopher://public.example:70/_x", "URL_SCHEME_NOT_ALLOWED"),
    ("javascript:alert(1)", "URL_SCHEME_NOT_ALLOWED"),
    ("data:image/png;base64,AAAA", "URL_SCHEME_NOT_ALLOWED"),
    ("//public.example/x.png", "URL_SCHEME_NOT_ALLOWED"),
    ("public.example/x.png", "URL_SCHEME_NOT_ALLOWED"),
    ("http://user:secret@public.example/x.png", "URL_CREDENTIALS_NOT_ALLOWED"),
    ("http://user@public.example/x.png", "URL_CREDENTIALS_NOT_ALLOWED"),
    ("http://:@public.example/x.png", "URL_CREDENTIALS_NOT_ALLOWED"),
    ("http://public.example\\@127.0.0.1/x", "URL_INVALID"),
    ("http://public.example /x", "URL_INVALID"),
    ("http://public.example/x\r\nHost: evil", "URL_INVALID"),
    ("http:///x.png", "URL_INVALID"),
    ("http://public.example:99999/x", "URL_INVALID"),
    ("", "URL_INVALID"),
    ("http://" + "a" * 2000 + ".example/", "URL_INVALID"),
])
async def test_refused_url_forms(dns, url: str, code: str) -> None:
    assert (await refused(url)).code == code
    assert dns.calls == []


@pytest.mark.parametrize(("url", "category"), [
    ("http://localhost/x", "loopback"),
    ("http://LOCALHOST./x", "loopback"),
    ("http://internal.example/x", "private"),
    ("http://metadata.example/latest", "metadata"),
    ("http://mixed.example/x", "private"),  # one private answer is enough to refuse
    ("http://nip.example:8080/x", "loopback"),
    ("http://v6local.example/x", "private"),
])
async def test_names_resolving_to_refused_addresses(dns, url: str, category: str) -> None:
    err = await refused(url)
    assert (err.code, err.category) == ("URL_HOST_NOT_ALLOWED", category)
    assert len(dns.calls) == 1


async def test_unknown_and_unresolvable_names(dns) -> None:
    assert (await refused("http://nowhere.example/x")).code == "URL_HOST_NOT_FOUND"
    with pytest.raises(FetchError) as exc:
        await check_url("http://slow.example/x", POLICY)
    assert (exc.value.code, exc.value.retryable) == ("DNS_UNAVAILABLE", True)


async def test_public_addresses_pass_and_are_pinned(dns) -> None:
    target = await check_url("https://public.example/a/b.png?x=1", POLICY)
    assert (target.host, target.port, target.addresses) == ("public.example", 443, ("93.184.216.34",))
    target = await check_url("http://public6.example:8080/v.mp4", POLICY)
    assert target.addresses == ("2606:4700::1111",) and target.port == 8080
    target = await check_url("http://93.184.216.34/x", POLICY)
    assert target.addresses == ("93.184.216.34",)


async def test_allow_hosts_relaxes_private_ranges_only(dns) -> None:
    policy = FetchPolicy(max_bytes=10, allow_hosts=frozenset({"internal.example", "localhost", "127.0.0.1",
                                                              "metadata.example"}))
    assert (await check_url("http://internal.example/x", policy)).addresses == ("10.1.2.3",)
    assert (await check_url("http://localhost:9/x", policy)).addresses == ("127.0.0.1", "::1")
    assert (await check_url("http://127.0.0.1:9/x", policy)).addresses == ("127.0.0.1",)
    # metadata, unspecified, multicast and reserved addresses are never allowed
    assert (await refused("http://metadata.example/x", policy)).category == "metadata"
    dns.table["localhost"] = ["0.0.0.0"]
    assert (await refused("http://localhost/x", policy)).category == "unspecified"
    # the allow-list is by name: another name (or spelling) resolving to the same address is still refused
    assert (await refused("http://nip.example/x", policy)).category == "loopback"
    assert (await refused("http://[::1]/x", policy)).category == "loopback"


def test_policy_from_settings_normalises_hosts() -> None:
    settings = SimpleNamespace(fetch_allow_hosts=("Media.Test.", "[::1]"))
    assert FetchPolicy.from_settings(settings, max_bytes=1).allow_hosts == frozenset({"media.test", "::1"})


# -- fetching from a loopback server the policy allows by name ---------------------------------------------------

@pytest.fixture
def server(dns):
    srv = FileServer().start()
    dns.table["media.test"] = ["127.0.0.1"]
    dns.table["internal.test"] = ["127.0.0.1"]  # same server, but not allow-listed
    yield srv
    srv.stop()


ALLOWED = FetchPolicy(max_bytes=1000, allow_hosts=frozenset({"media.test"}), read_timeout=2.0,
                      allowed_content_types=frozenset({"image/png"}))


async def fetch_all(url: str, policy: FetchPolicy = ALLOWED) -> tuple[fetch.FetchResponse, bytes]:
    async with open_url(url, policy) as response:
        body = b"".join([chunk async for chunk in response.chunks()])
    return response, body


async def test_fetch_from_allowed_host_pins_the_checked_address(server, dns) -> None:
    server.routes["/a.png"] = Reply(body=b"P" * 100, headers={"Content-Type": "image/png; charset=binary"})
    response, body = await fetch_all(server.url("/a.png", host="media.test"))
    assert body == b"P" * 100 and response.content_type == "image/png" and response.content_length == 100
    assert server.hits == ["/a.png"]
    # the request went to the checked address with the name in Host: the HTTP client did no lookup of its own
    # (media.test exists only in the fake resolver, which was asked exactly once)
    assert server.host_headers == [f"media.test:{server.port}"]
    assert dns.calls == ["media.test"]


@pytest.mark.parametrize("location", [
    "http://127.0.0.1:{port}/secret",  # a literal loopback address (not allow-listed)
    "http://internal.test:{port}/secret",  # a name resolving to loopback (not allow-listed)
    "http://169.254.169.254/latest/meta-data/iam/",
    "http://[::ffff:127.0.0.1]:{port}/secret",
    "http://2130706433:{port}/secret",
    "file:///etc/passwd",
    "http://user:pw@media.test:{port}/secret",
])
async def test_redirects_to_refused_destinations_are_not_followed(server, location: str) -> None:
    server.routes["/start"] = Reply(302, headers={"Location": location.format(port=server.port)})
    server.routes["/secret"] = Reply(body=b"S" * 10, headers={"Content-Type": "image/png"})
    with pytest.raises(FetchError) as exc:
        await fetch_all(server.url("/start", host="media.test"))
    assert exc.value.code in ("URL_HOST_NOT_ALLOWED", "URL_SCHEME_NOT_ALLOWED", "URL_CREDENTIALS_NOT_ALLOWED")
    assert server.hits == ["/start"]  # the second hop was never requested


async def test_redirects_are_followed_within_the_limit(server) -> None:
    server.routes["/r1"] = Reply(301, headers={"Location": "/r2"})
    server.routes["/r2"] = Reply(307, headers={"Location": server.url("/a.png", host="media.test")})
    server.routes["/a.png"] = Reply(body=b"x" * 5, headers={"Content-Type": "image/png"})
    response, body = await fetch_all(server.url("/r1", host="media.test"))
    assert body == b"x" * 5 and response.redirects == 2
    server.hits.clear()
    for i in range(5):
        server.routes[f"/loop{i}"] = Reply(302, headers={"Location": f"/loop{i + 1}"})
    with pytest.raises(FetchError, match="TOO_MANY_REDIRECTS"):
        await fetch_all(server.url("/loop0", host="media.test"))
    assert server.hits == ["/loop0", "/loop1", "/loop2", "/loop3"]  # 3 redirects followed, no 4th


@pytest.mark.parametrize(("reply", "code", "retryable"), [
    (Reply(body=b"x" * 10, headers={"Content-Type": "image/png"}, content_length=None), "CONTENT_LENGTH_REQUIRED",
     False),
    (Reply(body=b"x" * 10, headers={"Content-Type": "image/png"}, content_length=2000), "TOO_LARGE", False),
    (Reply(body=b"<html>", headers={"Content-Type": "text/html"}), "CONTENT_TYPE_NOT_ALLOWED", False),
    (Reply(body=b"x", headers={"Content-Type": "image/png", "Content-Encoding": "gzip"}),
     "CONTENT_ENCODING_NOT_ALLOWED", False),
    (Reply(404, body=b"no"), "HTTP_STATUS", False),
    (Reply(503, body=b"busy"), "HTTP_STATUS", True),
    (Reply(302), "REDIRECT_INVALID", False),
])
async def test_response_rules(server, reply: Reply, code: str, retryable: bool) -> None:
    server.routes["/f"] = reply
    with pytest.raises(FetchError) as exc:
        await fetch_all(server.url("/f", host="media.test"))
    assert (exc.value.code, exc.value.retryable) == (code, retryable)


async def test_body_shorter_than_content_length(server) -> None:
    server.routes["/f"] = Reply(body=b"x" * 10, headers={"Content-Type": "image/png"}, content_length=50)
    with pytest.raises(FetchError) as exc:
        await fetch_all(server.url("/f", host="media.test"))
    assert exc.value.code in ("LENGTH_MISMATCH", "CONNECTION_FAILED")


async def test_read_timeout(server) -> None:
    server.routes["/slow"] = Reply(body=b"x", headers={"Content-Type": "image/png"}, delay=1.5)
    policy = FetchPolicy(max_bytes=10, allow_hosts=frozenset({"media.test"}), read_timeout=0.3)
    with pytest.raises(FetchError) as exc:
        await fetch_all(server.url("/slow", host="media.test"), policy)
    assert (exc.value.code, exc.value.retryable) == ("TIMEOUT", True)


async def test_total_deadline(server) -> None:
    server.routes["/slow"] = Reply(body=b"x", headers={"Content-Type": "image/png"}, delay=1.5)
    policy = FetchPolicy(max_bytes=10, allow_hosts=frozenset({"media.test"}), read_timeout=10, total_timeout=0.3)
    with pytest.raises(FetchError, match="TIMEOUT"):
        await fetch_all(server.url("/slow", host="media.test"), policy)


async def test_connection_refused_is_retryable(dns) -> None:
    srv = FileServer().start()
    port = srv.port
    srv.stop()  # nothing listens there any more
    dns.table["media.test"] = ["127.0.0.1"]
    with pytest.raises(FetchError) as exc:
        await fetch_all(f"http://media.test:{port}/x")
    assert (exc.value.code, exc.value.retryable) == ("CONNECTION_FAILED", True)


def _self_signed(tmp_path, name: str):
    """A certificate for `name` (a SAN), and a client context that trusts exactly it."""
    import datetime
    import ssl

    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "c.pem").write_bytes(cert_pem)
    (tmp_path / "k.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    client_ctx = ssl.create_default_context(cadata=cert_pem.decode())
    return server_ctx, client_ctx


@pytest.mark.parametrize(("cert_name", "ok"), [("media.test", True), ("other.test", False)])
async def test_https_is_pinned_and_verified_by_name(tmp_path, dns, cert_name: str, ok: bool) -> None:
    """The connection goes to the checked IP, while SNI and the certificate check use the URL's name."""
    server_ctx, client_ctx = _self_signed(tmp_path, cert_name)
    srv = FileServer(tls=server_ctx).start()
    try:
        dns.table["media.test"] = ["127.0.0.1"]
        srv.routes["/a.png"] = Reply(body=b"TLS", headers={"Content-Type": "image/png"})
        policy = FetchPolicy(max_bytes=100, allow_hosts=frozenset({"media.test"}), verify=client_ctx)
        if ok:
            _, body = await fetch_all(srv.url("/a.png", host="media.test"), policy)
            assert body == b"TLS" and srv.host_headers == [f"media.test:{srv.port}"]
        else:
            with pytest.raises(FetchError) as exc:
                await fetch_all(srv.url("/a.png", host="media.test"), policy)
            assert (exc.value.code, exc.value.retryable) == ("TLS_FAILED", False)
            assert srv.hits == []
    finally:
        srv.stop()
