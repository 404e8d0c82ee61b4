"""The statements behind idempotency keys: reserve a key, read what it stored, settle it with the answer, forget it.

A key is reserved by inserting its record before the handler runs (so a concurrent request with the same key
waits on the unique index, then finds the record and replays it) and settled in the same transaction with the
response. The insert is `ON CONFLICT DO NOTHING` on (API key, endpoint, key): a new key costs one statement
instead of a lookup and an insert, and a key already stored answers "not reserved" rather than an
IntegrityError that would end the transaction. Plain Core statements built once, no ORM objects
(storage/statements.py): this runs on every idempotent write (bench/HISTORY.md,
"Write latency").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from storage.statements import Query, Write
from storage.tables.idempotency import IdempotencyRecord

_TABLE = IdempotencyRecord.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
_UNIQUE = ["api_key_id", "endpoint", "key"]  # uq_idempotency_key
_RESERVE = {
    "sqlite": Write(sqlite.insert(_TABLE).on_conflict_do_nothing(index_elements=_UNIQUE)),
    "postgresql": Write(postgresql.insert(_TABLE).on_conflict_do_nothing(index_elements=_UNIQUE)),
}
_STORED = Query(select(_TABLE.c.id, _TABLE.c.request_hash, _TABLE.c.status_code, _TABLE.c.response,
                          _TABLE.c.created_at).where(_TABLE.c.api_key_id == bindparam("api_key_id"),
                                                     _TABLE.c.endpoint == bindparam("endpoint"),
                                                     _TABLE.c.key == bindparam("key")))
_SETTLE = Write(update(_TABLE).where(_TABLE.c.id == bindparam("record_id")).values(
    status_code=bindparam("status_code"), response=bindparam("response")))
_FORGET = delete(_TABLE).where(_TABLE.c.id == bindparam("record_id"))


async def reserve(session: AsyncSession, *, api_key_id: str, endpoint: str, key: str, request_hash: str,
                  now: datetime) -> str | None:
    """The new record's ID, or None when this key is already stored (read it with `stored`)."""
    record_id = new_id("idm")
    written = await _RESERVE[session.bind.dialect.name].run(session, {  # pyright: ignore[reportOptionalMemberAccess]  # the session is bound to the engine at start-up
        "id": record_id, "api_key_id": api_key_id, "endpoint": endpoint, "key": key, "request_hash": request_hash,
        "status_code": 200, "response": None, "created_at": now})
    return record_id if written == 1 else None


async def stored(session: AsyncSession, *, api_key_id: str, endpoint: str, key: str) -> Any | None:
    """The stored record (id, request_hash, status_code, response, created_at), or None."""
    found = await _STORED.rows(session, {"api_key_id": api_key_id, "endpoint": endpoint, "key": key})
    return found[0] if found else None


async def settle(session: AsyncSession, record_id: str, status_code: int, response: dict[str, Any]) -> None:
    await _SETTLE.run(session, {"record_id": record_id, "status_code": status_code, "response": response})


async def forget(session: AsyncSession, record_id: str) -> None:
    await session.exec(_FORGET, params={"record_id": record_id})
