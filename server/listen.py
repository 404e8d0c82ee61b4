"""The listening socket of `serve` and `mcp --transport sse|http`, bound before anything else starts, and the
public address the served links carry when SOCIALPUB_PUBLIC_URL is unset (issue 33, items 2 and 3).

Binding first means a busy port is one line naming the port and the flag, before the worker or the database
are touched; uvicorn is then handed the bound socket (`uvicorn.Server.run(sockets=…)`), so nothing can take the
port in between."""

from __future__ import annotations

import errno
import ipaddress
import logging
import socket
from urllib.parse import urlsplit

log = logging.getLogger("socialpub.serve")

LOOPBACK_NAMES = ("localhost",)
ANY_ADDRESS = ("0.0.0.0", "::", "")


class PortUnavailable(RuntimeError):
    """The port cannot be bound; the message is one line naming the port and the flag."""


def bind(host: str, port: int, *, command: str) -> socket.socket:
    """A socket bound to host:port (SO_REUSEADDR, as uvicorn binds), or PortUnavailable."""
    try:
        return socket.create_server((host, port), family=_family(host), backlog=2048)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise PortUnavailable(f"port {port} on {host} is already in use (another `socialpub {command}`?): stop "
                                  f"what holds it or pick a free port with `socialpub {command} --port N`") from exc
        raise PortUnavailable(f"cannot listen on {host}:{port} ({exc.strerror or exc}): check --host and "
                              f"--port") from exc


def _family(host: str) -> socket.AddressFamily:
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:  # a name: its first address decides
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        return infos[0][0] if infos else socket.AF_INET


def served_url(host: str, port: int) -> str:
    """The base address a client on this machine reaches host:port at (a wildcard bind is reached on
    loopback)."""
    shown = "127.0.0.1" if host in ANY_ADDRESS else host
    if ":" in shown:
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def _is_local(host: str) -> bool:
    if host in LOOPBACK_NAMES or host in ANY_ADDRESS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_url_for(configured: str | None, host: str, port: int, *, command: str) -> str | None:
    """The public URL a server on host:port should use: its own address when SOCIALPUB_PUBLIC_URL is unset
    (None: keep the configured one). A configured URL naming this machine on another port is warned about:
    its links would point at a port nothing of this server listens on."""
    if not configured:
        return served_url(host, port)
    parts = urlsplit(configured)
    their_port = parts.port or (443 if parts.scheme == "https" else 80)
    if parts.hostname and _is_local(parts.hostname) and their_port != port:
        log.warning("SOCIALPUB_PUBLIC_URL is %s but `socialpub %s` listens on %s: links (media downloads, the "
                    "console, OAuth redirects) point at SOCIALPUB_PUBLIC_URL", configured, command,
                    served_url(host, port))
    return None
