"""Apply and check Alembic migrations from inside the event loop; `python -m storage.migrate` makes revisions."""

from __future__ import annotations

import sys
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from storage.db import Database

MIGRATIONS = Path(__file__).parent / "migrations"


class DatabaseBehind(RuntimeError):
    """The database schema is older than this code; `socialpub init` brings it up to date."""


def _config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def script_heads() -> set[str]:
    return set(ScriptDirectory.from_config(_config("sqlite://")).get_heads())


async def upgrade(db: Database) -> None:
    cfg = _config(db.url)

    def run(connection) -> None:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "heads")

    async with db.write_engine.begin() as connection:
        await connection.run_sync(run)


async def current_heads(db: Database) -> set[str]:
    async with db.read_engine.connect() as connection:
        return await connection.run_sync(lambda c: set(MigrationContext.configure(c).get_current_heads()))


async def check_current(db: Database) -> None:
    """Refuse to serve an uninitialised or older database, saying exactly what to run."""
    have, want = await current_heads(db), script_heads()
    if have == want:
        return
    if not have:
        raise DatabaseBehind(
            f"The database at {db.url} has no socialpub schema. Run `socialpub init` (add --demo for a demo workspace).")
    if have - want:
        raise DatabaseBehind(
            f"The database at {db.url} is at revision {sorted(have)}, which this version of socialpub does not know "
            "(it was migrated by a newer release). Upgrade socialpub.")
    raise DatabaseBehind(
        f"The database at {db.url} is at revision {sorted(have)}; this version needs {sorted(want)}. "
        "Run `socialpub init` to apply the pending migrations.")


def make_revision(message: str) -> None:
    """Autogenerate a revision against a scratch SQLite database at the current head."""
    import asyncio
    import tempfile

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
