"""The async engine and transactions.

SQLite (the embedded default) runs in WAL mode with foreign keys on. Write transactions start with
`BEGIN IMMEDIATE` so two writers queue on the busy timeout instead of failing mid-transaction when one
upgrades a read lock; reads use a plain deferred `BEGIN` and never block each other.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import orjson
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

from storage import sqlite_inline

SQLITE_BUSY_TIMEOUT_MS = 15_000


def json_loads(text: str | bytes) -> object:
    """JSON columns decoded by orjson (several times faster on the hot reads); what orjson refuses and Python's
    json accepts (integers beyond 64 bits, NaN) still decodes, as before."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _sqlite_engine(url: str, *, immediate: bool) -> AsyncEngine:
    connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    options = {}
    if not immediate:  # reads run on the loop's thread (storage/sqlite_inline.py); writes keep aiosqlite's thread
        dialect = create_async_engine(url).dialect
        args, kwargs = dialect.create_connect_args(make_url(url))
        options["async_creator"] = sqlite_inline.connector(tuple(args), {**kwargs, **connect_args})
    engine = create_async_engine(url, connect_args=connect_args, json_deserializer=json_loads, **options)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (pysqlite's own handling is wrong)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class DatabaseUnusable(RuntimeError):
    """The database URL cannot be used at all: unparsable, a driver that is not installed, or a SQLite file
    whose directory cannot be created. The message names the URL without its password."""


def display_url(url: str) -> str:
    """The URL as operators may see it in messages and logs: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:  # unparsable: still worth naming, minus anything up to '@' (credentials)
        return url.rsplit("@", 1)[-1]


class Database:
    def __init__(self, url: str) -> None:
        try:
            self._open(url)
        except (ArgumentError, NoSuchModuleError, ImportError, OSError) as exc:
            raise DatabaseUnusable(f"cannot use the database at {display_url(url)}: {exc}") from exc

    def _open(self, url: str) -> None:
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self.read_engine = _sqlite_engine(url, immediate=False)
            self.write_engine = _sqlite_engine(url, immediate=True)
        else:
            self.read_engine = self.write_engine = create_async_engine(url, pool_pre_ping=True,
                                                                       json_deserializer=json_loads)

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @asynccontextmanager
    async def session(self, *, write: bool) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block ends normally, rolled back when it raises."""
        engine = self.write_engine if write else self.read_engine
        async with AsyncSession(engine, expire_on_commit=False) as session:
            try:
                yield session
                if write:
                    await session.commit()
                # A read session just closes: its objects stay readable after the block (a rollback would
                # expire them).
            except BaseException:
                await session.rollback()
                raise

    async def dispose(self) -> None:
        await self.write_engine.dispose()
        if self.read_engine is not self.write_engine:
            await self.read_engine.dispose()
