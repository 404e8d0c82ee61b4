"""Start-up stays cheap: `socialpub --help` builds its parser from `server.commands.COMMANDS` without importing a
command module, the database layer, the web stack or the MCP SDK; and the lazily declared parsers are the ones
the command modules declare (every command of the list, nothing else). Timings are in bench/startup.py."""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from pathlib import Path

import server.commands
from server.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("sqlalchemy", "sqlmodel", "alembic", "starlette", "uvicorn", "mcp", "mcp_types", "pydantic", "anyio",
         "httpx", "server.commands.core", "tools.areas", "storage.tables")

PROBE = """
import json, sys
sys.argv = ["socialpub", *json.loads(sys.argv[1])]
import server.cli
try:
    server.cli.main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(*argv: str) -> set[str]:
    """The modules a fresh interpreter has imported after running `socialpub ARGV` (which must exit in parsing)."""
    run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "usage: socialpub" in run.stdout
    return set(json.loads(run.stderr.strip().splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in HEAVY or m.split(".")[0] in HEAVY)


def test_help_imports_nothing_heavy() -> None:
    loaded = loaded_by("--help")
    assert heavy(loaded) == []
    assert not any(m.startswith("server.commands.") for m in loaded)


def test_a_command_loads_only_its_modules() -> None:
    loaded = loaded_by("bundle", "--help")
    assert "server.commands.bundle" in loaded
    assert sorted(m for m in loaded if m.startswith("server.commands.")) == ["server.commands.bundle"]
    assert heavy(loaded) == []


def test_the_probe_sees_imports() -> None:
    """The probe can fail: a command whose module imports the database layer shows it."""
    assert "sqlalchemy" in heavy(loaded_by("workspaces", "--help"))


def _tree(parser: argparse.ArgumentParser) -> dict:
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out[name] = _tree(sub)
        else:
            out[action.dest] = (tuple(action.option_strings), action.help, repr(action.default),
                                tuple(action.choices or ()))
    return out


def test_lazy_parsers_equal_the_full_tree() -> None:
    full = build_parser(full=True)
    [sub] = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == list(server.commands.COMMANDS)
    # Each command's modules declare something in it, and a lazy parse builds the same parser as the full tree.
    for name in server.commands.COMMANDS:
        lazy = build_parser()
        with_help = [name, "--help"]
        with contextlib.suppress(SystemExit):
            lazy.parse_args(with_help)
        [lazy_sub] = [a for a in lazy._actions if isinstance(a, argparse._SubParsersAction)]
        assert _tree(lazy_sub.choices[name]) == _tree(sub.choices[name]), name
        assert len(_tree(sub.choices[name])) > 3, f"{name}: no module declared arguments or actions"
