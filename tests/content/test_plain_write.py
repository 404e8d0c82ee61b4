"""The create's session-free write transaction on SQLite (storage/db.py `plain_write`, `Endpoint.session_free`):
it stores what the session path stores, keeps nothing of a failed or cancelled request, waits for another
process's writer, replays idempotent requests, and hands anything that needs the ORM to the session path.
PostgreSQL keeps the session path."""

from __future__ import annotations

import contextlib
import sqlite3
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from sqlalchemy import text

from storage import db as storage_db
from storage import idempotency
from storage.db import Database, SessionNeeded
from tests.content.conftest import Content, full_body
from tools import catalogue
from tools.content import routes

pytestmark = pytest.mark.anyio

BODY = {"name": "Plain", "single_copy": {"caption": "Hello", "hashtags": ["a"]}}
TABLES = ("content_items", "content_item_labels", "idempotency_records")


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many write transactions each path opened (and how many session-free ones fell back)."""
    seen = {"plain": 0, "session": 0, "fell_back": 0}
    plain, session = Database.plain_write, Database.session

    @asynccontextmanager
    async def counted_plain(self: Database) -> Any:
        seen["plain"] += 1
        try:
            async with plain(self) as s:
                yield s
        except SessionNeeded:
            seen["fell_back"] += 1
            raise

    def counted_session(self: Database, *, write: bool) -> Any:
        if write:
            seen["session"] += 1
        return session(self, write=write)

    monkeypatch.setattr(Database, "plain_write", counted_plain)
    monkeypatch.setattr(Database, "session", counted_session)
    return seen


def session_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session-free create falls back at once: the session path, for comparison."""
    @asynccontextmanager
    async def refused(self: Database) -> Any:
        raise SessionNeeded("test")
        yield  # pragma: no cover

    monkeypatch.setattr(Database, "plain_write", refused)


async def invoke(c: Content, args: dict[str, Any]) -> Any:
    """Through the dispatcher as MCP calls it (no REST admission: authentication and the rate limit inside)."""
    return await c.env.dispatcher.invoke(catalogue.get("create_content_item"), args, token=c.secret)


async def counts(c: Content) -> dict[str, int]:
    found = await c.env.row_counts()
    return {t: found[t] for t in TABLES}


async def stored_rows(c: Content, item_id: str) -> tuple[Any, ...]:
    """The item's stored values as the database holds them (times and JSON as text), its labels, and its
    idempotency record's stored response, with the item's ID masked."""
    async with c.env.db.session(write=False) as s:
        cols = (await s.exec(text("SELECT * FROM content_items WHERE id = :id"), params={"id": item_id})).keys()
        cast = ", ".join(f"CAST({col} AS TEXT)" for col in cols if col != "id")
        item = (await s.exec(text(f"SELECT {cast} FROM content_items WHERE id = :id"),
                             params={"id": item_id})).one()
        labels = (await s.exec(text("SELECT label_id, brand_id FROM content_item_labels WHERE content_item_id = :id "
                                    "ORDER BY label_id"), params={"id": item_id})).all()
        records = (await s.exec(text("SELECT endpoint, key, request_hash, status_code, CAST(response AS TEXT), "
                                     "CAST(created_at AS TEXT) FROM idempotency_records WHERE CAST(response AS TEXT) LIKE :like"),
                                params={"like": f"%{item_id}%"})).all()
    return tuple(item), tuple(map(tuple, labels)), tuple(tuple(str(v).replace(item_id, "ID") for v in r)
                                                         for r in records)


async def test_create_takes_the_plain_path_on_sqlite_only(content: Content, paths: dict[str, int]) -> None:
    # The key's last use is recorded after a success (a write session of its own), once a minute.
    assert (await content.env.rest.get(content.url(), headers=content.headers())).status_code == 200
    before = dict(paths)
    await content.created(BODY)
    await content.created(full_body(content))  # labels, integrations, media: prepared reads, still plain
    sqlite = content.env.backend == "sqlite"
    assert paths["plain"] - before["plain"] == (2 if sqlite else 0)
    assert paths["fell_back"] == 0
    assert paths["session"] - before["session"] == (0 if sqlite else 2)


@pytest.mark.parametrize("body", ["simple", "full"])
async def test_stored_bytes_equal_the_session_paths(content: Content, monkeypatch: pytest.MonkeyPatch,
                                                    body: str) -> None:
    payload = BODY if body == "simple" else full_body(content)
    plain = await content.create(payload, key="k-plain")
    with monkeypatch.context() as m:
        session_path_only(m)
        slow = await content.create(payload, key="k-session")
    assert plain.status_code == slow.status_code == 201
    a, b = plain.json()["data"], slow.json()["data"]
    ida, idb = a["content_item"]["id"], b["content_item"]["id"]
    assert plain.content.decode().replace(ida, "ID").replace(plain.json()["meta"]["request_id"], "R") == \
        slow.content.decode().replace(idb, "ID").replace(slow.json()["meta"]["request_id"], "R")
    rows_a, rows_b = await stored_rows(content, ida), await stored_rows(content, idb)
    assert rows_a[:2] == rows_b[:2]
    assert [r[:1] + r[2:] for r in rows_a[2]] == [r[:1] + r[2:] for r in rows_b[2]]  # all but the key


async def test_idempotent_replay(content: Content, paths: dict[str, int]) -> None:
    first = await content.create(BODY, key="again")
    second = await content.create(BODY, key="again")
    assert first.status_code == 201 and second.status_code == 200
    assert second.headers["Idempotency-Replayed"] == "true"
    assert second.json()["data"] == first.json()["data"]
    conflict = await content.create({**BODY, "name": "other"}, key="again")
    assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert paths["fell_back"] == 0
    assert (await counts(content))["content_items"] == 1


async def test_a_handler_failing_midway_leaves_nothing(content: Content, monkeypatch: pytest.MonkeyPatch,
                                                       paths: dict[str, int]) -> None:
    before = await counts(content)

    def broken(*_: Any, **__: Any) -> Any:  # after the item, its labels and the key are written
        raise RuntimeError("midway")

    monkeypatch.setattr(routes, "link", broken)
    resp = await content.create({**BODY, "label_ids": content.labels}, key="fails")
    assert resp.status_code == 500 and resp.json()["error"]["code"] == "INTERNAL_ERROR"
    assert await counts(content) == before
    monkeypatch.undo()
    assert (await content.create(BODY, key="fails")).status_code == 201  # the key was not kept; the writer turn
    assert paths["fell_back"] == 0                                       # and connection were given back


async def test_orm_work_falls_back_to_a_session_and_keeps_nothing_of_the_first_try(
        content: Content, monkeypatch: pytest.MonkeyPatch, paths: dict[str, int]) -> None:
    """A session-free handler that asks for the ORM after writing: the plain transaction is rolled back (even
    when the handler swallows the refusal) and the request runs once more, in a session."""
    tries: list[str] = []
    original = routes._insert

    async def needs_session(call: Any, req: Any) -> Any:
        found = await original(call, req)
        tries.append(type(call.session).__name__)
        with contextlib.suppress(SessionNeeded):  # swallowed: must still not commit the first try
            await call.session.flush()
        return found

    monkeypatch.setattr(routes, "_insert", needs_session)
    before = await counts(content)
    resp = await content.create({**BODY, "label_ids": content.labels}, key="orm")
    assert resp.status_code == 201
    after = await counts(content)
    assert {t: after[t] - before[t] for t in TABLES} == {"content_items": 1, "content_item_labels": 2,
                                                         "idempotency_records": 1}
    if content.env.backend == "sqlite":
        assert tries == ["PlainWrite", "AsyncSession"] and paths["fell_back"] == 1
    else:
        assert tries == ["AsyncSession"] and paths["plain"] == 0


@pytest.mark.parametrize("where", ["at the start", "in the handler"])
async def test_fallback_applies_the_rate_limit_once(content: Content, monkeypatch: pytest.MonkeyPatch,
                                                    where: str) -> None:
    assert (await invoke(content, {**BODY, "brand_id": content.brand_id})).status == 201  # the caller is cached
    checked: list[str] = []
    limiter = content.env.dispatcher.limiter
    check = limiter.check

    async def counted(bucket: str) -> Any:
        checked.append(bucket)
        return await check(bucket)

    monkeypatch.setattr(limiter, "check", counted)
    if where == "at the start":
        session_path_only(monkeypatch)
    else:
        original = routes._insert

        async def needs_session(call: Any, req: Any) -> Any:
            await call.session.flush()
            return await original(call, req)

        monkeypatch.setattr(routes, "_insert", needs_session)
    resp = await invoke(content, {**BODY, "brand_id": content.brand_id})
    assert resp.status == 201 and len(checked) == 1


async def test_a_cancelled_create_leaves_nothing(content: Content, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (await invoke(content, {**BODY, "brand_id": content.brand_id})).status == 201  # the caller is cached
    before = await counts(content)
    reached = anyio.Event()
    original = routes._insert
    sessions: list[str] = []

    async def slow(call: Any, req: Any) -> Any:
        found = await original(call, req)
        sessions.append(type(call.session).__name__)
        reached.set()
        await anyio.sleep(30)  # cancelled here, with the item, its labels and the key written
        return found

    monkeypatch.setattr(routes, "_insert", slow)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(invoke, content, {**BODY, "brand_id": content.brand_id, "label_ids": content.labels,
                                            "idempotency_key": "cancelled"})
            await reached.wait()
            tg.cancel_scope.cancel()
    assert sessions == ["PlainWrite" if content.env.backend == "sqlite" else "AsyncSession"]
    assert await counts(content) == before
    monkeypatch.undo()
    assert (await content.create(BODY, key="cancelled")).status_code == 201


async def test_waits_for_another_process_writer(content: Content) -> None:
    env = content.env
    if env.backend != "sqlite":
        pytest.skip("SQLite's write lock")
    other = sqlite3.connect(env.db.write_engine.url.database, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE workspaces SET name = 'other process'")
    got: list[Any] = []

    async def create() -> None:
        got.append(await content.create(BODY, key="locked"))

    with anyio.fail_after(60):  # a guard against a deadlock, not a timing assertion
        async with anyio.create_task_group() as tg:
            tg.start_soon(create)
            await anyio.sleep(0.3)  # the create met the lock and waits on a worker thread
            assert not got
            assert (await content.get("ci_none")).status_code == 404  # the loop still serves
            other.commit()
    other.close()
    assert got[0].status_code == 201


async def test_locked_past_the_busy_timeout_is_503_and_nothing_stored(
        content: Content, monkeypatch: pytest.MonkeyPatch) -> None:
    env = content.env
    if env.backend != "sqlite":
        pytest.skip("SQLite's write lock")
    monkeypatch.setattr(storage_db, "SQLITE_BUSY_TIMEOUT_MS", 100)  # read when the engine is made
    db = Database(str(env.db.write_engine.url))
    monkeypatch.setattr(env.rt, "db", db)
    before = await counts(content)
    other = sqlite3.connect(env.db.write_engine.url.database, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    try:
        resp = await content.create(BODY, key="busy")
    finally:
        other.rollback()
        other.close()
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
    assert await counts(content) == before
    assert (await content.create(BODY, key="busy")).status_code == 201
    await db.dispose()


async def test_plain_write_rolls_back_on_error(sqlite_env: Any) -> None:
    env = sqlite_env
    ws = await env.workspace()
    key_id = env.key_row(await env.key(ws)).id
    with pytest.raises(RuntimeError):
        async with env.db.plain_write() as s:
            assert await idempotency.reserve(s, api_key_id=key_id, endpoint="e", key="k", request_hash="h",
                                             now=env.clock.now())
            raise RuntimeError
    with pytest.raises(SessionNeeded):  # even when the block swallows the refusal
        async with env.db.plain_write() as s:  # turn and connection given back, nothing kept
            assert await idempotency.stored(s, api_key_id=key_id, endpoint="e", key="k") is None
            with pytest.raises(SessionNeeded):
                await s.exec(text("SELECT 1"))
