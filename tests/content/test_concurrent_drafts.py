"""A burst of concurrent draft creations on SQLite all succeed: no 5xx, no "database is locked".

SQLite writers of one process take turns on an in-process lock (storage/db.py) instead of retrying on SQLITE_BUSY,
so the burst also succeeds with a busy timeout far shorter than the burst takes (10 ms), which SQLite's busy
handler alone cannot do. Latency is measured by bench/write_latency.py, never asserted here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from sqlmodel import func, select

from storage import db as storage_db
from storage.tables.content import ContentItem
from storage.tables.idempotency import IdempotencyRecord
from tests.support import Env, copy_template, make_env

pytestmark = pytest.mark.anyio
BURST = 32
SHARED_KEY = 4  # of the burst, this many send one shared Idempotency-Key


@pytest.fixture(params=[None, 10], ids=["default-busy-timeout", "busy-timeout-10ms"])
async def sqlite_burst_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, sqlite_template: Path,
                           tmp_path: Path) -> AsyncIterator[Env]:
    if request.param is not None:
        monkeypatch.setattr(storage_db, "SQLITE_BUSY_TIMEOUT_MS", request.param)  # read when the engine is made
    env = await make_env(tmp_path, copy_template(sqlite_template, tmp_path), "sqlite")
    try:
        yield env
    finally:
        await env.rest.aclose()
        await env.rt.close()


async def test_concurrent_draft_creations_all_succeed(sqlite_burst_env: Env) -> None:
    env = sqlite_burst_env
    ws = await env.workspace()
    brand = await env.brand(ws)
    secret = await env.key(ws)
    url = f"/v1/brands/{brand.id}/content-items"
    answers: dict[int, Any] = {}

    async def create(n: int) -> None:
        key = "shared-key" if n < SHARED_KEY else f"key-{n}"
        body = {"name": "Shared" if n < SHARED_KEY else f"Draft {n}",
                "single_copy": {"caption": f"Caption {n if n >= SHARED_KEY else 0}", "hashtags": ["burst"]}}
        answers[n] = await env.rest.post(url, json=body, headers=env.auth(secret, Idempotency_Key=key))

    async with anyio.create_task_group() as tg:
        for n in range(BURST):
            tg.start_soon(create, n)

    statuses = {n: a.status_code for n, a in answers.items()}
    bodies = [a.text for a in answers.values() if a.status_code >= 500]
    assert not bodies, bodies  # e.g. 503 DEPENDENCY_UNAVAILABLE "database is busy" (SQLITE_BUSY)
    assert all(statuses[n] == 201 for n in range(SHARED_KEY, BURST)), statuses
    # One shared key: one creation, the others replay it (whichever came first).
    shared = [answers[n] for n in range(SHARED_KEY)]
    assert sorted(a.status_code for a in shared) == [200] * (SHARED_KEY - 1) + [201], statuses
    assert len({a.json()["data"]["content_item"]["id"] for a in shared}) == 1
    assert all(a.headers.get("idempotency-replayed") == "true" for a in shared if a.status_code == 200)

    ids = {a.json()["data"]["content_item"]["id"] for a in answers.values()}
    async with env.db.session(write=False) as s:
        stored = set((await s.exec(select(ContentItem.id).where(ContentItem.brand_id == brand.id))).all())
        records = (await s.exec(select(func.count()).select_from(IdempotencyRecord))).one()
    assert stored == ids and len(ids) == BURST - SHARED_KEY + 1
    assert records == BURST - SHARED_KEY + 1
