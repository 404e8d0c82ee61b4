"""storage/prepared_write.py: a hot write run straight on SQLite's write connection stores exactly what the same
statement through the session stores (JSON and times through the columns' own bind processors), reports the
rows it wrote, and raises SQLite's errors as SQLAlchemy's."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from storage import idempotency
from storage.prepared_write import PreparedWrite
from tests.support import Env

pytestmark = pytest.mark.anyio

RESPONSE = {"data": {"id": "ci_1", "labels": ["a", "é"], "n": 1.5, "none": None}, "pagination": None}


async def keyed_write(env: Env, key_id: str, key: str) -> tuple[str | None, str | None]:
    async with env.db.session(write=True) as s:
        first = await idempotency.reserve(s, api_key_id=key_id, endpoint="create_content_item", key=key,
                                          request_hash="h" * 64, now=env.clock.now())
        assert first is not None
        await idempotency.settle(s, first, 201, RESPONSE)
        again = await idempotency.reserve(s, api_key_id=key_id, endpoint="create_content_item", key=key,
                                          request_hash="h" * 64, now=env.clock.now())
    return first, again


async def test_prepared_writes_store_what_the_session_stores(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = await env.workspace()
    key_id = env.key_row(await env.key(ws)).id
    fast, fast_again = await keyed_write(env, key_id, "fast")
    monkeypatch.setattr(PreparedWrite, "_compile", lambda self, dialect, names: None)  # every write via the session
    slow, slow_again = await keyed_write(env, key_id, "slow")
    assert fast_again is None and slow_again is None  # a stored key is not reserved again, either way

    async with env.db.session(write=False) as s:
        raw = {r[0]: tuple(r[1:]) for r in (await s.exec(text(  # type: ignore[call-overload]
            "SELECT id, endpoint, request_hash, status_code, CAST(response AS TEXT), CAST(created_at AS TEXT) "
            "FROM idempotency_records"))).all()}
        stored = await idempotency.stored(s, api_key_id=key_id, endpoint="create_content_item", key="fast")
    assert raw[fast] == raw[slow]
    assert stored.response == RESPONSE and stored.status_code == 201 and stored.created_at == env.clock.now()


async def test_prepared_write_errors_are_sqlalchemy_errors(env: Env) -> None:
    ws = await env.workspace()
    key_id = env.key_row(await env.key(ws)).id
    with pytest.raises(IntegrityError):
        async with env.db.session(write=True) as s:
            record = await idempotency.reserve(s, api_key_id=key_id, endpoint="e", key="k", request_hash="h",
                                               now=env.clock.now())
            assert record is not None
            await idempotency.settle(s, record, None, RESPONSE)  # type: ignore[arg-type]  # status_code NOT NULL
