"""`get_context` without a session on SQLite (`Endpoint.session_free` on a read, storage/db.py `plain_read`): the
same bytes as the session path over REST's dispatch and MCP's rendering, on both backends; no ORM session and no
pool checkout once the key is remembered; a key not yet remembered falls back to the session path (rate-limited
once); a failed read leaves no transaction on a kept connection; concurrent calls; `dispose` closes the kept
connection."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
from sqlalchemy import event

from server.mcp_server.tools import render
from storage import db as storage_db
from storage.db import Database, PlainRead
from storage.prepared import Prepared
from tools import catalogue

pytestmark = pytest.mark.anyio

REQUEST_ID = re.compile(r"req_[0-9A-Za-z]+")


def masked(outcome: Any) -> tuple[int, str, str]:
    """Status, REST body and MCP result as JSON text, request IDs masked."""
    ep = catalogue.get("get_context")
    body = json.dumps(outcome.body, ensure_ascii=False, separators=(",", ":"))
    mcp = json.dumps(render(ep, outcome), ensure_ascii=False, separators=(",", ":"))
    return outcome.status, REQUEST_ID.sub("req_X", body), REQUEST_ID.sub("req_X", mcp)


async def both_paths(env: Any, secret: str | None, **args: Any) -> tuple[Any, Any]:
    ep = catalogue.get("get_context")
    assert ep.session_free
    fast = await env.dispatcher.invoke(ep, dict(args), token=secret)
    slow = await env.dispatcher.invoke(dataclasses.replace(ep, session_free=False), dict(args), token=secret)
    return masked(fast), masked(slow)


async def test_same_bytes_as_the_session_path(env: Any) -> None:
    ws = await env.workspace()
    brands = [await env.brand(ws, f"Brand {i}") for i in range(3)]
    every = await env.key(ws)
    some = await env.key(ws, scopes=("posts:read",), brands=[brands[2].id, brands[0].id], name="narrow")
    other = await env.workspace("Other")
    empty = await env.key(other, name="no brands")
    for secret, args in [(every, {}), (every, {"scope_disclosure": "effective"}), (some, {}),
                         (some, {"scope_disclosure": "effective"}), (empty, {}),
                         (every, {"unknown": 1}), (None, {}), ("sk_not_a_key", {}), (every, {"scope_disclosure": 3})]:
        for _ in range(2):  # the key looked up, then remembered
            fast, slow = await both_paths(env, secret, **args)
            assert fast == slow, (secret, args)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many ORM sessions were opened and read connections checked out of the pool (SQLite env only)."""
    seen = {"session": 0, "checkout": 0}
    session = Database.session

    def counted_session(self: Database, *, write: bool) -> Any:
        seen["session"] += 1
        return session(self, write=write)

    monkeypatch.setattr(Database, "session", counted_session)
    return seen


def count_checkouts(env: Any, seen: dict[str, int]) -> None:
    def checkout(*_: Any) -> None:
        seen["checkout"] += 1

    event.listen(env.db.read_engine.sync_engine.pool, "checkout", checkout)


async def test_no_session_once_the_key_is_remembered(sqlite_env: Any, opened: dict[str, int]) -> None:
    env = sqlite_env
    count_checkouts(env, opened)
    ws = await env.workspace()
    await env.brand(ws)
    secret = await env.key(ws)
    first = await env.call("get_context", secret)  # not remembered yet: looked up in a session
    assert first.status == 200 and opened["session"] >= 1
    assert (await env.call("get_context", secret)).status == 200  # remembered: no session, a connection kept
    kept = list(env.db._read_idle)
    assert len(kept) == 1
    opened.update(session=0, checkout=0)
    for _ in range(3):
        again = await env.call("get_context", secret)
        assert again.status == 200 and again.body["data"] == first.body["data"]
    assert opened == {"session": 0, "checkout": 0}
    assert env.db._read_idle == kept  # the same connection, taken and given back


async def test_a_key_not_remembered_falls_back_once_rate_limited(sqlite_env: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    env = sqlite_env
    ws = await env.workspace()
    secret = await env.key(ws)
    buckets: list[str] = []
    limit = env.dispatcher._rate_limit

    async def counted(bucket: str) -> None:
        buckets.append(bucket)
        await limit(bucket)

    monkeypatch.setattr(env.dispatcher, "_rate_limit", counted)
    opened: list[str] = []
    plain_read, session = Database.plain_read, Database.session

    def watched(self: Database) -> PlainRead:
        opened.append("plain")
        return plain_read(self)

    def counted_session(self: Database, *, write: bool) -> Any:
        opened.append("session" if not write else "write")
        return session(self, write=write)

    monkeypatch.setattr(Database, "plain_read", watched)
    monkeypatch.setattr(Database, "session", counted_session)
    env.dispatcher.callers._entries.clear()
    outcome = await env.call("get_context", secret)
    assert outcome.status == 200 and outcome.body["data"]["api_key"]["id"]
    assert opened[:2] == ["plain", "session"]  # refused at the key lookup, then the session path
    assert len(buckets) == 1 and buckets[0].startswith("key:")
    buckets.clear()
    opened.clear()
    assert (await env.call("get_context", secret)).status == 200
    assert opened == ["plain"] and len(buckets) == 1


async def test_a_failed_read_leaves_no_transaction(sqlite_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    env = sqlite_env
    ws = await env.workspace()
    secret = await env.key(ws)
    for _ in range(2):
        assert (await env.call("get_context", secret)).status == 200
    assert len(env.db._read_idle) == 1
    fetch = Prepared._fetch

    def broken(self: Prepared, *args: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(Prepared, "_fetch", broken)
    assert (await env.call("get_context", secret)).status == 500
    assert all(not raw.driver_connection._conn.in_transaction for raw in env.db._read_idle)
    monkeypatch.setattr(Prepared, "_fetch", fetch)
    assert (await env.call("get_context", secret)).status == 200
    assert len(env.db._read_idle) == 1


async def test_dispose_closes_the_kept_connection(sqlite_env: Any) -> None:
    env = sqlite_env
    ws = await env.workspace()
    secret = await env.key(ws)
    for _ in range(2):
        assert (await env.call("get_context", secret)).status == 200
    (raw,) = env.db._read_idle
    sqlite = raw.driver_connection._conn
    await env.db.dispose()
    assert env.db._read_idle == []
    with pytest.raises(Exception, match="closed"):
        sqlite.execute("SELECT 1")


async def test_brand_links_are_links(env: Any) -> None:
    """The context's brand links come from paths formatted once per catalogue (tools/brands.py `_brand_links`):
    the same dicts as `link`, and rebuilt when the catalogue changes."""
    from tools import brands
    from tools.links import link

    ws = await env.workspace()
    made = [await env.brand(ws, f"Brand {i}") for i in range(2)]
    data = (await env.call("get_context", await env.key(ws))).body["data"]
    assert [b["links"] for b in data["brands"]] == [
        {"targets": link("list_targets", brand_id=b.id), "media_imports": link("import_media", brand_id=b.id),
         "content_items": link("create_content_item", brand_id=b.id)} for b in made]
    first = data["brands"][0]["links"]
    assert first["targets"]["required_scopes"] is not data["brands"][1]["links"]["targets"]["required_scopes"]
    assert list(first["media_imports"]) == ["href", "method", "required_scopes"]
    built = brands._brand_links()
    assert brands._brand_links() is built
    brands._BRAND_LINKS[0] = ((), built)  # another catalogue: built again
    assert brands._brand_links() is not built


async def test_concurrent_calls(sqlite_env: Any) -> None:
    import anyio

    env = sqlite_env
    ws = await env.workspace()
    await env.brand(ws)
    secret = await env.key(ws)
    expected = (await env.call("get_context", secret)).body["data"]
    found: list[Any] = []

    async def one() -> None:
        outcome = await env.call("get_context", secret)
        found.append((outcome.status, outcome.body["data"]))

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(one)
    assert found == [(200, expected)] * 20
    assert 1 <= len(env.db._read_idle) <= storage_db._READ_IDLE_MAX
    assert all(not raw.driver_connection._conn.in_transaction for raw in env.db._read_idle)
