"""Fixtures. `env` runs each test on SQLite and, when SOCIALPUB_TEST_POSTGRES_URL is set, on PostgreSQL too.

Tests that only exercise one backend-independent path can use `sqlite_env` to run once.
"""

from __future__ import annotations

import compileall
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpcore
import pytest

# Bytecode, written once. Where PYTHONDONTWRITEBYTECODE is set (as in CI here), every `socialpub` process a test
# spawns (~300 per run) compiled the project's modules from source (~0.05 s of CPU each) and every xdist worker
# recompiled and re-rewrote all ~150 test modules while collecting (~5 s). The run's first process compiles the
# packages into their `__pycache__` (gitignored; ~0.3 s; stale files are recompiled by their timestamps), and the
# test processes let pytest cache its rewritten test modules; spawned processes still only read bytecode.
if "PYTEST_XDIST_WORKER" not in os.environ:
    for _package in ("schemas", "storage", "providers", "tools", "server"):
        compileall.compile_dir(Path(__file__).resolve().parent.parent / _package, quiet=2)
sys.dont_write_bytecode = False

from sqlalchemy import Table  # noqa: E402
from sqlmodel import SQLModel, col, select  # noqa: E402

from schemas.time import FrozenClock  # noqa: E402
from storage.tables.accounts import ApiKey, Workspace  # noqa: E402
from storage.tables.brands import Brand  # noqa: E402
from storage.tables.integrations import Integration  # noqa: E402
from tests.support import (  # noqa: E402  (after the bytecode set-up above)
    PG_ENV,
    START,
    Env,
    copy_template,
    create_pg_database,
    drop_pg_database,
    drop_pg_templates,
    empty_all,
    make_env,
    migrate_sqlite_template,
)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return migrate_sqlite_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def pg_url() -> Any:
    base = os.environ.get(PG_ENV)
    if not base:
        yield None
        return
    url = create_pg_database(base)
    yield url
    drop_pg_database(base, url)


BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@dataclass
class _Backend:
    name: str
    url_for: Any


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, sqlite_template: Path, pg_url: str | None, tmp_path: Path) -> _Backend:
    if request.param == "postgres":
        if not pg_url:
            pytest.skip(f"PostgreSQL leg: set {PG_ENV} to run it")
        return _Backend("postgres", lambda: pg_url)
    return _Backend("sqlite", lambda: copy_template(sqlite_template, tmp_path))


async def _env(backend: _Backend, tmp_path: Path, **settings: Any) -> AsyncIterator[Env]:
    url = backend.url_for()
    env = await make_env(tmp_path, url, backend.name, **settings)
    if backend.name == "postgres":
        await empty_all(env.db)
    try:
        yield env
    finally:
        await env.rest.aclose()
        await env.rt.close()


@pytest.fixture
async def env(backend: _Backend, tmp_path: Path) -> AsyncIterator[Env]:
    async for e in _env(backend, tmp_path):
        yield e


@pytest.fixture
async def sqlite_env(sqlite_template: Path, tmp_path: Path) -> AsyncIterator[Env]:
    async for e in _env(_Backend("sqlite", lambda: copy_template(sqlite_template, tmp_path)), tmp_path):
        yield e


@pytest.fixture
def env_factory(backend: _Backend, tmp_path: Path) -> Any:
    """For tests that need non-default settings: `async with env_factory(rate_limit_requests=2) as env`."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def make(**settings: Any) -> AsyncIterator[Env]:
        async for e in _env(backend, tmp_path, **settings):
            yield e

    return make


@dataclass
class World:
    """A workspace with two brands (A and B), connected accounts on A and B, and keys."""

    env: Env
    ws: Any
    brand_a: Any
    brand_b: Any
    full_key: str  # every scope, every brand, admin role
    key_b_only: str  # every scope, restricted to brand B
    integrations: dict[str, Any]  # platform -> integration of brand A


async def _seed_world(env: Env) -> World:
    ws = await env.workspace()
    a = await env.brand(ws, "Brand A", timezone="Europe/Paris")
    b = await env.brand(ws, "Brand B")
    integrations = {p: await env.integration(a, p) for p in ("instagram", "tiktok", "facebook", "youtube",
                                                              "linkedin", "x", "pinterest", "threads")}
    await env.integration(b, "instagram")
    full = await env.key(ws, role="admin", name="full")
    only_b = await env.key(ws, brands=[b.id], name="only b")
    return World(env, ws, a, b, full, only_b, integrations)


@dataclass(frozen=True)
class _WorldRows:
    """The rows `_seed_world` wrote, by table (parents first), and the IDs and secrets the World names."""

    rows: list[tuple[Table, list[dict[str, Any]]]]
    ws: str
    brand_a: str
    brand_b: str
    integrations: dict[str, str]
    keys: dict[str, str]  # secret -> key ID
    full_key: str
    key_b_only: str


# Seeding the world is ~14 write transactions through the operator actions (~75-90 ms of CPU); 1,502 of ~4,160
# test runs use it. The first use per backend in a process seeds it that way and keeps its rows; later uses insert the same rows
# in one transaction and load the objects back. Only when the database is empty and the clock unmoved, so the
# rows are exactly what seeding would write (IDs and secrets aside: the same ones for every test of a process).
_WORLDS: dict[str, _WorldRows] = {}


async def _world_rows(env: Env, world: World) -> _WorldRows:
    rows = []
    async with env.db.session(write=False) as s:
        conn = await s.connection()
        for table in SQLModel.metadata.sorted_tables:
            found = [dict(r) for r in (await conn.execute(table.select())).mappings().all()]
            if found:
                rows.append((table, found))
    return _WorldRows(rows, world.ws.id, world.brand_a.id, world.brand_b.id,
                      {p: i.id for p, i in world.integrations.items()},
                      {secret: env.key_row(secret).id for secret in (world.full_key, world.key_b_only)},
                      world.full_key, world.key_b_only)


async def _replay_world(env: Env, snap: _WorldRows) -> World:
    async with env.db.session(write=True) as s:
        conn = await s.connection()
        for table, rows in snap.rows:
            await conn.execute(table.insert(), rows)
    async with env.db.session(write=False) as s:
        ws = await s.get_one(Workspace, snap.ws)
        brands = {b.id: b for b in (await s.exec(select(Brand).where(col(Brand.id).in_([snap.brand_a,
                                                                                         snap.brand_b])))).all()}
        by_id = {i.id: i for i in (await s.exec(select(Integration).where(
            col(Integration.id).in_(list(snap.integrations.values()))))).all()}
        keys = {k.id: k for k in (await s.exec(select(ApiKey).where(col(ApiKey.id).in_(list(snap.keys.values())))
                                               )).all()}
    for secret, key_id in snap.keys.items():
        env.remember_key(secret, keys[key_id])
    return World(env, ws, brands[snap.brand_a], brands[snap.brand_b], snap.full_key, snap.key_b_only,
                 {p: by_id[i] for p, i in snap.integrations.items()})


@pytest.fixture
async def world(env: Env) -> World:
    pristine = env.clock.now() == FrozenClock(START).now() and not any((await env.row_counts()).values())
    snap = _WORLDS.get(env.backend)
    if pristine and snap is not None:
        return await _replay_world(env, snap)
    world = await _seed_world(env)
    if pristine:
        _WORLDS[env.backend] = await _world_rows(env, world)
    return world


def pytest_sessionfinish(session: pytest.Session) -> None:
    drop_pg_templates()  # tests/support.py: the PostgreSQL template this process migrated, if any


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: the PostgreSQL leg of a database test")
    config.addinivalue_line("markers", "slow: takes more than a few seconds")


@pytest.fixture(scope="session")
def s3_server() -> Any:
    """moto's S3 server on a free 127.0.0.1 port (tests/media/s3.py)."""
    from tests.media.s3 import start_moto

    yield from start_moto()


@pytest.fixture
def pg_scratch() -> Any:
    """A private, migrated PostgreSQL database for subprocess tests (dropped afterwards); skips without one."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"needs PostgreSQL: set {PG_ENV}")
    url = create_pg_database(base)
    yield url
    drop_pg_database(base, url)


# Parallel runs (pytest-xdist, `-n auto --dist loadfile` in pyproject.toml, one worker per core plus one): each test file runs whole on one
# worker, so a module-scoped fixture (a served subprocess, Chromium, a built bundle) starts once as in a serial
# run. Session fixtures are per worker and safe side by side: scratch databases and temporary directories are
# named per process, and servers (the Bluesky PDS included) bind free ports.
#
# Files are handed to the workers in the order below: those holding a `slow` test first, then the rest by number
# of tests, most first. xdist's own order (by number of tests alone) left the few-but-long files (Chromium, the
# docs' shell sessions, the fuzzer) to the end, where one worker ran them while the other sat idle
# (`--no-loadscope-reorder` in pyproject.toml keeps the order given here).


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores. The suite waits on subprocesses, servers and Chromium for part
    of its time; on 2 cores a third worker took the clean-clone run from 6 min 31 s to 6 min 02 s, a fourth
    made it slower again (6 min 10 s), bench/HISTORY.md."""
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):  # serial runs keep the collection order
        return
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    ordered = sorted(files.values(), key=lambda tests: (not any(t.get_closest_marker("slow") for t in tests),
                                                        -len(tests)))
    items[:] = [item for tests in ordered for item in tests]


@pytest.fixture
def dialled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address a TCP connection was opened to (httpcore's own backend, which the address policy's transport
    uses): tests/providers/test_addresses.py and tests/networks/test_rebinding.py assert what was never dialled."""
    seen: list[str] = []
    # pyright reads httpcore's stand-in AnyIOBackend (declared for when anyio is missing); anyio is installed
    original = httpcore.AnyIOBackend.connect_tcp  # pyright: ignore[reportAttributeAccessIssue]  # see above

    async def spy(self, host, port, *args, **kwargs):
        seen.append(host)
        return await original(self, host, port, *args, **kwargs)

    monkeypatch.setattr(httpcore.AnyIOBackend, "connect_tcp", spy)
    return seen
