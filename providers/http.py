"""HTTP for network adapters: one client per base URL, and one classification of failures into error kinds.

Every adapter calls networks through `call`, so timeouts, transport errors and HTTP statuses become the same
`ProviderError` kinds everywhere: 401 → reauth_required, 429 → rate_limited (with the server's wait), 5xx and
timeouts → transient, 502/503/504 → unavailable, other 4xx → rejected. An adapter that knows better (Bluesky
answers 400 `ExpiredToken`) passes `classify` to map its own error bodies first. Response bodies never reach a
message a client sees: `safe_reason` is the adapter's own sentence, and log messages carry status and path only.
"""

from __future__ import annotations

import email.utils
import functools
import logging
import ssl
import time
from collections.abc import Callable
from typing import Any

import certifi
import httpx

from providers.addresses import PinnedTransport
from providers.base import ProviderError

MEDIA_MAX_BYTES = 200 * 1024 * 1024  # largest file an adapter downloads to upload (above every network's cap)


class _HideRequestPaths(logging.Filter):
    """httpx logs every request URL at INFO; some networks put the credential in the path (Telegram's
    `/bot<token>/`, Discord's `/webhooks/<id>/<token>`), so only scheme and host reach the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 2:
            url = record.args[1]
            if isinstance(url, httpx.URL):
                record.args = (record.args[0], f"{url.scheme}://{url.host}/…", *record.args[2:])
        return True


logging.getLogger("httpx").addFilter(_HideRequestPaths())

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
USER_AGENT = "socialpub (+https://github.com/socialpub)"
RETRY_AFTER_MAX = 3600.0  # a wait longer than an hour is treated as an hour; the worker's backoff bounds it anyway

# Maps a response to a ProviderError (or None to fall back to the status rules).
Classifier = Callable[[httpx.Response], ProviderError | None]


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one costs ~17 ms, more than a local request (httpx's default
    verification, certifi's CA bundle)."""
    return ssl.create_default_context(cafile=certifi.where())


def new_client(base_url: str = "", *, timeout: httpx.Timeout = DEFAULT_TIMEOUT, **kwargs: Any) -> httpx.AsyncClient:
    """A client for a network's API. Its connections go through the address policy (providers/addresses.py):
    the host is resolved when a connection opens and only a checked address is connected to, so a stored base
    URL (a Mastodon instance, a Bluesky PDS) that now resolves to a private address never receives the
    credential. A `transport` given explicitly (tests) replaces it."""
    headers = {"User-Agent": USER_AGENT, **kwargs.pop("headers", {})}
    verify = kwargs.pop("verify", None)
    if kwargs.get("transport") is None:
        kwargs["transport"] = PinnedTransport(verify=ssl_context() if verify is None else verify)
    return httpx.AsyncClient(base_url=base_url, timeout=timeout, headers=headers, follow_redirects=False,
                             trust_env=False, **kwargs)


def retry_after(response: httpx.Response, now: float | None = None) -> float | None:
    """Seconds to wait, from `Retry-After` (seconds or an HTTP date) or the `ratelimit-reset` /
    `x-ratelimit-reset` headers (epoch seconds, as Bluesky and Mastodon send them)."""
    now = time.time() if now is None else now
    value = response.headers.get("retry-after")
    if value:
        value = value.strip()
        if value.isdigit():
            return min(float(value), RETRY_AFTER_MAX)
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            when = None
        if when is not None:
            return min(max(when.timestamp() - now, 0.0), RETRY_AFTER_MAX)
    for name in ("ratelimit-reset", "x-ratelimit-reset"):
        value = response.headers.get(name)
        if value:
            try:
                reset = float(value)
            except ValueError:
                continue
            # Epoch seconds when large, else seconds from now (both forms exist in the wild).
            wait = reset - now if reset > 1_000_000_000 else reset
            return min(max(wait, 0.0), RETRY_AFTER_MAX)
    return None


def status_error(response: httpx.Response, network: str) -> ProviderError:
    """The error kind an HTTP status means, with a log message that names status and path only."""
    status = response.status_code
    where = f"{network} answered {status} to {response.request.method} {response.request.url.path}"
    if status == 401:
        return ProviderError("reauth_required", where,
                             safe_reason=f"{network} no longer accepts the account's authorisation.")
    if status == 429:
        return ProviderError("rate_limited", where, retry_after=retry_after(response))
    if status in (502, 503, 504):
        return ProviderError("unavailable", where, retry_after=retry_after(response))
    if status >= 500:
        return ProviderError("transient", where)
    if status == 403:
        return ProviderError("rejected", where, safe_reason=f"{network} refused the post: the account lacks "
                                                            "permission for it.")
    return ProviderError("rejected", where, safe_reason=f"{network} refused the post.")


async def call(client: httpx.AsyncClient, method: str, url: str, *, network: str,
               classify: Classifier | None = None, **kwargs: Any) -> httpx.Response:
    """One request; a 2xx/3xx response is returned, anything else raises a classified ProviderError."""
    try:
        response = await client.request(method, url, **kwargs)
    except httpx.TimeoutException as exc:
        raise ProviderError("transient", f"{network} timed out ({type(exc).__name__})") from None
    except httpx.TransportError as exc:
        raise ProviderError("transient", f"{network} could not be reached ({type(exc).__name__})") from None
    if response.is_success or response.is_redirect:
        return response
    if classify is not None:
        error = classify(response)
        if error is not None:
            raise error
    raise status_error(response, network)


def json_body(response: httpx.Response, network: str) -> Any:
    """The response's JSON, or a `malformed` error when the network answered something else."""
    try:
        return response.json()
    except ValueError:
        raise ProviderError("malformed", f"{network} answered {response.status_code} with a body that is not JSON "
                                         f"to {response.request.url.path}") from None


async def download(url: str, network: str, *, max_bytes: int = MEDIA_MAX_BYTES) -> bytes:
    """A media file of the post (served by this service's media URL) to upload to the network. A file that
    cannot be read is transient (the media service may be restarting); one over `max_bytes` is rejected. The URL
    is this service's own (SOCIALPUB_MEDIA_URL, often a private address) and carries no credential, so it is
    not subject to the address policy."""
    async with new_client(transport=httpx.AsyncHTTPTransport(verify=ssl_context())) as client:
        try:
            async with client.stream("GET", url) as response:
                if not response.is_success:
                    raise ProviderError("transient", f"media download for {network} answered {response.status_code}")
                chunks, size = [], 0
                async for chunk in response.aiter_bytes():
                    size += len(chunk)
                    if size > max_bytes:
                        raise ProviderError("rejected", f"media for {network} is over {max_bytes} bytes",
                                            safe_reason=f"{network} refused the post: a media file is too large.")
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx.TimeoutException:
            raise ProviderError("transient", f"media download for {network} timed out") from None
        except httpx.TransportError as exc:
            raise ProviderError("transient", f"media download for {network} failed ({type(exc).__name__})") from None


def file_name(media: dict[str, Any], index: int) -> str:
    """A plain file name for an upload: `file0.jpg` (networks want an extension they recognise)."""
    subtype = str(media.get("content_type") or "application/octet-stream").split("/")[-1].split(";")[0]
    ext = {"jpeg": "jpg", "quicktime": "mov", "octet-stream": "bin"}.get(subtype, subtype)
    return f"file{index}.{ext if ext.isalnum() else 'bin'}"
