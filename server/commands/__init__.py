"""CLI command modules; each defines `register(subparsers)`. `COMMANDS` is the one list `socialpub` reads
(no package scan): a new command, or a new module adding actions to one, is added there.

The list holds each top-level command's help line and the modules that declare its parser, so `socialpub
--help` is printed without importing any command module, and a command imports only its own modules (and
they their implementation): start-up stays a small fraction of a second (bench/HISTORY.md, "Start-up").
"""

from __future__ import annotations

import importlib
from types import ModuleType

# command -> (help line, modules declaring its parser, in the order they extend it). `socialpub --help` lists
# the commands in this order.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "autopilot": ("Autopilot weekly plans", ("autopilot",)),
    "bio": ("Link in bio pages", ("bio",)),
    "bundle": ("build a .mcpb MCP Bundle for this platform (dependencies vendored)", ("bundle",)),
    "init": ("create or migrate the database; --demo seeds a demo workspace", ("core",)),
    "workspaces": ("manage workspaces", ("core", "plans")),
    "brands": ("manage brands", ("core", "brand_settings")),
    "keys": ("manage API keys", ("core",)),
    # networks extends core's `integrations connect` parser, so core comes first wherever networks is named.
    "integrations": ("manage connected accounts", ("core", "networks", "notifications", "checks")),
    "mail": ("email delivery (SMTP)", ("mail",)),
    "mcp": ("serve MCP over stdio (default), SSE or streamable HTTP", ("mcp",)),
    "media-folders": ("manage a brand's media folders", ("media",)),
    "apps": ("OAuth apps this service uses on networks (X, ...)", ("core", "networks")),
    "secrets": ("the credentials vault", ("core", "networks")),
    "networks": ("what each network needs from the operator (app, API version, scopes, redirect URI)",
                 ("network_status",)),
    "notifications": ("notification settings and read state", ("notifications",)),
    "plans": ("plans catalogue", ("plans",)),
    "sandbox": ("inject faults into sandbox accounts", ("sandbox",)),
    "serve": ("serve the REST API (and MCP over HTTP) with the worker in-process", ("serve",)),
    "worker": ("run the publishing worker", ("serve",)),
    "users": ("console users", ("users",)),
    "webhooks": ("outbound webhook endpoints (Standard Webhooks)", ("webhooks",)),
}


def module(name: str) -> ModuleType:
    return importlib.import_module(f"server.commands.{name}")


def modules() -> list[ModuleType]:
    """Every command module, in an order where a module extending another's parser comes after it."""
    names = dict.fromkeys(name for _, owners in COMMANDS.values() for name in owners)
    return [module(name) for name in names]
