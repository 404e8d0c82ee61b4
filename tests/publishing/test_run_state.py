"""The run / target state machine (tools/publishing/run_state.py), one step at a time, each step its own committed
transaction: a run starts with its targets and publications and the first attempt recorded; an outcome settles
its target (published, retry with backoff, final failure) only while the worker holds the lease; the end of a
pass finishes the run or releases the lease until the earliest retry."""

from __future__ import annotations

from datetime import timedelta

import pytest

from providers.base import PostResult, ProviderError
from storage.tables.publishing import PublishExecution
from tests.publishing.support import publications_of, schedule_of, seed_post, seed_schedule, targets_of
from tools.publishing import claims, run_state
from tools.publishing.attempts import Attempt, Outcome
from tools.publishing.steps import Steps

pytestmark = pytest.mark.anyio


async def begin(steps: Steps, env, sid: str) -> tuple[list[str], Attempt]:
    """`begin_run` of a claimed Schedule with a target to attempt: (runnable target IDs, the first attempt)."""
    begun = await steps.run(lambda tx: run_state.begin_run(tx, env.rt, "w1", sid))
    assert begun is not None
    runnable, first = begun
    assert isinstance(first, Attempt)
    return runnable, first


async def claimed(world, platforms=("instagram", "facebook"), **kwargs) -> str:
    env = world.env
    now = env.clock.now()
    item, _ = await seed_post(env.db, world.brand_a, now)
    await seed_schedule(env.db, world.brand_a, item, [world.integrations[p].id for p in platforms], now,
                        at=now - timedelta(minutes=1), **kwargs)
    (sid,) = await claims.claim_due(env.rt, "w1", limit=1)
    return sid


async def test_a_run_starts_with_its_targets_publications_and_first_attempt(world) -> None:
    env = world.env
    sid = await claimed(world)
    steps = Steps(env.rt, group=False)
    runnable, first = await begin(steps, env, sid)
    assert isinstance(first, Attempt) and len(runnable) == 2
    schedule = await schedule_of(env.db, sid)
    async with env.db.session(write=False) as s:
        run = await s.get(PublishExecution, schedule.latest_execution_id)
    assert run is not None and run.status == "processing" and run.started_at == env.clock.now()
    targets = {t.id: t for t in (await targets_of(env.db, sid)).values()}
    assert set(targets) == set(runnable)
    assert targets[runnable[0]].state == "attempting" and targets[runnable[0]].attempts == 1
    assert targets[runnable[1]].state == "pending" and targets[runnable[1]].attempts == 0
    pubs = await publications_of(env.db, sid)
    assert {p.status for p in pubs.values()} == {"processing"}
    assert {p.target_id for p in pubs.values()} == set(runnable)
    assert {t.publication_id for t in targets.values()} == {p.id for p in pubs.values()}
    # another worker's begin is refused: it does not hold the lease
    assert await steps.run(lambda tx: run_state.begin_run(tx, env.rt, "w2", sid)) is None


async def test_outcomes_settle_targets_and_the_end_of_a_pass_waits_for_the_retry(world) -> None:
    env = world.env
    sid = await claimed(world)
    steps = Steps(env.rt, group=False)
    (published_id, retried_id), first = await begin(steps, env, sid)
    ok = Outcome(PostResult(publish_id="p1", permalink_url="https://example.com/p1"), None, 0.01)
    assert await steps.run(lambda tx: run_state.settle(tx, env.rt, "w1", published_id, first, ok)) is False

    second = await steps.run(lambda tx: run_state.begin_attempt(tx, env.rt, "w1", retried_id, schedule_id=sid))
    assert isinstance(second, Attempt)
    busy = Outcome(None, ProviderError("rate_limited", "slow down", retry_after=90), 0.01)
    assert await steps.run(lambda tx: run_state.settle(tx, env.rt, "w1", retried_id, second, busy)) is False
    targets = {t.id: t for t in (await targets_of(env.db, sid)).values()}
    assert targets[published_id].state == "published" and targets[published_id].publish_id == "p1"
    waiting = targets[retried_id]
    assert waiting.state == "retry_wait" and waiting.next_attempt_at == env.clock.now() + timedelta(seconds=90)

    await steps.run(lambda tx: run_state.finish_schedule(tx, env.rt, "w1", sid))
    schedule = await schedule_of(env.db, sid)
    assert (schedule.status, schedule.lease_owner) == ("publishing", None)
    assert schedule.next_attempt_at == waiting.next_attempt_at
    assert await claims.claim_due(env.rt, "w1", limit=5) == []  # not before the retry
    env.clock.advance(seconds=90)
    assert await claims.claim_due(env.rt, "w1", limit=5) == [sid]


async def test_a_worker_that_lost_the_lease_settles_nothing(world) -> None:
    env = world.env
    sid = await claimed(world, platforms=("instagram",))
    steps = Steps(env.rt, group=False)
    (target_id,), first = await begin(steps, env, sid)
    env.clock.advance(seconds=claims.LEASE.total_seconds() + 1)
    assert await claims.claim_due(env.rt, "w2", limit=1) == [sid]  # w1 looked dead
    ok = Outcome(PostResult(publish_id="p1", permalink_url=None), None, 0.01)
    assert await steps.run(lambda tx: run_state.settle(tx, env.rt, "w1", target_id, first, ok)) is False
    (target,) = (await targets_of(env.db, sid)).values()
    assert target.state == "attempting" and target.publish_id is None  # for w2 to recover


async def test_the_last_final_target_finishes_the_run(world) -> None:
    env = world.env
    sid = await claimed(world, platforms=("instagram",))
    steps = Steps(env.rt, group=False)
    (target_id,), first = await begin(steps, env, sid)
    rejected = Outcome(None, ProviderError("rejected", "no"), 0.01)
    assert await steps.run(lambda tx: run_state.settle(tx, env.rt, "w1", target_id, first, rejected)) is True
    schedule = await schedule_of(env.db, sid)
    assert (schedule.status, schedule.lease_owner, schedule.failure_reason) == (
        "failed", None, "1 of 1 targets did not publish.")
    (pub,) = (await publications_of(env.db, sid)).values()
    assert pub.status == "failed" and pub.failure_reason


async def test_an_approval_without_publish_authority_is_held(world) -> None:
    env = world.env
    sid = await claimed(world, platforms=("instagram",), key_id=None)
    steps = Steps(env.rt, group=False)
    assert await steps.run(lambda tx: run_state.begin_run(tx, env.rt, "w1", sid)) is None
    schedule = await schedule_of(env.db, sid)
    assert (schedule.status, schedule.approval_status, schedule.lease_owner) == (
        "action_required", "pending_review", None)
    assert schedule.latest_execution_id is None
