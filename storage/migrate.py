"""Apply and check Alembic migrations from inside the event loop; `python -m storage.migrate` makes revisions.

Every refusal is a `DatabaseNotReady` whose message is one line saying what to do; the CLI prints it and exits
non-zero. Messages name the database by its URL with the password masked (`display_url`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from sqlalchemy import inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from storage.db import Database, DatabaseUnusable, display_url

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).parent / "migrations"
# This code's head revision, known without Alembic: a server checks a current database against it at start-up
# without loading the migration scripts (bench/HISTORY.md, "Start-up"). tests/test_migrations.py fails when a
# new migration is not named here.
HEADS = frozenset({"0019_post_metrics"})
VERSION_TABLE = "alembic_version"


__all__ = ["DatabaseAhead", "DatabaseBehind", "DatabaseMissing", "DatabaseNotReady", "DatabaseUnreachable", "DatabaseUnusable",
           "check_current", "display_url", "preflight", "upgrade"]


class DatabaseNotReady(RuntimeError):
    """The database cannot be served by this code as it is; the message says what to run or install."""


class DatabaseBehind(DatabaseNotReady):
    """The database schema is missing or older than this code; `socialpub init` brings it up to date."""


class DatabaseAhead(DatabaseNotReady):
    """The database was migrated by a newer socialpub than this one."""


class DatabaseMissing(DatabaseBehind):
    """A SQLite file that does not exist: a command other than `init` never creates one."""


def origin(db: Database) -> str:
    """Which setting chose this database, for refusals: an operator whose shell lacks SOCIALPUB_HOME reads that
    the default place was used, and which variable points elsewhere."""
    env = os.environ
    if env.get("SOCIALPUB_DATABASE_URL"):
        return "SOCIALPUB_DATABASE_URL"
    if env.get("SOCIALPUB_HOME"):
        return f"SOCIALPUB_HOME={env['SOCIALPUB_HOME']}"
    return "SOCIALPUB_HOME is unset, so the default home"


class DatabaseUnreachable(DatabaseNotReady):
    """No connection could be made (server down, wrong host, missing database, bad credentials)."""


def _config(url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def script_directory() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config("sqlite://"))


def script_heads() -> set[str]:
    return set(script_directory().get_heads())


def _known(script: ScriptDirectory, revision: str) -> bool:
    try:
        return script.get_revision(revision) is not None
    except Exception:  # alembic raises several kinds for an unknown or malformed revision
        return False


def _ancestors(script: ScriptDirectory, revisions: set[str]) -> set[str]:
    """The revisions and everything they were built on."""
    seen: set[str] = set()
    todo = list(revisions)
    while todo:
        rev = todo.pop()
        if rev in seen:
            continue
        seen.add(rev)
        down = script.get_revision(rev).down_revision
        todo.extend([down] if isinstance(down, str) else list(down or ()))
    return seen


def pending_migrations(have: set[str]) -> int:
    """How many of this code's migrations a database at revisions `have` (all known) has not applied."""
    script = script_directory()
    return len(_ancestors(script, set(script.get_heads())) - _ancestors(script, have))


def _unreachable(db: Database, exc: BaseException) -> DatabaseUnreachable:
    # The driver's own first line says why (refused, unknown database, authentication); never the URL it was
    # given, which may carry the password.
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    why = reason[0] if reason else type(exc).__name__
    password = make_url(db.url).password if "://" in db.url else None
    if password:
        why = why.replace(str(password), "***")
    return DatabaseUnreachable(f"cannot reach the database at {display_url(db.url)}: {why}")


# What a failed connect raises: SQLAlchemy wraps driver errors in DBAPIError subclasses; asyncpg raises its
# own errors (OSError for a refused socket, asyncpg.PostgresError for an unknown database or bad password) when
# the pool connects; a hung server is a TimeoutError.
_CONNECT_ERRORS: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, DBAPIError, OSError,
                                                     TimeoutError)


def _connect_errors() -> tuple[type[BaseException], ...]:
    # asyncpg (the optional postgres extra) is not imported for SQLite: none of its errors can have been raised
    # unless the engine loaded it.
    asyncpg = sys.modules.get("asyncpg")
    return _CONNECT_ERRORS + ((asyncpg.PostgresError, asyncpg.InterfaceError) if asyncpg is not None else ())


def _stored_heads(connection) -> set[str]:
    """The revisions Alembic recorded (what `MigrationContext.get_current_heads` reads), without Alembic."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return set()
    return set(connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars())


async def current_heads(db: Database) -> set[str]:
    if db.sqlite_file is not None and not db.sqlite_file.exists():
        return set()  # not connected to: SQLite would create the file
    try:
        async with db.read_engine.connect() as connection:
            return await connection.run_sync(_stored_heads)
    except _connect_errors() as exc:
        raise _unreachable(db, exc) from exc


def _refusal(db: Database, have: set[str]) -> DatabaseNotReady | None:
    """None when the database is at this code's heads; otherwise why not, as one line."""
    if have == HEADS:
        return None  # the usual case, decided without loading the migration scripts
    script = script_directory()
    want = set(script.get_heads())
    where = display_url(db.url)
    if have == want:
        return None
    if not have:
        if db.sqlite_file is not None and not db.sqlite_file.exists():
            return DatabaseMissing(f"no socialpub database at {db.sqlite_file} ({origin(db)}): set SOCIALPUB_HOME "
                                   "(or SOCIALPUB_DATABASE_URL) to your workspace's, or run `socialpub init` to "
                                   "create a new one there")
        return DatabaseBehind(f"the database at {where} ({origin(db)}) has no socialpub schema: set "
                              "SOCIALPUB_HOME (or SOCIALPUB_DATABASE_URL) to your workspace's, or run "
                              "`socialpub init` to create one there (add --demo for a demo workspace)")
    unknown = sorted(r for r in have if not _known(script, r))
    if unknown:
        return DatabaseAhead(f"the database at {where} is at revision {', '.join(unknown)}, which this socialpub "
                             "does not have: this database was migrated by a newer socialpub; install that version")
    n = pending_migrations(have)
    return DatabaseBehind(f"the database at {where} is at revision {', '.join(sorted(have))}: run `socialpub init` "
                          f"to apply {n} pending migration{'s' if n != 1 else ''}")


async def check_current(db: Database) -> None:
    """Refuse to serve a database that is unreachable, uninitialised, older or newer than this code."""
    refusal = _refusal(db, await current_heads(db))
    if refusal is not None:
        raise refusal


async def upgrade(db: Database, revision: str = "heads") -> None:
    """Apply pending migrations (up to `revision`; tests build older databases with it). A database ahead of
    this code is refused before Alembic sees it."""
    refusal = _refusal(db, await current_heads(db))
    if isinstance(refusal, DatabaseAhead):
        raise refusal
    if isinstance(refusal, DatabaseMissing):
        db.prepare_file()  # `init`: the one command that creates a database
    if refusal is None and revision == "heads":
        # Already at this code's heads: Alembic would run no migration and write nothing, so it is not loaded
        # (`socialpub init` on a current database, bench/HISTORY.md "Start-up").
        return
    from alembic import command

    cfg = _config(db.url)

    def run(connection) -> None:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, revision)

    # current_heads above proved the database reachable: from here a failure is a migration bug, raised whole.
    async with db.write_engine.begin() as connection:
        await connection.run_sync(run)


def preflight(url: str) -> None:
    """Check the schema before a server starts, in an event loop of its own that disposes of its engine: pooled
    connections (asyncpg's in particular) are bound to the loop that opened them and must not outlive it into
    the server's loop."""

    async def go() -> None:
        db = Database(url)
        try:
            await check_current(db)
        finally:
            await db.dispose()

    anyio.run(go)


def make_revision(message: str) -> None:
    """Autogenerate a revision against a scratch SQLite database at the current head."""
    import asyncio
    import tempfile

    from alembic import command

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/scratch.db"
        asyncio.run(_upgrade_scratch(url))
        command.revision(_config(url), message=message, autogenerate=True)


async def _upgrade_scratch(url: str) -> None:
    db = Database(url)
    await upgrade(db)
    await db.dispose()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "revision":
        sys.exit("usage: python -m storage.migrate revision 'what changed'")
    make_revision(sys.argv[2])
