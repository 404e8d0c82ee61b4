"""The job queue: atomic claims with a lease, recovery after a crash, backoff, and the worker loop."""

from __future__ import annotations

from datetime import timedelta

import anyio
import pytest
from sqlmodel import select

from server import worker as worker_mod
from server.worker import Worker
from storage import queue
from storage.queue import RetryLater
from storage.tables.jobs import Job

pytestmark = pytest.mark.anyio
LEASE = timedelta(minutes=5)


async def enqueue_many(env, n: int, kind: str = "probe") -> list[str]:
    async with env.db.session(write=True) as s:
        return [(await queue.enqueue(s, env.clock.now(), kind, {"n": i})).id for i in range(n)]


async def jobs(env) -> list[Job]:
    async with env.db.session(write=False) as s:
        return list((await s.exec(select(Job).order_by(Job.id))).all())


async def test_racing_claims_never_share_a_job(env) -> None:
    await enqueue_many(env, 60)
    claimed: dict[str, list[str]] = {"w1": [], "w2": [], "w3": []}

    async def drain(owner: str) -> None:
        while ids := await queue.claim(env.db, env.clock.now(), owner, lease=LEASE, limit=7):
            claimed[owner].extend(ids)

    async with anyio.create_task_group() as tg:
        for owner in claimed:
            tg.start_soon(drain, owner)
    all_ids = [i for ids in claimed.values() for i in ids]
    assert len(all_ids) == 60 and len(set(all_ids)) == 60
    rows = await jobs(env)
    assert all(j.status == "running" and j.attempts == 1 for j in rows)
    assert {j.lease_owner for j in rows if j.id in claimed["w1"]} <= {"w1"}


async def test_future_jobs_wait_and_expired_leases_are_recovered(env) -> None:
    async with env.db.session(write=True) as s:
        later = await queue.enqueue(s, env.clock.now(), "probe", {}, run_at=env.clock.now() + timedelta(hours=1))
    assert await queue.claim(env.db, env.clock.now(), "w1", lease=LEASE) == []
    env.clock.advance(hours=1)
    assert await queue.claim(env.db, env.clock.now(), "w1", lease=LEASE) == [later.id]
    # w1 "crashes": its lease is still valid, so nobody else takes the job...
    assert await queue.claim(env.db, env.clock.now(), "w2", lease=LEASE) == []
    # ...until the lease expires; then w2 recovers it, and w1 can no longer settle it.
    env.clock.advance(minutes=6)
    assert await queue.claim(env.db, env.clock.now(), "w2", lease=LEASE) == [later.id]
    async with env.db.session(write=True) as s:
        assert await queue.finish(s, later.id, "w1", env.clock.now()) is False
        assert await queue.finish(s, later.id, "w2", env.clock.now()) is True
    (job,) = await jobs(env)
    assert job.status == "done" and job.attempts == 2


async def test_fail_backs_off_then_gives_up(env) -> None:
    async with env.db.session(write=True) as s:
        job = await queue.enqueue(s, env.clock.now(), "probe", {}, max_attempts=2)
    await queue.claim(env.db, env.clock.now(), "w", lease=LEASE)
    async with env.db.session(write=True) as s:
        await queue.fail(s, job.id, "w", env.clock.now(), "blip", retry=True)
    (row,) = await jobs(env)
    assert row.status == "queued" and row.run_at == env.clock.now() + timedelta(seconds=2)
    assert await queue.claim(env.db, env.clock.now(), "w", lease=LEASE) == []  # backing off
    env.clock.advance(seconds=2)
    assert await queue.claim(env.db, env.clock.now(), "w", lease=LEASE) == [job.id]
    async with env.db.session(write=True) as s:
        await queue.fail(s, job.id, "w", env.clock.now(), "blip again", retry=True)
    (row,) = await jobs(env)
    assert row.status == "failed" and row.last_error == "blip again" and row.attempts == 2


async def test_dedupe_key_allows_one_live_job(env) -> None:
    async with env.db.session(write=True) as s:
        a = await queue.enqueue(s, env.clock.now(), "probe", {}, dedupe_key="media:1")
        b = await queue.enqueue(s, env.clock.now(), "probe", {}, dedupe_key="media:1")
    assert a.id == b.id
    await queue.claim(env.db, env.clock.now(), "w", lease=LEASE)
    async with env.db.session(write=True) as s:
        await queue.finish(s, a.id, "w", env.clock.now())
        c = await queue.enqueue(s, env.clock.now(), "probe", {}, dedupe_key="media:1")
    assert c.id != a.id


async def test_worker_runs_handlers_and_retries(env, monkeypatch) -> None:
    seen: list[int] = []
    flaky = {"left": 1}

    async def ok(rt, job_id, payload) -> None:
        seen.append(payload["n"])

    async def transient(rt, job_id, payload) -> None:
        if flaky["left"]:
            flaky["left"] -= 1
            raise RetryLater("not yet")

    async def broken(rt, job_id, payload) -> None:
        raise ValueError("bad payload")

    monkeypatch.setattr(worker_mod, "registry", lambda: ({"ok": ok, "transient": transient, "broken": broken}, ()))
    await enqueue_many(env, 3, "ok")
    await enqueue_many(env, 1, "transient")
    await enqueue_many(env, 1, "broken")
    w = Worker(env.rt, owner="w")
    assert await w.run_once() == 5
    assert sorted(seen) == [0, 1, 2]
    by_kind = {j.kind: j for j in await jobs(env)}
    assert by_kind["transient"].status == "queued" and by_kind["transient"].last_error == "not yet"
    assert by_kind["broken"].status == "queued"  # unexpected errors retry too, until max_attempts
    assert "ValueError" in (by_kind["broken"].last_error or "")
    env.clock.advance(seconds=2)
    await w.run_once()
    assert {j.kind: j.status for j in await jobs(env)}["transient"] == "done"
