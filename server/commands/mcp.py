"""`socialpub mcp`: the MCP server over stdio, SSE or streamable HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys

import anyio

from schemas.settings import Settings
from server.mcp_server.selection import PAGE_SIZE, Selection, SelectionError, parse_toolsets
from storage.migrate import DatabaseNotReady, DatabaseUnusable, preflight
from tools.runtime import Runtime
from tools.toolsets import DEFAULT_TOOLSETS

log = logging.getLogger("socialpub.mcp")

DEFAULT_PORT = 8001
UNFILLED = re.compile(r"^\$\{user_config\.[A-Za-z0-9_]+\}$")


def _fail(message: str) -> int:
    print(f"socialpub mcp: {message}", file=sys.stderr)
    return 2


def _drop_unfilled_placeholders() -> None:
    """An MCP Bundle host leaves `${user_config.x}` in place when an optional setting has no value; such a
    variable means "not set", not a path or URL."""
    for name, value in list(os.environ.items()):
        if name.startswith("SOCIALPUB_") and UNFILLED.match(value):
            del os.environ[name]


def cmd_mcp(args: argparse.Namespace) -> int:
    _drop_unfilled_placeholders()
    overrides: dict[str, object] = {"worker_enabled": False} if args.no_worker else {}
    if args.allowed_hosts:
        overrides["allowed_hosts"] = tuple(h.strip().lower() for h in args.allowed_hosts.split(",") if h.strip())
    settings = Settings.from_env(**overrides)
    chosen = args.toolsets or settings.mcp_toolsets or None
    try:
        toolsets = parse_toolsets(chosen)
    except SelectionError as exc:
        return _fail(str(exc))
    read_only = args.read_only or settings.mcp_read_only
    # Toolsets named by the operator are also the most an HTTP client may ask for with `?toolsets=`.
    selection = Selection(toolsets=toolsets, read_only=read_only, all_tools=args.all_tools,
                          allowed=toolsets if chosen else None)
    if args.transport == "stdio":
        from server.mcp_server.run import run_stdio

        try:
            # One event loop for the check and the whole session, so the engine never outlives its loop.
            anyio.run(run_stdio, Runtime.from_settings(settings), selection, settings.api_key, args.page_size)
        except (DatabaseNotReady, DatabaseUnusable) as exc:
            return _fail(str(exc))
        return 0

    # HTTP transports, imported here: stdio starts without them. With SOCIALPUB_API_KEY set this is the
    # single-user local setup: requests without an Authorization header act with that key, so anything that
    # can reach the port acts as its owner.
    import uvicorn

    from server.mcp_server.http import is_loopback
    from server.mcp_server.run import http_app

    if settings.api_key and not is_loopback(args.host) and not args.allow_remote_default_key:
        return _fail(f"refusing to serve SOCIALPUB_API_KEY to requests without a key on non-loopback host "
                     f"{args.host}: bind 127.0.0.1, unset SOCIALPUB_API_KEY so every client sends its own "
                     f"`Authorization: Bearer` key, or pass --allow-remote-default-key")
    from server.listen import PortUnavailable, bind, public_url_for

    try:  # the port first: a busy one is one line, before the database is checked or a worker starts
        listening = bind(args.host, args.port, command="mcp")
    except PortUnavailable as exc:
        return _fail(str(exc))
    own = public_url_for(Settings.env_values().get("public_url"), args.host, args.port, command="mcp")
    if own:
        settings = settings.model_copy(update={"public_url": own})
    try:
        # In a loop (and engine) of its own: the served runtime's engine connects first inside uvicorn's loop.
        preflight(settings.resolved_database_url)
    except (DatabaseNotReady, DatabaseUnusable) as exc:
        listening.close()
        return _fail(str(exc))
    app = http_app(Runtime.from_settings(settings), transport=args.transport, selection=selection,
                   default_key=settings.api_key, allowed_hosts=settings.allowed_hosts, page_size=args.page_size)
    path = "/mcp" if args.transport == "http" else "/sse"
    mode = "single-user (requests without a key act with SOCIALPUB_API_KEY)" if settings.api_key else \
        "every request needs `Authorization: Bearer <API key>`"
    log.info("MCP over %s at http://%s:%s%s; %s; toolsets %s", args.transport, args.host, args.port, path, mode,
             ",".join(toolsets))
    # The same trusted proxies as `serve` (SOCIALPUB_TRUSTED_PROXIES), not uvicorn's FORWARDED_ALLOW_IPS.
    uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level.lower(),
                                  lifespan="on", forwarded_allow_ips=list(settings.trusted_proxies))
                   ).run(sockets=[listening])
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp",  # help line: server.commands.COMMANDS
                       description="Serve the MCP server. stdio acts with SOCIALPUB_API_KEY; SSE and streamable "
                                   "HTTP take `Authorization: Bearer <API key>` per session, or act with "
                                   "SOCIALPUB_API_KEY for requests without one (single-user, loopback only).")
    p.add_argument("--transport", choices=["stdio", "sse", "http"], default="stdio")
    p.add_argument("--host", default="127.0.0.1", help="bind address for sse/http (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port for sse/http (default {DEFAULT_PORT})")
    p.add_argument("--toolsets", help=f"comma-separated toolsets, `all` or `default` "
                                      f"(default: {','.join(DEFAULT_TOOLSETS)}; env SOCIALPUB_MCP_TOOLSETS)")
    p.add_argument("--read-only", action="store_true", help="only read tools (env SOCIALPUB_MCP_READ_ONLY=true)")
    p.add_argument("--all-tools", action="store_true",
                   help="also list tools the key's scopes can never satisfy (calling them answers 403)")
    p.add_argument("--allowed-hosts", help="comma-separated host names accepted besides loopback (DNS rebinding "
                                           "protection; default $SOCIALPUB_ALLOWED_HOSTS)")
    p.add_argument("--allow-remote-default-key", action="store_true",
                   help="allow a non-loopback --host while SOCIALPUB_API_KEY is set (anyone reaching the port "
                        "acts with that key)")
    p.add_argument("--no-worker", action="store_true", help="do not run the publishing worker in this process")
    p.add_argument("--page-size", type=_page_size, default=PAGE_SIZE,
                   help=f"tools per tools/list page (default {PAGE_SIZE})")
    p.set_defaults(func=cmd_mcp)


def _page_size(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 500:
        raise argparse.ArgumentTypeError("page size must be 1 to 500")
    return value
