"""Migrations build exactly the schema the models declare, and start-up refuses a database that is behind."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

from storage.db import Database
from storage.migrate import (
    HEADS,
    DatabaseAhead,
    DatabaseBehind,
    DatabaseUnreachable,
    check_current,
    current_heads,
    script_heads,
    upgrade,
)
from tests.support import previous_revision

pytestmark = pytest.mark.anyio


async def test_head_schema_matches_models(env) -> None:
    def diff(connection):
        ctx = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(ctx, SQLModel.metadata)

    async with env.db.read_engine.connect() as conn:
        changes = await conn.run_sync(diff)
    assert changes == [], "models changed without a migration: python -m storage.migrate revision 'what'"


async def test_sqlite_pragmas(sqlite_env) -> None:
    async with sqlite_env.db.read_engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA journal_mode"))).scalar() == "wal"
        assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar() == 1


async def test_empty_and_behind_databases_are_refused(tmp_path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}")
    with pytest.raises(DatabaseBehind, match="socialpub init"):
        await check_current(db)
    await upgrade(db)
    await check_current(db)
    async with db.write_engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = 'some_old_revision'"))
    with pytest.raises(DatabaseAhead, match="migrated by a newer socialpub; install that version"):
        await check_current(db)
    with pytest.raises(DatabaseAhead):
        await upgrade(db)
    await db.dispose()


async def test_previous_revision_is_behind_with_a_count(tmp_path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    previous = previous_revision()
    await upgrade(db, previous)
    with pytest.raises(DatabaseBehind, match=rf"at revision {previous}: run `socialpub init` to apply 1 pending "
                                             r"migration$"):
        await check_current(db)
    await upgrade(db)
    await check_current(db)
    await db.dispose()


async def test_unreachable_database_is_one_line_without_the_password() -> None:
    db = Database("postgresql+asyncpg://someone:hunter2@127.0.0.1:9/nowhere")
    with pytest.raises(DatabaseUnreachable) as caught:
        await check_current(db)
    message = str(caught.value)
    assert "hunter2" not in message and "someone:***@127.0.0.1:9/nowhere" in message and "\n" not in message
    await db.dispose()


def test_static_heads_are_the_migration_scripts_heads() -> None:
    """storage.migrate.HEADS lets a server check the schema without loading Alembic; a new migration must be
    named there too."""
    assert script_heads() == HEADS, f"set storage.migrate.HEADS to {sorted(script_heads())}"


@pytest.mark.anyio
async def test_current_heads_reads_what_alembic_recorded(tmp_path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path}/heads.db")
    try:
        assert await current_heads(db) == set()  # no version table yet
        await upgrade(db)
        async with db.read_engine.connect() as conn:
            recorded = await conn.run_sync(lambda c: set(MigrationContext.configure(c).get_current_heads()))
        assert await current_heads(db) == recorded == HEADS
    finally:
        await db.dispose()
