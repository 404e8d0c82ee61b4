"""`socialpub` command line. Subcommands live in the modules listed by `server/commands/__init__.py`, each with
`register(subparsers)`; a command's modules are imported only when that command runs (or its help is asked for).

Every command prints what it created; `--json` prints it as JSON. Secrets are printed once, at creation. Errors go
to stderr as one line, or, under `--json`, to stdout as `{"success": false, "error": {"code", "message"}}`; the
exit status is 2 either way.
"""

from __future__ import annotations

import argparse
import json
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import server.commands

if TYPE_CHECKING:
    from tools.runtime import Runtime

# Nothing heavy at import: `socialpub --help` must not load SQLAlchemy, Alembic, Starlette, MCP or the areas
# (tests/test_cli_startup.py). Whatever a command needs is imported when it runs.

LOG_FORMATS = ("text", "json")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result (or the error) as JSON")


def _error_codes() -> tuple[tuple[type[BaseException], str], ...]:
    from storage.migrate import (
        DatabaseAhead,
        DatabaseBehind,
        DatabaseNotReady,
        DatabaseUnreachable,
        DatabaseUnusable,
    )

    return ((DatabaseUnreachable, "DATABASE_UNREACHABLE"), (DatabaseUnusable, "DATABASE_UNUSABLE"),
            (DatabaseAhead, "DATABASE_AHEAD"), (DatabaseBehind, "DATABASE_BEHIND"),
            (DatabaseNotReady, "DATABASE_NOT_READY"))


def _reported_errors() -> tuple[type[BaseException], ...]:
    """What `main` reports as one line (or JSON) instead of a traceback. Imported when something was raised:
    a command that raised one of these has loaded its module already."""
    from schemas.settings import MissingExtra
    from server.ratelimit import RateLimitConfigError
    from storage.migrate import DatabaseNotReady, DatabaseUnusable
    from tools.operator.actions import OperatorError

    return (OperatorError, DatabaseNotReady, DatabaseUnusable, RateLimitConfigError, MissingExtra)


def _error_code(exc: BaseException) -> str:
    for kind, code in _error_codes():
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
    """Every subcommand also accepts --log-level, wherever it is written.

    The top-level one is lazy: it starts with an empty parser per command of `server.commands.COMMANDS` (enough
    for `socialpub --help`) and has the command's modules declare its arguments once the command is chosen."""

    declared: frozenset[str] = frozenset()  # top level: the commands of COMMANDS, whose parsers modules fill
    loaded: set[str]  # top level: the command modules that registered already

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name in self.declared and name in self.choices:
            # A module declaring a command of COMMANDS fills the parser made for it (its help line is in the list).
            parser = self.choices[name]
            for attr in ("description", "epilog"):
                if attr in kwargs:
                    setattr(parser, attr, kwargs[attr])
            return parser
        parser = super().add_parser(name, **kwargs)
        parser.add_argument("--log-level", default=argparse.SUPPRESS, help="logging level (default INFO)")
        parser.add_argument("--log-format", choices=LOG_FORMATS, default=argparse.SUPPRESS,
                            help="text (default) or json: one JSON object per line")
        parser.register("action", "parsers", _Sub)
        return parser

    def load(self, command: str) -> None:
        """Have the modules of `command` declare their parsers (each module once)."""
        for name in server.commands.COMMANDS[command][1]:
            if name in self.loaded:
                continue
            self.loaded.add(name)
            server.commands.module(name).register(self)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values and values[0] in self.declared:
            self.load(values[0])
        super().__call__(parser, namespace, values, option_string)


def build_parser(*, full: bool = False) -> argparse.ArgumentParser:
    """The `socialpub` parser: each command's arguments are declared when it is parsed, or now with `full`."""
    parser = _Parser(prog="socialpub", description="Self-hosted social publishing for LLM agents.")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default=None,
                        help="text (default, or $SOCIALPUB_LOG_FORMAT) or json: one JSON object per line")
    parser.register("action", "parsers", _Sub)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    assert isinstance(sub, _Sub)
    for name, (help_line, _) in server.commands.COMMANDS.items():
        sub.add_parser(name, help=help_line)
    sub.declared = frozenset(server.commands.COMMANDS)
    sub.loaded = set()
    if full:
        for name in server.commands.COMMANDS:
            sub.load(name)
    return parser


def subcommands(sub: argparse._SubParsersAction, name: str) -> argparse._SubParsersAction:
    """The subcommand group `name` (e.g. `workspaces`, declared in `server.commands.COMMANDS`), so several
    command modules can add actions to one group."""
    parser = sub.choices[name]
    group = _GROUPS.get(parser)
    if group is None:
        group = _GROUPS[parser] = parser.add_subparsers(dest="action", required=True)
    return group


# Each command parser's subcommand group, made once by `subcommands` (the parser keeps its actions privately).
_GROUPS: weakref.WeakKeyDictionary[argparse.ArgumentParser, argparse._SubParsersAction] = weakref.WeakKeyDictionary()


def emit(args: argparse.Namespace, obj: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(obj, indent=2, default=str))
    else:
        print(text)


def run_with_runtime(fn: Callable[[argparse.Namespace, Runtime], Any]) -> Callable[[argparse.Namespace], int]:
    """Wrap an async command body: build the runtime from the environment, close it afterwards."""

    def runner(args: argparse.Namespace) -> int:
        import anyio

        from schemas.settings import Settings
        from tools.runtime import Runtime

        async def go() -> int:
            rt = Runtime.from_settings(Settings.from_env())
            try:
                result = await fn(args, rt)
                return 0 if result is None else int(result)
            finally:
                await rt.close()

        return anyio.run(go)

    return runner


def _env_log_format() -> str:
    """SOCIALPUB_LOG_FORMAT as the settings model reads it (schemas/settings.py), before any other setting is
    checked: a refused setting is then reported in the chosen format."""
    from schemas.settings import Settings

    value = str(Settings.env_values().get("log_format") or "text")
    return value if value in LOG_FORMATS else "text"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    _Parser.json_errors = "--json" in (sys.argv[1:] if argv is None else list(argv))
    args = parser.parse_args(argv)
    from server import logs

    logs.configure(args.log_level, args.log_format or _env_log_format())
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not isinstance(exc, _reported_errors()):
            raise
        return report_error(getattr(args, "json", False), _error_code(exc), str(exc), getattr(exc, "details", None))


if __name__ == "__main__":
    sys.exit(main())
