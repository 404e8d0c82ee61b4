"""Migration 0013_refresh_due fills `refresh_due_at` for accounts that existed before it, from the expiry their
sealed credentials keep readable (less a week, the longest adapter window; the tick's first visit sets the
exact time), so no account is missed by the indexed token tick after an upgrade."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.migrate import upgrade

pytestmark = pytest.mark.anyio
ROW = ("INSERT INTO integrations (id, workspace_id, brand_id, platform, status, provider, credentials, "
       "created_at, updated_at) VALUES (:id, 'ws_1', 'brd_1', :platform, 'connected', :provider, :credentials, "
       "'2026-11-01 00:00:00.000000', '2026-11-01 00:00:00.000000')")


async def test_existing_accounts_get_a_due_time(tmp_path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'old.db'}")
    await upgrade(db, "0012_operations")
    rows = {"int_li": ("linkedin", "linkedin", {"sealed": "x", "expires_at": "2027-01-20T10:00:00.000Z"}),
            "int_tg": ("telegram", "telegram", {"sealed": "x"}),
            "int_sb": ("x", "sandbox", {"access_token": "t", "expires_at": "2027-01-20T10:00:00.000Z"}),
            "int_bad": ("x", "x", {"sealed": "x", "expires_at": "soon"})}
    with sqlite3.connect(tmp_path / "old.db") as conn:  # foreign keys are off by default: no brand needed
        for key, (platform, provider, creds) in rows.items():
            conn.execute(ROW, {"id": key, "platform": platform, "provider": provider, "credentials": json.dumps(creds)})
    conn.close()
    await upgrade(db)
    async with db.read_engine.connect() as conn:
        found = dict((await conn.execute(text("SELECT id, refresh_due_at FROM integrations"))).all())
    await db.dispose()
    assert str(found["int_li"]).startswith("2027-01-13 10:00:00")  # a week before its expiry
    assert found["int_tg"] is None and found["int_sb"] is None  # nothing expires / the sandbox
    assert found["int_bad"] is not None and str(found["int_bad"]) <= datetime.now(UTC).isoformat()  # due at once
