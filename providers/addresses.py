"""Which IP addresses outbound HTTP may reach, and a transport that connects only to addresses it checked.

One address policy for every outbound call: media imports and website scans (tools/services/fetch.py) and the
network adapters (providers/http.py `new_client`), whose base URLs are often stored from a user (a Mastodon
instance, a Bluesky PDS). A name is judged by every address it resolves to, at connection time:

- always refused: unspecified, multicast, reserved/broadcast and cloud metadata addresses;
- refused unless the host is allowed by name (SOCIALPUB_FETCH_ALLOW_HOSTS): loopback, private, link-local,
  CGNAT/shared, site-local and other non-global ranges. IPv6 forms embedding an IPv4 address (IPv4-mapped,
  IPv4-compatible, 6to4, NAT64, Teredo) are judged by the embedded address as well.

`PinnedTransport` resolves the host when it opens a connection, checks every answer and connects to a checked
address (the next one when a connection is refused): the HTTP client never resolves the name itself, so a name
that resolved to a public address when the account was connected and to 10.0.0.1 later (DNS rebinding, an
allow-list entry removed) is refused before any byte, and any credential, leaves. The URL keeps the name, so the
`Host` header, TLS SNI and certificate verification are for the name; connections are pooled per name.
Environment proxies are not used (a proxy would resolve the name itself).

The hosts allowed to be private come from the caller's context (`allowing`), set by the service from its
settings around every adapter call; outside it nothing private is allowed.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import anyio
import httpcore
import httpx

from providers.base import ProviderError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean...
    "169.254.170.2",  # AWS ECS task metadata
    "100.100.100.200",  # Alibaba Cloud
    "fd00:ec2::254",  # AWS IPv6 metadata
))
# Non-global ranges that ipaddress's flags miss or report as global.
_EXTRA_NON_PUBLIC = tuple(ipaddress.ip_network(n) for n in (
    "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "192.88.99.0/24", "fec0::/10", "64:ff9b:1::/48",
    "100::/64",
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")

CATEGORY_TEXT = {
    "metadata": "a cloud metadata address", "unspecified": "an unspecified address", "multicast": "a multicast address",
    "reserved": "a reserved address", "loopback": "a loopback address", "link_local": "a link-local address",
    "private": "a private or non-public address",
}
RESOLVE_TIMEOUT = 5.0


class AddressRefused(ProviderError):
    """A connection refused by the address policy before it was opened. For an adapter it is
    `reauth_required`: the account's address must be checked again by reconnecting it (or the operator allows
    the host). `category` says why (loopback, private, metadata...)."""

    def __init__(self, host: str, category: str) -> None:
        super().__init__("reauth_required", f"refused to connect to {host[:100]}: it resolves to "
                                            f"{CATEGORY_TEXT[category]} ({category})",
                         safe_reason=f"The account's server address now resolves to {CATEGORY_TEXT[category]}, "
                                     "so the call was refused before connecting and no credential was sent. "
                                     "Reconnect the account once its address is public again (or, for a server "
                                     "meant to be private, the operator allows its host in "
                                     "SOCIALPUB_FETCH_ALLOW_HOSTS).")
        self.host = host
        self.category = category


class ResolveFailed(httpx.ConnectError):
    """The name did not resolve to an IP address; `retryable` when the resolver may answer later. An
    httpx.ConnectError, so a client that does not look closer treats it as a connection failure (transient)."""

    def __init__(self, retryable: bool) -> None:
        super().__init__("the host name could not be resolved" + (" right now" if retryable else ""))
        self.retryable = retryable


def normalise_host(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


# -- the policy ----------------------------------------------------------------------------------------------

def _embedded_v4(addr: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    if addr.sixtofour is not None:
        return addr.sixtofour
    if addr in _NAT64:
        return ipaddress.IPv4Address(addr.packed[-4:])
    if addr.packed[:12] == bytes(12) and int(addr) > 1:  # IPv4-compatible ::a.b.c.d (deprecated)
        return ipaddress.IPv4Address(addr.packed[-4:])
    if addr.teredo is not None:
        return addr.teredo[1]
    return None


def address_problem(addr: IPAddress) -> tuple[str, bool] | None:
    """Why an address may not be reached: (category, allowable for allow-listed hosts), or None if public."""
    if addr in METADATA_ADDRESSES:
        return "metadata", False
    if isinstance(addr, ipaddress.IPv6Address):
        inner = _embedded_v4(addr)
        if inner is not None:
            problem = address_problem(inner)
            if problem is not None:
                return problem
    if addr.is_unspecified or (isinstance(addr, ipaddress.IPv4Address) and addr in _THIS_NETWORK):
        return "unspecified", False
    if addr.is_multicast:
        return "multicast", False
    if addr.is_loopback:
        return "loopback", True
    if addr.is_link_local:
        return "link_local", True
    if isinstance(addr, ipaddress.IPv4Address) and addr.is_reserved:
        return "reserved", False
    if addr.is_private:
        return "private", True
    if any(addr in net for net in _EXTRA_NON_PUBLIC if net.version == addr.version):
        return "private", True
    if addr.is_reserved:
        return "reserved", False
    if not addr.is_global:
        return "private", True
    return None


def refusal(addr: IPAddress, host: str, allow_hosts: frozenset[str]) -> str | None:
    """The category for which `host` may not connect to `addr`, or None when it may."""
    problem = address_problem(addr)
    if problem is None:
        return None
    category, allowable = problem
    return None if allowable and host in allow_hosts else category


def literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]).split("%", 1)[0] for info in infos]


# Tests replace this to simulate DNS answers; production uses the system resolver.
resolve_host: Resolver = system_resolver


async def resolve_checked(host: str, port: int, allow_hosts: frozenset[str],
                          timeout: float = RESOLVE_TIMEOUT) -> tuple[str, ...]:
    """Every address `host` resolves to, each checked (a name answering one public and one private address is
    refused): AddressRefused for a refused address, ResolveFailed when the name does not resolve."""
    host = normalise_host(host)
    found = literal(host)
    if found is not None:
        answers = [str(found)]
    else:
        try:
            with anyio.fail_after(timeout):
                answers = await resolve_host(host, port)
        except TimeoutError:
            raise ResolveFailed(retryable=True) from None
        except socket.gaierror as exc:
            raise ResolveFailed(retryable=exc.errno == socket.EAI_AGAIN) from None
        except OSError:
            raise ResolveFailed(retryable=False) from None
    addresses: list[str] = []
    for answer in answers:
        addr = literal(answer)
        if addr is None:
            raise ResolveFailed(retryable=False)
        category = refusal(addr, host, allow_hosts)
        if category is not None:
            raise AddressRefused(host, category)
        if str(addr) not in addresses:
            addresses.append(str(addr))
    if not addresses:
        raise ResolveFailed(retryable=False)
    return tuple(addresses)


# -- the hosts allowed to be private, from the caller's context ------------------------------------------------

_ALLOWED: ContextVar[frozenset[str]] = ContextVar("socialpub_private_hosts_allowed", default=frozenset())


@contextmanager
def allowing(hosts: Iterable[str]) -> Iterator[None]:
    """Within this block, clients made by `PinnedTransport` may reach these hosts on private addresses."""
    token = _ALLOWED.set(frozenset(normalise_host(h) for h in hosts))
    try:
        yield
    finally:
        _ALLOWED.reset(token)


def allowed_hosts() -> frozenset[str]:
    return _ALLOWED.get()


# -- the transport -------------------------------------------------------------------------------------------

class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend with the policy in `connect_tcp`: resolve, check, connect to a checked IP."""

    def __init__(self, allow_hosts: frozenset[str], resolve_timeout: float) -> None:
        self._allow_hosts, self._resolve_timeout = allow_hosts, resolve_timeout
        # httpcore declares AnyIOBackend twice (the real one, and a stand-in raising when anyio is missing) and
        # pyright reads the stand-in; anyio is a dependency here, so it is the real AsyncNetworkBackend.
        self._backend: httpcore.AsyncNetworkBackend = httpcore.AnyIOBackend()  # pyright: ignore[reportAttributeAccessIssue]  # see above

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        addresses = await resolve_checked(host, port, self._allow_hosts, self._resolve_timeout)
        failure: Exception = httpcore.ConnectError("no address accepted the connection")
        for address in addresses:
            try:
                return await self._backend.connect_tcp(address, port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # refused or unreachable: the next checked address
                failure = exc
        raise failure

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable through the address policy")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


def _httpx_error(exc: Exception) -> Exception:
    """httpcore's exception as httpx's class of the same name (the mapping httpx's own transport makes)."""
    cls = getattr(httpx, type(exc).__name__, None)
    if isinstance(cls, type) and issubclass(cls, httpx.TransportError):
        return cls(str(exc))
    return httpx.TransportError(str(exc))


_HTTPCORE_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
                    httpcore.UnsupportedProtocol)


class _Body(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self._stream:
                yield part
        except _HTTPCORE_ERRORS as exc:
            raise _httpx_error(exc) from exc

    async def aclose(self) -> None:
        if hasattr(self._stream, "aclose"):
            await self._stream.aclose()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport on httpcore's connection pool whose connections open only to checked addresses.
    `allow_hosts`: names allowed to be private; None takes them from the context (`allowing`) now. Raises
    AddressRefused (a ProviderError) or ResolveFailed (an httpx.ConnectError) before any connection opens."""

    def __init__(self, *, verify: ssl.SSLContext, allow_hosts: Iterable[str] | None = None,
                 resolve_timeout: float = RESOLVE_TIMEOUT) -> None:
        allowed = allowed_hosts() if allow_hosts is None else frozenset(normalise_host(h) for h in allow_hosts)
        self._pool = httpcore.AsyncConnectionPool(ssl_context=verify,
                                                  network_backend=_CheckedBackend(allowed, resolve_timeout))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port,
                           target=request.url.raw_path)
        core = httpcore.Request(method=request.method, url=url, headers=request.headers.raw,
                                content=request.stream, extensions=request.extensions)
        try:
            response = await self._pool.handle_async_request(core)
        except _HTTPCORE_ERRORS as exc:
            raise _httpx_error(exc) from exc
        return httpx.Response(status_code=response.status, headers=response.headers, stream=_Body(response.stream),
                              extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()
