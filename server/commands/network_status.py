"""`socialpub networks status [--json]`: per network, whether its operator app is configured, the API version in
use and its published sunset, the scopes requested and the redirect URI to register (tools/networks/status.py)."""

from __future__ import annotations

import argparse

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from tools.networks.status import network_status, status_text
from tools.runtime import Runtime


async def cmd_status(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    rows = await network_status(rt)
    emit(args, {"networks": rows}, status_text(rows))


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "networks")
    p = group.add_parser("status", help="per network: operator app configured, API version and its sunset, "
                                        "scopes requested, redirect URI to register")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_status))
