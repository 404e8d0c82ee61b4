"""Core fix: a job due exactly now (a whole-second clock, as tests freeze it) is claimed on SQLite too."""

from __future__ import annotations

from datetime import timedelta

import pytest

from storage import queue

pytestmark = pytest.mark.anyio


async def test_job_due_exactly_now_is_claimed(env) -> None:
    now = env.clock.now()
    assert now.microsecond == 0
    async with env.db.session(write=True) as s:
        job = await queue.enqueue(s, now, "test.kind", {})
    claimed = await queue.claim(env.db, now, "w1", lease=timedelta(minutes=1))
    assert claimed == [job.id]
