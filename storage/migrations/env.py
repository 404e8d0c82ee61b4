"""Alembic environment. `storage.migrate` hands in a live connection; the alembic CLI gets its own engine."""

from __future__ import annotations

import asyncio
from typing import Literal

from alembic import context
from alembic.autogenerate.api import AutogenContext
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel

from storage.tables import load_all

load_all()  # fills SQLModel.metadata
config = context.config
target_metadata = SQLModel.metadata


def _render_item(type_: str, obj: object, autogen_context: AutogenContext) -> str | Literal[False]:
    # Our column types render as imports from storage.types so revisions stay runnable.
    name = type(obj).__name__
    if type_ == "type" and name == "UTCDateTime":
        autogen_context.imports.add("import storage.types")
        return "storage.types.UTCDateTime()"
    return False


def _configure(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite can only alter tables by copying them
        render_item=_render_item,
        compare_type=True,
    )


def _run(connection) -> None:
    _configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    url = config.get_main_option("sqlalchemy.url")
    assert url is not None, "alembic.ini names sqlalchemy.url"
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        await connection.run_sync(_run)
        await connection.commit()
    await engine.dispose()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    asyncio.run(_run_async())
