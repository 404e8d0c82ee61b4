"""`socialpub bundle`: build an MCP Bundle (.mcpb) for this platform with its dependencies vendored."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path


def cmd_bundle(args: argparse.Namespace) -> int:
    from server import bundle

    try:
        out = bundle.build(Path(args.output), check=not args.no_validate)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"socialpub bundle: {exc}", file=sys.stderr)
        return 1
    print(out)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bundle")  # help line: server.commands.COMMANDS
    p.add_argument("--output", default="dist", help="directory for the .mcpb file (default: dist)")
    p.add_argument("--no-validate", action="store_true",
                   help="skip `npx -y @anthropic-ai/mcpb validate` (which needs Node 18+)")
    p.set_defaults(func=cmd_bundle)
