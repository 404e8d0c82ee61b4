"""Write transactions of storage/db.py: on SQLite the writers of one process take turns, first come first served,
with a bounded wait that ends like a busy timeout (503 over the API); PostgreSQL writers do not take turns. SQLite
writes run on the event loop's thread, and a writer blocked by another process waits on a worker thread, so the
loop keeps serving meanwhile."""

from __future__ import annotations

import sqlite3

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from sqlalchemy.exc import OperationalError
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from storage import db as storage_db
from storage.db import Database
from storage.tables.accounts import Workspace
from tests.support import Env

pytestmark = pytest.mark.anyio


async def workspace(s: AsyncSession, ws_id: str) -> Workspace:
    """The workspace row the test made."""
    row = await s.get(Workspace, ws_id)
    assert row is not None, ws_id
    return row


async def rename(env: Env, ws_id: str, name: str) -> None:
    """One write statement, so the session really holds SQLite's write lock (BEGIN is lazy)."""
    async with env.db.session(write=True) as s:
        (await workspace(s, ws_id)).name = name


async def hold_writer_turn(env: Env, ws_id: str, entered: anyio.Event, release: anyio.Event) -> None:
    async with env.db.session(write=True) as s:
        (await workspace(s, ws_id)).name = "held"
        await s.flush()  # BEGIN IMMEDIATE has run: SQLite's write lock is ours
        entered.set()
        await release.wait()


async def test_sqlite_writers_take_turns_in_arrival_order(sqlite_env: Env) -> None:
    env = sqlite_env
    ws = await env.workspace()
    entered, release = anyio.Event(), anyio.Event()
    order: list[int] = []

    async def writer(n: int) -> None:
        async with env.db.session(write=True) as s:
            order.append(n)
            (await workspace(s, ws.id)).name = f"writer {n}"

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_writer_turn, env, ws.id, entered, release)
        await entered.wait()
        for n in range(6):
            tg.start_soon(writer, n)
            await wait_all_tasks_blocked()  # writer n is queued before writer n + 1 arrives
        assert order == []  # nobody enters while the turn is held
        release.set()
    assert order == list(range(6))
    async with env.db.session(write=False) as s:
        assert (await workspace(s, ws.id)).name == "writer 5"


async def test_sqlite_writer_wait_is_bounded_and_answers_503(sqlite_env: Env,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    env = sqlite_env
    ws = await env.workspace()
    brand = await env.brand(ws)
    secret = await env.key(ws)
    monkeypatch.setattr(storage_db, "WRITER_TURN_TIMEOUT_S", 0.05)
    entered, release = anyio.Event(), anyio.Event()
    resp = None  # set inside the task group, whose exit pyright reads as able to swallow an exception
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_writer_turn, env, ws.id, entered, release)
        await entered.wait()
        with pytest.raises(OperationalError, match="database is locked"):
            await rename(env, ws.id, "too late")
        resp = await env.rest.post(f"/v1/brands/{brand.id}/content-items", json={"name": "Waiting draft"},
                                   headers=env.auth(secret))
        release.set()
    assert resp is not None and resp.status_code == 503 and resp.headers["retry-after"] == "1"
    assert resp.json()["error"]["code"] == "DEPENDENCY_UNAVAILABLE"
    # The turn is free again, and nothing of the refused writes was stored.
    resp = await env.rest.post(f"/v1/brands/{brand.id}/content-items", json={"name": "Later draft"},
                               headers=env.auth(secret))
    assert resp.status_code == 201
    async with env.db.session(write=False) as s:
        assert (await workspace(s, ws.id)).name == "held"


async def test_sqlite_write_session_inside_a_write_session_fails_at_once(sqlite_env: Env) -> None:
    env = sqlite_env
    ws = await env.workspace()
    with anyio.fail_after(60):  # a guard against a deadlock, not a timing assertion
        async with env.db.session(write=True) as s:
            (await workspace(s, ws.id)).name = "outer"
            with pytest.raises(RuntimeError, match="already held"):
                await rename(env, ws.id, "inner")
            async with env.db.session(write=False) as r:  # reads are never queued
                assert (await r.exec(select(Workspace.id))).all() == [ws.id]
    async with env.db.session(write=False) as s:
        assert (await workspace(s, ws.id)).name == "outer"


def other_process_writer(env: Env) -> sqlite3.Connection:
    """What another process (a separate worker, the CLI) does to the file: a connection of its own holding SQLite's
    write lock."""
    path = env.db.write_engine.url.database
    assert path is not None  # a SQLite file database
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE workspaces SET name = 'other process'")
    return other


async def test_sqlite_writer_blocked_by_another_process_waits_off_the_loop(sqlite_env: Env) -> None:
    env = sqlite_env
    ws = await env.workspace()
    other = other_process_writer(env)
    done = anyio.Event()

    async def write() -> None:
        await rename(env, ws.id, "after the other process")
        done.set()

    with anyio.fail_after(60):  # a guard against a deadlock, not a timing assertion
        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            await anyio.sleep(0.2)  # the writer met the other process's lock and waits for it
            assert not done.is_set()
            async with env.db.session(write=False) as s:  # the loop still serves: a read goes through
                assert (await workspace(s, ws.id)).name == ws.name
            other.commit()
        other.close()
    async with env.db.session(write=False) as s:
        assert (await workspace(s, ws.id)).name == "after the other process"


async def test_sqlite_writer_blocked_by_another_process_times_out_like_the_busy_timeout(
        sqlite_env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env = sqlite_env
    ws = await env.workspace()
    monkeypatch.setattr(storage_db, "SQLITE_BUSY_TIMEOUT_MS", 100)  # read when the engine is made
    db = Database(str(env.db.write_engine.url))
    other = other_process_writer(env)
    try:
        with anyio.fail_after(60), pytest.raises(OperationalError, match="database is locked"):
            async with db.session(write=True) as s:
                (await workspace(s, ws.id)).name = "never stored"
        other.rollback()
        async with db.session(write=True) as s:  # the connection is usable again once the lock is free
            (await workspace(s, ws.id)).name = "stored"
    finally:
        other.close()
        await db.dispose()
    async with env.db.session(write=False) as s:
        assert (await workspace(s, ws.id)).name == "stored"


@pytest.mark.postgres
async def test_postgres_writers_do_not_take_turns(env: Env) -> None:
    if env.backend != "postgres":
        pytest.skip("PostgreSQL only: SQLite writers take turns")
    ws = await env.workspace()
    other = await env.workspace("Other workspace")
    first_in, second_in = anyio.Event(), anyio.Event()

    async def first() -> None:
        async with env.db.session(write=True) as s:
            (await workspace(s, ws.id)).name = "first"
            await s.flush()
            first_in.set()
            await second_in.wait()  # only possible if the second write transaction opens meanwhile

    async def second() -> None:
        await first_in.wait()
        async with env.db.session(write=True) as s:
            (await workspace(s, other.id)).name = "second"
            await s.flush()
            second_in.set()

    with anyio.fail_after(60):  # a guard against a deadlock, not a timing assertion
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            tg.start_soon(second)
