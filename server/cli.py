"""`socialpub` command line. Subcommands live in the modules listed by `server/commands/__init__.py`, each with
`register(subparsers)`.

Every command prints what it created; `--json` prints it as JSON. Secrets are printed once, at creation.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio

import server.commands
from schemas.settings import Settings
from storage.migrate import DatabaseBehind
from tools.operator.actions import OperatorError
from tools.runtime import Runtime


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


class _Sub(argparse._SubParsersAction):
    """Every subcommand also accepts --log-level, wherever it is written."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        parser = super().add_parser(name, **kwargs)
        parser.add_argument("--log-level", default=argparse.SUPPRESS, help="logging level (default INFO)")
        parser.register("action", "parsers", _Sub)
        return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="socialpub", description="Self-hosted social publishing for LLM agents.")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.register("action", "parsers", _Sub)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in server.commands.modules():
        module.register(sub)
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
    # Logs go to stderr: stdout carries command output (and, for `mcp --transport stdio`, only protocol).
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))
    try:
        return args.func(args)
    except (OperatorError, DatabaseBehind) as exc:
        print(f"socialpub: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
