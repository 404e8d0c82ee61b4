"""SSRF-safe HTTP(S) fetching of caller-supplied URLs (media imports, website scans).

Policy, applied to the first URL and again to every redirect hop:
- scheme http or https only; no credentials in the URL; no control characters, spaces or backslashes;
- an IPv4 host must be canonical dotted decimal (2130706433, 0x7f000001, 0177.0.0.1 and 127.1 are refused);
- the host (or every address its name resolves to) must be a public unicast address. Always refused:
  unspecified, multicast, reserved/broadcast and cloud metadata addresses. Refused unless the host is
  named in `FetchPolicy.allow_hosts` (SOCIALPUB_FETCH_ALLOW_HOSTS): loopback, private, link-local,
  CGNAT/shared, site-local and other non-global ranges. IPv6 forms embedding an IPv4 address
  (IPv4-mapped, IPv4-compatible, 6to4, NAT64) are judged by the embedded address as well;
- the connection goes to an address that was checked (pinned by `providers.addresses.PinnedTransport`, the
  transport the network adapters use too: the host is resolved and checked when each connection opens, and
  the HTTP client never resolves the name itself, so DNS rebinding cannot redirect it); `Host` and TLS
  SNI/certificate checks still use the name. Environment proxies are ignored.
- the response must be 200 with an exact Content-Length within `max_bytes`, no Content-Encoding, and an
  allowed Content-Type; the body is streamed and must be exactly Content-Length bytes; connect, read and
  total deadlines apply.

Use `check_url` for a synchronous up-front check and `open_url` to fetch:

    async with open_url(url, policy) as response:
        async for chunk in response.chunks(): ...
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from providers import addresses
from providers.addresses import normalise_host
from providers.http import ssl_context

REDIRECT_STATUSES = (301, 302, 303, 307, 308)
OCTET_STREAM = ("application/octet-stream", "binary/octet-stream")
USER_AGENT = "socialpub-fetch/1 (+media import)"
CHUNK = 64 * 1024

_NUMERIC_LABEL = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")
_CANONICAL_V4 = re.compile(r"^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$")
_BAD_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


class FetchError(Exception):
    """A refused or failed fetch. `code` is stable; `message` is safe to show (it never echoes the URL)."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, category: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retryable = retryable
        self.category = category  # for refused addresses: loopback, private, metadata...


@dataclass(frozen=True)
class FetchPolicy:
    max_bytes: int
    allowed_content_types: frozenset[str] | None = None  # None: any
    allow_hosts: frozenset[str] = frozenset()  # lower-case names (or IP literals) allowed to be non-public
    max_redirects: int = 3
    connect_timeout: float = 5.0
    read_timeout: float = 15.0
    total_timeout: float = 300.0
    resolve_timeout: float = 5.0
    require_content_length: bool = True
    headers: dict[str, str] = field(default_factory=dict)
    verify: Any = True  # TLS verification: True (system CAs) or an ssl.SSLContext (e.g. a private CA)

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> FetchPolicy:
        return cls(allow_hosts=frozenset(normalise_host(h) for h in settings.fetch_allow_hosts), **kwargs)


@dataclass(frozen=True)
class Target:
    url: httpx.URL
    host: str  # normalised (lower case, no trailing dot, no brackets)
    port: int
    addresses: tuple[str, ...]  # the addresses checked now (open_url checks again when it connects)


def _refused(category: str) -> FetchError:
    return FetchError("URL_HOST_NOT_ALLOWED",
                      f"The URL's host is or resolves to {addresses.CATEGORY_TEXT[category]}; only public addresses "
                      "may be fetched. Use a public http(s) URL.", category=category)


# -- URL policy ----------------------------------------------------------------------------------------------

def parse_url(url: str) -> tuple[httpx.URL, str, int]:
    """Syntax, scheme, credentials and IP-spelling checks (no DNS). Returns (url, host, port)."""
    if not isinstance(url, str) or not url or len(url) > 2000 or _BAD_URL_CHARS.search(url):
        raise FetchError("URL_INVALID", "The URL is not a valid absolute http(s) URL (no spaces, control characters "
                                        "or backslashes).")
    try:
        raw = urlsplit(url)
        raw_host = raw.hostname or ""
        raw.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        raise FetchError("URL_INVALID", "The URL is not a valid absolute http(s) URL.") from None
    if raw.scheme.lower() not in ("http", "https"):
        raise FetchError("URL_SCHEME_NOT_ALLOWED", "Only http and https URLs can be fetched.")
    if "@" in raw.netloc or raw.username is not None or raw.password is not None:
        raise FetchError("URL_CREDENTIALS_NOT_ALLOWED", "URLs with credentials (user:password@) are refused; use a "
                                                        "public URL that needs no login.")
    _check_ip_spelling(normalise_host(raw_host))
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        raise FetchError("URL_INVALID", "The URL is not a valid absolute http(s) URL.") from None
    host = normalise_host(parsed.host)
    if not host or parsed.scheme not in ("http", "https"):
        raise FetchError("URL_INVALID", "The URL is not a valid absolute http(s) URL.")
    if parsed.userinfo:
        raise FetchError("URL_CREDENTIALS_NOT_ALLOWED", "URLs with credentials (user:password@) are refused.")
    _check_ip_spelling(host)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    return parsed, host, port


def _check_ip_spelling(host: str) -> None:
    # Per the WHATWG URL standard a host whose last label is numeric is an IPv4 address; resolvers accept
    # decimal, hex, octal and short forms (127.1). Only the canonical dotted-decimal form is accepted.
    if ":" in host:
        return  # IPv6 literal
    last = host.rsplit(".", 1)[-1]
    if _NUMERIC_LABEL.match(last) and not _CANONICAL_V4.match(host):
        raise FetchError("URL_HOST_NOT_ALLOWED", "IPv4 addresses must be written as four decimal numbers "
                                                 "(e.g. 203.0.113.7); other spellings are refused.",
                         category="ip_spelling")


async def check_url(url: str, policy: FetchPolicy) -> Target:
    """Everything but the request: syntax, scheme, credentials, resolution and the address policy. Every
    resolved address must pass (a name answering with one public and one private address is refused)."""
    parsed, host, port = parse_url(url)
    try:
        checked = await addresses.resolve_checked(host, port, policy.allow_hosts, policy.resolve_timeout)
    except addresses.AddressRefused as exc:
        raise _refused(exc.category) from None
    except addresses.ResolveFailed as exc:
        raise _unresolved(exc) from None
    return Target(parsed, host, port, checked)


def _unresolved(exc: addresses.ResolveFailed) -> FetchError:
    if exc.retryable:
        return FetchError("DNS_UNAVAILABLE", "The URL's host name could not be resolved right now; try again later.",
                          retryable=True)
    return FetchError("URL_HOST_NOT_FOUND", "The URL's host name does not resolve; check the URL.")


# -- fetching ------------------------------------------------------------------------------------------------

@dataclass
class FetchResponse:
    url: str  # final URL (after redirects)
    status: int
    content_type: str  # media type, lower case, without parameters
    content_length: int | None
    redirects: int
    _response: httpx.Response
    _deadline: float
    _policy: FetchPolicy

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        """The body, exactly Content-Length bytes (else FetchError), within the read and total deadlines."""
        received = 0
        raw = self._response.aiter_raw(CHUNK)
        while True:
            remaining = self._deadline - anyio.current_time()
            if remaining <= 0:
                raise FetchError("TIMEOUT", "The remote server took too long to send the file.", retryable=True)
            try:
                with anyio.fail_after(min(remaining, self._policy.read_timeout)):
                    chunk = await raw.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise FetchError("TIMEOUT", "The remote server stopped sending the file.", retryable=True) from None
            except httpx.HTTPError:
                raise FetchError("CONNECTION_FAILED", "The connection broke while downloading the file.",
                                 retryable=True) from None
            received += len(chunk)
            limit = self.content_length if self.content_length is not None else self._policy.max_bytes
            if received > limit:
                raise FetchError("LENGTH_MISMATCH" if self.content_length is not None else "TOO_LARGE",
                                 "The remote server sent more bytes than it announced.")
            yield chunk
        if self.content_length is not None and received != self.content_length:
            raise FetchError("LENGTH_MISMATCH", "The remote server sent fewer bytes than its Content-Length.",
                             retryable=True)


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


@asynccontextmanager
async def open_url(url: str, policy: FetchPolicy) -> AsyncIterator[FetchResponse]:
    """GET `url` under `policy`, following up to `max_redirects` redirects, each checked again and pinned: the
    connections go through `providers.addresses.PinnedTransport`, which resolves each host when it connects,
    checks every answer and connects only to a checked address (the next one when a connection is refused)."""
    deadline = anyio.current_time() + policy.total_timeout
    timeout = httpx.Timeout(connect=policy.connect_timeout, read=policy.read_timeout, write=policy.read_timeout,
                            pool=policy.connect_timeout)
    verify = ssl_context() if policy.verify is True else policy.verify
    transport = addresses.PinnedTransport(verify=verify, allow_hosts=policy.allow_hosts,
                                          resolve_timeout=policy.resolve_timeout)
    async with httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False,
                                 timeout=timeout) as client:
        current = url
        for hop in range(policy.max_redirects + 1):
            parsed, _, _ = parse_url(current)
            response = await _send(client, parsed, policy, deadline)
            try:
                if response.status_code in REDIRECT_STATUSES:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchError("REDIRECT_INVALID", "The remote server sent a redirect without a location.")
                    if hop == policy.max_redirects:
                        raise FetchError("TOO_MANY_REDIRECTS",
                                         f"The URL redirected more than {policy.max_redirects} times.")
                    try:
                        current = str(parsed.join(location))
                    except (httpx.InvalidURL, ValueError):
                        raise FetchError("REDIRECT_INVALID", "The remote server redirected to an invalid URL.") from None
                    continue
                yield _accept(response, parsed, policy, hop, deadline)
                return
            finally:
                await response.aclose()
    raise AssertionError("unreachable")  # pragma: no cover


async def _send(client: httpx.AsyncClient, url: httpx.URL, policy: FetchPolicy, deadline: float) -> httpx.Response:
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity", **policy.headers}
    remaining = deadline - anyio.current_time()
    try:
        with anyio.fail_after(max(remaining, 0.001)):
            return await client.send(client.build_request("GET", url, headers=headers), stream=True)
    except addresses.AddressRefused as exc:
        raise _refused(exc.category) from None
    except addresses.ResolveFailed as exc:
        raise _unresolved(exc) from None
    except (TimeoutError, httpx.TimeoutException):
        raise FetchError("TIMEOUT", "The remote server did not answer in time.", retryable=True) from None
    except httpx.ConnectError as exc:
        text = str(exc).upper()
        if "CERTIFICATE" in text or "SSL" in text:
            raise FetchError("TLS_FAILED", "The remote server's TLS certificate could not be verified.") from None
        raise FetchError("CONNECTION_FAILED", "Could not connect to the remote server.", retryable=True) from None
    except httpx.HTTPError:
        raise FetchError("CONNECTION_FAILED", "The remote server's answer could not be read.",
                         retryable=True) from None


def _accept(response: httpx.Response, url: httpx.URL, policy: FetchPolicy, redirects: int,
            deadline: float) -> FetchResponse:
    status = response.status_code
    if status != 200:
        retryable = status == 429 or status >= 500
        raise FetchError("HTTP_STATUS", f"The remote server answered HTTP {status} instead of 200.",
                         retryable=retryable)
    encoding = _media_type(response.headers.get("content-encoding"))
    if encoding not in ("", "identity"):
        raise FetchError("CONTENT_ENCODING_NOT_ALLOWED", "The remote server sent a compressed (Content-Encoding) "
                                                         "body; serve the file uncompressed.")
    length_header = response.headers.get("content-length")
    length: int | None = None
    if length_header is not None:
        if not length_header.strip().isdigit():
            raise FetchError("CONTENT_LENGTH_REQUIRED", "The remote server sent an invalid Content-Length.")
        length = int(length_header)
    if length is None and policy.require_content_length:
        raise FetchError("CONTENT_LENGTH_REQUIRED", "The remote server did not announce an exact Content-Length; "
                                                    "use a URL whose server does.")
    if length is not None and length > policy.max_bytes:
        raise FetchError("TOO_LARGE", f"The file is larger than the {policy.max_bytes}-byte limit.")
    content_type = _media_type(response.headers.get("content-type"))
    if policy.allowed_content_types is not None and content_type not in policy.allowed_content_types:
        raise FetchError("CONTENT_TYPE_NOT_ALLOWED", "The remote server's Content-Type is not a supported type.")
    return FetchResponse(url=str(url), status=status, content_type=content_type, content_length=length,
                         redirects=redirects, _response=response, _deadline=deadline, _policy=policy)
