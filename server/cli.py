"""`socialpub` command line. Subcommands live in `server/commands/*.py`, each with `register(subparsers)`.

Every command prints what it created; `--json` prints it as JSON. Secrets are printed once, at creation.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio

import server.commands
from schemas.settings import Settings
from server import logs
from server.ratelimit import RateLimitConfigError
from storage.migrate import DatabaseBehind
from tools.operator import OperatorError
from tools.runtime import Runtime

LOG_FORMATS = ("text", "json")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


class _Sub(argparse._SubParsersAction):
    """Every subcommand also accepts --log-level, wherever it is written."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser = super().add_parser(name, **kwargs)
        parser.add_argument("--log-level", default=argparse.SUPPRESS, help="logging level (default INFO)")
        parser.add_argument("--log-format", choices=LOG_FORMATS, default=argparse.SUPPRESS,
                            help="text (default) or json: one JSON object per line")
        parser.register("action", "parsers", _Sub)
        return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socialpub", description="Self-hosted social publishing for LLM agents.")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default=os.environ.get("SOCIALPUB_LOG_FORMAT", "text"),
                        help="text (default, or $SOCIALPUB_LOG_FORMAT) or json: one JSON object per line")
    parser.register("action", "parsers", _Sub)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in sorted(pkgutil.iter_modules(server.commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"server.commands.{module.name}").register(sub)
    return parser


def subcommands(sub: argparse._SubParsersAction, name: str, help: str) -> argparse._SubParsersAction:
    """The subcommand group `name` (e.g. `workspaces`), created if no earlier module made it, so several
    command modules can add actions to one group."""
    parser = sub.choices.get(name) or sub.add_parser(name, help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return parser.add_subparsers(dest="action", required=True)


def emit(args: argparse.Namespace, obj: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(obj, indent=2, default=str))
    else:
        print(text)


def run_with_runtime(fn: Callable[[argparse.Namespace, Runtime], Any]) -> Callable[[argparse.Namespace], int]:
    """Wrap an async command body: build the runtime from the environment, close it afterwards."""

    def runner(args: argparse.Namespace) -> int:
        async def go() -> int:
            rt = Runtime.from_settings(Settings.from_env())
            try:
                result = await fn(args, rt)
                return 0 if result is None else int(result)
            finally:
                await rt.close()

        return anyio.run(go)

    return runner


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logs.configure(args.log_level, args.log_format)
    try:
        return args.func(args)
    except (OperatorError, DatabaseBehind, RateLimitConfigError) as exc:
        print(f"socialpub: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
