"""The one lease mechanism (storage/leases.py) that background jobs and the publishing worker share: renewal and
release touch only the rows the worker still holds, and the retry rule doubles, caps and honours Retry-After."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import select

from storage import queue
from storage.leases import RetryPolicy
from storage.tables.jobs import Job

pytestmark = pytest.mark.anyio
LEASE = timedelta(minutes=5)


def test_retry_policy_doubles_caps_and_honours_retry_after() -> None:
    policy = RetryPolicy(base=timedelta(seconds=30), cap=timedelta(hours=1), max_attempts=5)
    assert [policy.delay(n).total_seconds() for n in (1, 2, 3, 4)] == [30, 60, 120, 240]
    assert policy.delay(20) == timedelta(hours=1)
    assert policy.delay(1, retry_after=90) == timedelta(seconds=90)  # the other side asked for longer
    assert policy.delay(3, retry_after=10) == timedelta(seconds=120)  # never shorter than the rule
    assert policy.delay(1, retry_after=10 ** 9) == timedelta(hours=1)  # capped either way
    assert not policy.exhausted(4) and policy.exhausted(5)
    assert policy.exhausted(2, max_attempts=2) and not policy.exhausted(1, max_attempts=2)


async def rows(env) -> dict[str, Job]:
    async with env.db.session(write=False) as s:
        return {j.id: j for j in (await s.exec(select(Job))).all()}


async def test_renew_and_release_touch_only_the_rows_the_owner_holds(env) -> None:
    now = env.clock.now()
    async with env.db.session(write=True) as s:
        ids = [(await queue.enqueue(s, now, "probe", {"n": n})).id for n in range(4)]
    mine = await queue.claim(env.db, now, "w1", lease=LEASE, limit=2)
    theirs = await queue.claim(env.db, now, "w2", lease=LEASE, limit=2)
    assert sorted(mine + theirs) == sorted(ids)

    later = now + timedelta(minutes=3)
    async with env.db.session(write=True) as s:
        assert await queue.JOBS.renew(await s.connection(), "w1", later, LEASE) == 2
    held = await rows(env)
    assert {held[i].lease_expires_at for i in mine} == {later + LEASE}
    assert {held[i].lease_expires_at for i in theirs} == {now + LEASE}  # another worker's leases stay

    async with env.db.session(write=True) as s:  # w1 gives back one of its own and one of w2's: only its own goes
        released = await queue.JOBS.release(await s.connection(), "w1", [mine[0], theirs[0]], later,
                                            {"status": "queued"})
    assert released == 1
    after = await rows(env)
    assert (after[mine[0]].status, after[mine[0]].lease_owner, after[mine[0]].lease_expires_at) == ("queued", None, None)
    assert after[theirs[0]].lease_owner == "w2" and after[theirs[0]].status == "running"
    assert await queue.claim(env.db, later, "w3", lease=LEASE) == [mine[0]]  # due again for anyone
