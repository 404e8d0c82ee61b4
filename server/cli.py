"""`socialpub` command line. Subcommands live in the modules listed by `server/commands/__init__.py`, each with
`register(subparsers)`.

Every command prints what it created; `--json` prints it as JSON. Secrets are printed once, at creation. Errors go
to stderr as one line, or, under `--json`, to stdout as `{"success": false, "error": {"code", "message"}}`; the
exit status is 2 either way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio

import server.commands
from schemas.settings import Settings
from server import logs
from server.ratelimit import RateLimitConfigError
from storage.migrate import DatabaseAhead, DatabaseBehind, DatabaseNotReady, DatabaseUnreachable, DatabaseUnusable
from tools.operator.actions import OperatorError
from tools.runtime import Runtime

LOG_FORMATS = ("text", "json")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result (or the error) as JSON")


ERROR_CODES: tuple[tuple[type[BaseException], str], ...] = (
    (DatabaseUnreachable, "DATABASE_UNREACHABLE"), (DatabaseUnusable, "DATABASE_UNUSABLE"),
    (DatabaseAhead, "DATABASE_AHEAD"), (DatabaseBehind, "DATABASE_BEHIND"), (DatabaseNotReady, "DATABASE_NOT_READY"))


def _error_code(exc: BaseException) -> str:
    for kind, code in ERROR_CODES:
        if isinstance(exc, kind):
            return code
    return "PLAN_LIMIT_REACHED" if getattr(exc, "details", None) else "REFUSED"


def report_error(json_out: bool, code: str, message: str, details: Any = None) -> int:
    if json_out:
        error: dict[str, Any] = {"code": code, "message": message}
        if details:
            error["details"] = details
        print(json.dumps({"success": False, "error": error}, indent=2, default=str))
    else:
        print(f"socialpub: {message}", file=sys.stderr)
    return 2


class _Parser(argparse.ArgumentParser):
    """Usage errors are JSON too when the command line asks for --json."""

    json_errors = False

    def error(self, message: str) -> Any:
        if _Parser.json_errors:
            sys.exit(report_error(True, "USAGE", f"{self.prog}: {message}"))
        super().error(message)


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
    parser = _Parser(prog="socialpub", description="Self-hosted social publishing for LLM agents.")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default=os.environ.get("SOCIALPUB_LOG_FORMAT", "text"),
                        help="text (default, or $SOCIALPUB_LOG_FORMAT) or json: one JSON object per line")
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
    _Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    logs.configure(args.log_level, args.log_format)
    try:
        return args.func(args)
    except (OperatorError, DatabaseNotReady, DatabaseUnusable, RateLimitConfigError) as exc:
        return report_error(getattr(args, "json", False), _error_code(exc), str(exc), getattr(exc, "details", None))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
