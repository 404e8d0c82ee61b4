"""Start-up stays cheap: `socialpub --help` builds its parser from `server.commands.COMMANDS` without importing a
command module, the database layer, the web stack or the MCP SDK; the lazily declared parsers are the ones
the command modules declare (every command of the list, nothing else); and the stdio MCP server answers its first
tools/list without importing the areas, from a snapshot equal to the live listing. Timings are in
bench/startup.py."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import server.commands
from server.cli import build_parser
from server.mcp_server import listing
from server.mcp_server.selection import Selection, parse_toolsets
from server.mcp_server.tools import specs

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


# -- an ordinary command: the database layer and its own modules, nothing else ------------------------------

# A command reading the database (as the suite's and the docs' CLI processes do) needs SQLAlchemy, the tables and
# its command module; not the areas, the web or MCP stack, a provider adapter, a media or network library, the
# migration machinery on a current database, or argon2 (hashed only for a password: `server.console.identity`).
NOT_FOR_A_COMMAND = ("tools.areas", "server.worker", "server.rest", "server.console.oauth", "server.mcp_server",
                     "starlette", "uvicorn", "mcp", "mcp_types", "alembic", "httpx", "jsonschema", "av", "PIL",
                     "authlib", "boto3", "botocore", "libipld", "argon2", "providers.bluesky", "providers.x")


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory) -> dict[str, str]:
    """A scratch home with a current database seeded by `init --demo`, for commands run as subprocesses."""
    home = tmp_path_factory.mktemp("home")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}, "SOCIALPUB_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "server.cli", "init", "--demo"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=120)
    return env


def run_probe(env: dict[str, str], *argv: str) -> tuple[str, set[str]]:
    """`socialpub ARGV` run in a probe: its stdout and the modules it imported."""
    run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout, set(json.loads(run.stderr.strip().splitlines()[-1]))


def not_for_a_command(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if m in NOT_FOR_A_COMMAND or m.split(".")[0] in NOT_FOR_A_COMMAND)


def test_an_ordinary_command_imports_only_what_it_runs(demo_env) -> None:
    out, loaded = run_probe(demo_env, "workspaces", "list")
    # The probe sees imports: the command ran (it listed the demo workspace) and loaded the database layer.
    assert "Demo workspace" in out
    assert {"server.commands.core", "storage.tables", "sqlalchemy"} <= loaded
    assert not_for_a_command(loaded) == []


def test_init_on_a_current_database_loads_no_migration_machinery(demo_env, tmp_path) -> None:
    """At this code's heads `init` has nothing to migrate: it checks the recorded revision and goes on without
    Alembic (storage.migrate.upgrade). A database behind still migrates (tests/test_migrations.py), and a fresh
    home loads Alembic to build its schema (the probe sees it)."""
    out, loaded = run_probe(demo_env, "init")
    assert "Database ready" in out and "Workspace Demo workspace" in out
    assert "storage.migrate" in loaded
    assert not_for_a_command(loaded) == []
    fresh = {**demo_env, "SOCIALPUB_HOME": str(tmp_path)}
    out, loaded = run_probe(fresh, "init")
    assert "Database ready" in out
    assert "alembic" in loaded


def test_a_worker_imports_no_web_stack(demo_env) -> None:
    """`worker` shares its command module with `serve` but runs no web server: uvicorn, Starlette, the app, the
    REST mount and the dispatcher are imported by `serve` alone."""
    out, loaded = run_probe(demo_env, "worker", "--once")
    assert "worker pass done" in out
    assert {"server.worker", "server.commands.serve", "tools.areas"} <= loaded
    web = ("uvicorn", "starlette", "server.app", "server.rest", "server.dispatch", "server.mounts")
    assert sorted(m for m in loaded if m in web or m.split(".")[0] in web) == []


TABLES_PROBE = """
import json, sys
sys.argv = ["socialpub", *json.loads(sys.argv[1])]
import server.cli
try:
    server.cli.main()
except SystemExit:
    pass
from sqlmodel import SQLModel
print(json.dumps(sorted(m.class_.__name__ for m in SQLModel._sa_registry.mappers if m.class_.__pydantic_complete__)),
      file=sys.stderr)
"""


def test_tables_build_their_validators_on_first_use(demo_env) -> None:
    """Every table defers its pydantic validator and serializer (`storage.tables._base.TABLE_CONFIG`): a command
    reading and writing rows builds none; `model_validate` and `model_dump` build them when first called."""
    from sqlmodel import SQLModel

    import storage.tables
    from storage.tables.accounts import Workspace

    storage.tables.load_all()

    tables = [m.class_ for m in SQLModel._sa_registry.mappers]
    assert len(tables) > 40
    assert [t.__name__ for t in tables if not t.model_config.get("defer_build")] == []
    for argv in (["workspaces", "list"], ["keys", "create", "--name", "probe", "--scopes", "posts:read"]):
        run = subprocess.run([sys.executable, "-c", TABLES_PROBE, json.dumps(argv)], cwd=ROOT, env=demo_env,
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stderr.strip().splitlines()[-1]) == [], argv
    row = {"id": "wsp_1", "name": "W", "plan_id": "free", "created_at": "2026-01-01T00:00:00Z",
           "updated_at": "2026-01-01T00:00:00Z"}
    ws = Workspace.model_validate(row)
    assert ws.created_at.year == 2026 and Workspace.__pydantic_complete__
    assert ws.model_dump(mode="json")["name"] == "W"


def test_the_areas_import_no_media_library() -> None:
    """PyAV and Pillow are imported where a file is probed or transformed (tools/media), not with the areas that
    every server and worker imports."""
    code = "import sys, tools.areas; print(sorted(m for m in sys.modules if m.split('.')[0] in ('av', 'PIL')))"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_dummy_password_hash_has_the_current_parameters() -> None:
    """Sign-in verifies `identity.DUMMY_HASH` for an unknown email so timing does not tell; written as a constant
    (hashing at import cost every command 0.15-0.2 s), it must use the parameters real hashes use, or the code
    hashes a fresh one on first use. Regenerate it with `PasswordHasher().hash(secrets.token_hex(32))`."""
    from argon2 import PasswordHasher

    from server.console import identity

    assert not PasswordHasher().check_needs_rehash(identity.DUMMY_HASH)
    assert identity._argon2()[1] == identity.DUMMY_HASH


# -- the stdio MCP server: tools/list without the catalogue's areas ------------------------------------------

# Serving the first tools/list needs the MCP SDK, the database layer and the key's authority, nothing of the
# areas: no handlers (tools.areas), worker, OAuth server, provider adapter, media or network library, migration
# machinery.
NOT_FOR_LISTING = ("tools.areas", "server.worker", "server.console.oauth", "server.rest", "providers.bluesky",
                   "providers.instagram", "av", "PIL", "authlib", "boto3", "botocore", "alembic", "httpx",
                   "libipld", "jsonschema")

STDIO_PROBE = """
import json, sys
from server.mcp_server import app

def spy(method):
    async def run(self, ctx, params):
        result = await method(self, ctx, params)
        print("MODULES " + json.dumps(sorted(sys.modules)), file=sys.stderr, flush=True)
        return result
    return run

app.McpApp._list_tools = spy(app.McpApp._list_tools)
app.McpApp._call_tool = spy(app.McpApp._call_tool)
sys.argv = ["socialpub", "--log-level", "WARNING", "mcp", "--transport", "stdio", "--no-worker"]
import server.cli
sys.exit(server.cli.main())
"""


def _stdio_session(database_url: str, home: Path, key: str) -> tuple[list[dict], list[set[str]]]:
    """initialize, tools/list, tools/call get_context, tools/list: the answers, and the modules loaded when each
    of the three requests had been served."""
    env = {"SOCIALPUB_HOME": str(home), "SOCIALPUB_DATABASE_URL": database_url, "SOCIALPUB_API_KEY": key,
           "SOCIALPUB_RATE_LIMIT": "0", "PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "")}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "get_context", "arguments": {}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}},
    ]
    errlog = home / "stderr.txt"  # a file, not a pipe: the module lists would fill a pipe nobody reads yet
    with errlog.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-c", STDIO_PROBE], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    answers: list[dict] = []
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message in messages:  # one at a time: each answer before the next request
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                answers.append(json.loads(proc.stdout.readline()))
        proc.stdin.close()
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    loaded = [set(json.loads(line.removeprefix("MODULES "))) for line in errlog.read_text().splitlines()
              if line.startswith("MODULES ")]
    return answers, loaded


@pytest.mark.anyio
async def test_stdio_lists_tools_without_the_areas(sqlite_env, tmp_path) -> None:
    env = sqlite_env
    ws = await env.workspace()
    key = await env.key(ws, role="admin", name="full")
    answers, (at_list, at_call, _) = await anyio.to_thread.run_sync(
        _stdio_session, env.rt.settings.database_url, tmp_path, key)
    assert [a["id"] for a in answers] == [1, 2, 3, 4] and "result" in answers[3]
    assert sorted(m for m in at_list if m in NOT_FOR_LISTING or m.split(".")[0] in NOT_FOR_LISTING) == []
    # The probe sees imports: the call loaded the catalogue; and the listing served from the live specs then is
    # the one the snapshot served before.
    assert answers[2]["result"]["isError"] is False and "tools.areas" in at_call
    assert answers[1]["result"]["tools"] and answers[1]["result"] == answers[3]["result"]


def test_the_listing_snapshot_is_the_live_listing() -> None:
    """server/mcp_server/listing.json is derived from the catalogue (`python -m server.generate`): every tool as
    listed and the facts the selection filters on, in catalogue order. tests/mcp/test_generated.py checks the
    file is current too; this also checks the tools it serves."""
    live = specs()
    assert json.loads(listing.LISTING_PATH.read_text()) == [listing.entry(s) for s in live.values()]
    served = listing.snapshot()
    assert list(served) == list(live)
    for name, spec in live.items():
        assert served[name].tool == spec.tool, name
        ep, facts = spec.endpoint, served[name].endpoint
        for selection in (Selection(), Selection(read_only=True), Selection(toolsets=parse_toolsets("all"))):
            assert selection.exposes(facts) == selection.exposes(ep), name
        for attr in ("toolset", "changes_nothing", "public", "any_key", "roles", "scopes"):
            assert getattr(facts, attr) == getattr(ep, attr), (name, attr)
