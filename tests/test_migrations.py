"""Migrations build exactly the schema the models declare, and start-up refuses a database that is behind."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

from storage.db import Database
from storage.migrate import DatabaseBehind, check_current, upgrade

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
    with pytest.raises(DatabaseBehind, match="does not know"):
        await check_current(db)
    await db.dispose()
