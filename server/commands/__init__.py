"""CLI command modules; each defines `register(subparsers)`. `modules()` is the one list `socialpub` reads
(no package scan): a new command module is added there."""

from __future__ import annotations

from types import ModuleType


def modules() -> list[ModuleType]:
    # Imported when the parser is built: the command modules import server.cli for their helpers.
    from server.commands import (
        autopilot,
        bio,
        bundle,
        core,
        mcp,
        media,
        networks,
        notifications,
        plans,
        sandbox,
        serve,
        users,
    )

    # networks extends core's `integrations` parser, so it comes after core.
    return [autopilot, bio, bundle, core, mcp, media, networks, notifications, plans, sandbox, serve, users]
