"""Test helpers: a migrated database per test, a frozen clock, seeding, REST and direct-dispatch clients.

Databases: a SQLite template is migrated once per session and copied per test. With
SOCIALPUB_TEST_POSTGRES_URL set, the PostgreSQL leg creates one scratch database per session, migrates it
once, and empties every table before each test.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
from sqlalchemy import func, literal_column, select, text, union_all
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlmodel import SQLModel

import storage.tables
from schemas.scopes import ALL_SCOPES, ROLE_SCOPES
from schemas.settings import Settings
from schemas.time import FrozenClock
from server.app import build_app
from server.dispatch import Dispatcher, Outcome
from storage.db import Database
from storage.migrate import upgrade
from storage.tables.accounts import ApiKey, Workspace
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from tools import catalogue
from tools.operator import actions as operator
from tools.runtime import Runtime

storage.tables.load_all()  # every table in SQLModel.metadata: the tests empty and compare them all
PG_ENV = "SOCIALPUB_TEST_POSTGRES_URL"
START = "2026-03-02T09:00:00.000Z"
# Test workspaces start on the largest plan so plan limits never get in the way of tests about something
# else; tests about plans pass `plan_id` explicitly (tests/context/test_plans.py).
TEST_PLAN_ID = "agency"


def migrate_sqlite_template(directory: Path) -> Path:
    path = directory / "template.db"

    async def go() -> None:
        db = Database(f"sqlite+aiosqlite:///{path}")
        await upgrade(db)
        await db.dispose()

    anyio.run(go)
    return path


def previous_revision() -> str:
    """The revision just before this code's (single) head: what a database one release behind is at."""
    from storage.migrate import script_directory

    script = script_directory()
    (head,) = script.get_heads()
    down = script.get_revision(head).down_revision
    assert isinstance(down, str), "the head has no single previous revision"
    return down


# Per process and server: a database migrated to the head once, which `create_pg_database` copies. Migrating
# costs ~0.6 s of CPU and seconds of commits waiting on the disk; `CREATE DATABASE … TEMPLATE` copies the files in
# ~0.25 s with no CPU here. Dropped at the end of the session (tests/conftest.py: pytest_sessionfinish).
_PG_TEMPLATES: dict[str, str] = {}


def create_pg_database(base_url: str, revision: str | None = "heads") -> str:
    """A fresh scratch database, migrated to `revision` (None: left empty); returns its URL. At the head it is a
    copy of this process's template, itself migrated once as any scratch database is."""
    template = None
    if revision == "heads":
        if base_url not in _PG_TEMPLATES:
            _PG_TEMPLATES[base_url] = make_url(_create_pg_database(base_url, revision, None)).database or ""
        template = _PG_TEMPLATES[base_url]
    return _create_pg_database(base_url, None if template else revision, template)


def copy_pg_database(base_url: str, source_url: str) -> str:
    """A fresh scratch database copied from `source_url` (which nothing may be connected to); returns its URL."""
    return _create_pg_database(base_url, None, make_url(source_url).database)


def drop_pg_templates() -> None:
    while _PG_TEMPLATES:
        base_url, name = _PG_TEMPLATES.popitem()
        drop_pg_database(base_url, make_url(base_url).set(database=name).render_as_string(hide_password=False))


def _create_pg_database(base_url: str, revision: str | None, template: str | None) -> str:
    name = f"sp_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    url = make_url(base_url)
    admin_url = url.set(database="postgres" if url.database != "postgres" else url.database)

    async def go() -> None:
        admin = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
            # A commit returns before its WAL reaches the disk (visible to every connection all the same): a
            # scratch database need not survive a crash of the server, and tests commit often. (A setting of the
            # database, which a copy does not inherit from its template.)
            await conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        await admin.dispose()
        if revision is not None:
            db = Database(url.set(database=name).render_as_string(hide_password=False))
            await upgrade(db, revision)
            await db.dispose()

    anyio.run(go)
    return url.set(database=name).render_as_string(hide_password=False)


def drop_pg_database(base_url: str, scratch_url: str) -> None:
    url = make_url(base_url)
    name = make_url(scratch_url).database
    admin_url = url.set(database="postgres" if url.database != "postgres" else url.database)

    async def go() -> None:
        admin = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()

    anyio.run(go)


# Every table's rows deleted, children first, and any sequence restarted, in one round trip. Not TRUNCATE: that
# gives each of the ~50 tables and their indexes new files and syncs them, 0.2-1.5 s per test, where deleting the
# few rows a test wrote takes milliseconds.
_DELETES = " ".join(f'DELETE FROM "{t.name}";' for t in reversed(SQLModel.metadata.sorted_tables))
_EMPTY_ALL = f"""DO $$ DECLARE s record; BEGIN {_DELETES}
  FOR s IN SELECT schemaname, sequencename FROM pg_sequences LOOP
    EXECUTE format('ALTER SEQUENCE %I.%I RESTART', s.schemaname, s.sequencename);
  END LOOP; END $$"""


# Table names from the metadata, written into the statement (not bound: ~50 parameters of no type PostgreSQL
# would have to infer in a UNION).
_ROW_COUNTS = union_all(*(select(literal_column(f"'{t.name}'"), func.count()).select_from(t)
                          for t in SQLModel.metadata.sorted_tables))


async def empty_all(db: Database) -> None:
    async with db.write_engine.begin() as conn:
        await conn.execute(text(_EMPTY_ALL))


@dataclass
class Env:
    """One test's service: runtime, dispatcher, ASGI app and a REST client, plus seeding helpers."""

    rt: Runtime
    dispatcher: Dispatcher
    app: Any
    rest: httpx.AsyncClient
    clock: FrozenClock
    backend: str
    _objects: dict[str, Any] = field(default_factory=dict)

    @property
    def db(self) -> Database:
        return self.rt.db

    @property
    def sandbox(self) -> Any:
        return self.rt.providers["sandbox"]

    # -- seeding ---------------------------------------------------------------------------------------
    async def workspace(self, name: str = "Test workspace", plan_id: str = TEST_PLAN_ID) -> Workspace:
        async with self.db.session(write=True) as s:
            return await operator.create_workspace(s, self.clock.now(), name, plan_id)

    async def brand(self, ws: Workspace, name: str = "Test brand", **fields: Any) -> Brand:
        async with self.db.session(write=True) as s:
            return await operator.create_brand(s, self.clock.now(), ws, name, **fields)

    async def key(self, ws: Workspace, scopes: tuple[str, ...] | list[str] = ALL_SCOPES,
                  brands: list[str] | None = None, role: str | None = None, name: str = "test key",
                  user_id: str | None = None) -> str:
        """A key; without `role` (and `user_id`) its new owner is a member when the scopes allow, else an admin
        (a key never holds more than its owner's role allows)."""
        if role is None and user_id is None:
            role = "member" if set(scopes) <= set(ROLE_SCOPES["member"]) else "admin"
        async with self.db.session(write=True) as s:
            key, secret = await operator.create_key(s, self.clock.now(), ws, name, tuple(scopes), brand_ids=brands,
                                                    role=role, user_id=user_id)
        self._objects[secret] = key
        return secret

    async def key_beyond_role(self, ws: Workspace, scopes: tuple[str, ...] | list[str], role: str = "member",
                              name: str = "legacy key") -> str:
        """A key holding scopes beyond its owner's role, as keys made before key creation refused that could
        (written to the row directly: no route or command makes one). For the dispatcher's own role check."""
        secret = await self.key(ws, scopes=[s for s in scopes if s in ROLE_SCOPES[role]] or ["brands:read"],
                                role=role, name=name)
        async with self.db.session(write=True) as s:
            row = await s.get(ApiKey, self._objects[secret].id)
            assert row is not None
            row.scopes = [x for x in ALL_SCOPES if x in scopes]
            s.add(row)
        return secret

    def remember_key(self, secret: str, row: ApiKey) -> None:
        """What `key` records of a key it made, for a key row written another way (tests/conftest.py: world)."""
        self._objects[secret] = row

    def key_row(self, secret: str) -> Any:
        return self._objects[secret]

    async def integration(self, brand: Brand, platform: str, status: str = "connected",
                          provider_state: dict[str, Any] | None = None, **kwargs: Any) -> Integration:
        async with self.db.session(write=True) as s:
            return await operator.connect_integration(s, self.clock.now(), brand, platform, status=status,
                                                      provider_state=provider_state, **kwargs)

    # -- calling ---------------------------------------------------------------------------------------
    @staticmethod
    def auth(secret: str | None, **headers: str) -> dict[str, str]:
        out = {k.replace("_", "-"): v for k, v in headers.items()}
        if secret:
            out["Authorization"] = f"Bearer {secret}"
        return out

    async def call(self, name: str, secret: str | None, idempotency_key: str | None = None,
                   **args: Any) -> Outcome:
        """Dispatch an endpoint directly with flat arguments (what the MCP adapter does)."""
        ep = catalogue.get(name)
        if idempotency_key is not None:
            args["idempotency_key"] = idempotency_key
        return await self.dispatcher.invoke(ep, args, token=secret)

    async def row_counts(self) -> dict[str, int]:
        """Rows per table: compare before and after a call to prove it wrote nothing. One statement (a count per
        table, UNION ALL) rather than one per table: ~50 round trips less, and ~180 tests call it twice."""
        async with self.db.session(write=False) as s:
            rows = (await (await s.connection()).execute(_ROW_COUNTS)).all()
        return {name: count for name, count in rows}


def make_settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "home": tmp_path, "database_url": url, "rate_limit_requests": 0, "worker_enabled": False,
        "validate_responses": True, "public_url": "http://testserver",
    }
    values.update(overrides)
    return Settings(**values)


async def make_env(tmp_path: Path, url: str, backend: str, **settings: Any) -> Env:
    clock = FrozenClock(START)
    rt = Runtime(settings=make_settings(tmp_path, url, **settings), db=Database(url), clock=clock)
    dispatcher = Dispatcher(rt)
    app = build_app(rt, run_worker=False, dispatcher=dispatcher)
    rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
    return Env(rt=rt, dispatcher=dispatcher, app=app, rest=rest, clock=clock, backend=backend)


def copy_template(template: Path, tmp_path: Path) -> str:
    target = tmp_path / "socialpub.db"
    shutil.copy(template, target)
    return f"sqlite+aiosqlite:///{target}"
