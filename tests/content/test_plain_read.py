"""The content list's session-free read transaction on SQLite (storage/db.py `plain_read`, `Endpoint.session_free`):
the same bytes as the session path for first and cursor pages, one snapshot for the request's reads, a connection
kept for the next read and never left in a transaction, and anything that needs the ORM handed to the session
path. PostgreSQL keeps the session path."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest
from sqlalchemy import text

from storage.db import Database, PlainRead, SessionNeeded
from tests.content.conftest import Content, full_body
from tools.content import routes, rules

pytestmark = pytest.mark.anyio

REQUEST_ID = re.compile(rb"req_[0-9A-Z]{26}")


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many plain reads were begun, how many fell back, and how many read sessions were opened."""
    seen = {"plain": 0, "fell_back": 0, "read_session": 0}
    plain, session = Database.plain_read, Database.session

    exit_plain = PlainRead.__aexit__

    async def counted_exit(self: PlainRead, kind: object, exc: BaseException | None, tb: object) -> None:
        try:
            await exit_plain(self, kind, exc, tb)
        except SessionNeeded:
            seen["fell_back"] += 1
            raise
        if isinstance(exc, SessionNeeded):
            seen["fell_back"] += 1

    def counted_plain(self: Database) -> Any:
        seen["plain"] += 1
        return plain(self)

    def counted_session(self: Database, *, write: bool) -> Any:
        if not write:
            seen["read_session"] += 1
        return session(self, write=write)

    monkeypatch.setattr(Database, "plain_read", counted_plain)
    monkeypatch.setattr(PlainRead, "__aexit__", counted_exit)
    monkeypatch.setattr(Database, "session", counted_session)
    return seen


def session_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session-free read falls back at once: the session path, for comparison."""
    def refused(self: Database) -> Any:
        raise SessionNeeded("test")

    monkeypatch.setattr(Database, "plain_read", refused)


async def pages(c: Content) -> list[bytes]:
    """First pages in both directions and sizes, and the pages their cursors lead to; request IDs masked."""
    out = []
    for query in ("limit=20", "limit=2", "limit=2&order_direction=asc", "limit=3&order_direction=desc"):
        resp = await c.env.rest.get(c.url(f"?{query}"), headers=c.headers())
        assert resp.status_code == 200, resp.json()
        out.append(REQUEST_ID.sub(b"REQ", resp.content))
        cursor = resp.json()["data"]["next_cursor"]
        while cursor:
            resp = await c.env.rest.get(c.url(f"?{query}&cursor={cursor}"), headers=c.headers())
            assert resp.status_code == 200, resp.json()
            out.append(REQUEST_ID.sub(b"REQ", resp.content))
            cursor = resp.json()["data"]["next_cursor"]
    bad = await c.env.rest.get(c.url("?limit=2&cursor=ci_01M00000000000000000000000"), headers=c.headers())
    out.append(REQUEST_ID.sub(b"REQ", bad.content))
    return out


async def seed(c: Content) -> None:
    await c.created({"name": "Plain", "single_copy": {"caption": "Hello", "hashtags": ["a"]}})
    await c.created({"name": "Labelled", "label_ids": c.labels,
                     "single_copy": {"caption": "Labels", "hashtags": []}})
    await c.created(full_body(c))  # settings, media, integrations: platforms and media IDs in the summary
    for n in range(4):
        await c.created({"name": f"More {n}", "single_copy": {"caption": f"n{n}", "hashtags": []}})


async def test_list_takes_the_plain_path_on_sqlite_only(content: Content, paths: dict[str, int]) -> None:
    await seed(content)
    assert (await content.env.rest.get(content.url("?limit=2"), headers=content.headers())).status_code == 200
    before = dict(paths)
    first = await content.env.rest.get(content.url("?limit=2"), headers=content.headers())
    cursor = first.json()["data"]["next_cursor"]
    second = await content.env.rest.get(content.url(f"?limit=2&cursor={cursor}"), headers=content.headers())
    assert first.status_code == second.status_code == 200
    sqlite = content.env.backend == "sqlite"
    assert paths["plain"] - before["plain"] == (2 if sqlite else 0)
    assert paths["fell_back"] == 0
    # The caller is remembered from the first call: no read session at all on SQLite.
    assert paths["read_session"] - before["read_session"] == (0 if sqlite else 2)


async def test_pages_equal_the_session_paths(content: Content, monkeypatch: pytest.MonkeyPatch,
                                             paths: dict[str, int]) -> None:
    await seed(content)
    plain = await pages(content)
    with monkeypatch.context() as m:
        session_path_only(m)
        slow = await pages(content)
    assert len(plain) > 6
    assert plain == slow
    assert paths["fell_back"] == 0


async def test_orm_work_falls_back_to_a_session(content: Content, monkeypatch: pytest.MonkeyPatch,
                                                paths: dict[str, int]) -> None:
    """A session-free list whose handler asks for the ORM (even swallowing the refusal) runs again in a session,
    with the same answer."""
    await seed(content)
    expected = await pages(content)
    tries: list[str] = []
    original = rules.label_ids_of

    async def needs_session(session: Any, item_ids: list[str]) -> Any:
        tries.append(type(session).__name__)
        with contextlib.suppress(SessionNeeded):
            await session.exec(text("SELECT 1"))
        return await original(session, item_ids)

    monkeypatch.setattr(routes, "label_ids_of", needs_session)
    assert await pages(content) == expected
    if content.env.backend == "sqlite":
        assert tries[:2] == ["PlainRead", "AsyncSession"] and paths["fell_back"] == len(expected) - 1
    else:
        assert set(tries) == {"AsyncSession"} and paths["plain"] == 0


async def seeded_sqlite_list(content: Content) -> tuple[Any, Any, dict]:
    """The seeded brand's first-page list statement on SQLite (plain reads are SQLite's; PostgreSQL skips)."""
    if content.env.backend != "sqlite":
        pytest.skip("plain reads are SQLite's")
    await seed(content)
    return content.env.db, routes._LIST._statements[True, False], {"brand_id": content.brand_id, "keyset_limit": 50}


async def test_one_snapshot_per_request(content: Content) -> None:
    """The reads of one plain read see the database as of its first read, as a read session's do, however
    another connection writes in between; the next plain read sees the write."""
    db, query, params = await seeded_sqlite_list(content)
    async with db.plain_read() as read:
        before = await query.rows(read, params)
        async with db.session(write=True) as s:
            await s.exec(text("UPDATE content_items SET name = 'changed' WHERE brand_id = :b"),
                         params={"b": content.brand_id})
        assert await query.rows(read, params) == before
        assert "changed" not in {r.name for r in before}
    async with db.plain_read() as read:
        assert {r.name for r in await query.rows(read, params)} == {"changed"}


async def test_plain_read_gives_its_connection_back_out_of_any_transaction(sqlite_env: Any) -> None:
    env = sqlite_env
    db = env.db
    query = routes._LIST._statements[True, False]
    params = {"brand_id": "brd_none", "keyset_limit": 1}
    async with db.plain_read() as read:
        assert await query.rows(read, params) == []
        (raw, (driver, _)) = read._begun
        assert driver._conn.in_transaction
    assert db._read_idle == [raw] and not driver._conn.in_transaction
    with pytest.raises(RuntimeError):
        async with db.plain_read() as read:
            await query.rows(read, params)
            assert read._begun[0] is raw  # the kept connection, taken again
            raise RuntimeError
    assert db._read_idle == [raw] and not driver._conn.in_transaction
    with pytest.raises(SessionNeeded):  # swallowed refusals still end the block with SessionNeeded
        async with db.plain_read() as read:
            await query.rows(read, params)
            with contextlib.suppress(SessionNeeded):
                await read.exec(text("SELECT 1"))
    assert db._read_idle == [raw] and not driver._conn.in_transaction
    async with db.plain_read():
        pass  # nothing read: no connection taken, nothing begun
    assert db._read_idle == [raw]
    await db.dispose()
    assert db._read_idle == []


async def test_a_read_alone_in_a_plain_read_joins_its_transaction(content: Content) -> None:
    """`Prepared.rows_alone` (a handler's only read) in a plain read runs in that read's transaction and snapshot,
    on the kept connection: no pool checkout of its own."""
    db, query, params = await seeded_sqlite_list(content)
    async with db.plain_read() as read:
        before = await query.rows_alone(read, params)
        raw = read._begun[0]
        async with db.session(write=True) as s:
            await s.exec(text("UPDATE content_items SET name = 'changed' WHERE brand_id = :b"),
                         params={"b": content.brand_id})
        assert await query.rows_alone(read, params) == before and read._begun[0] is raw
    assert db._read_idle[-1] is raw
