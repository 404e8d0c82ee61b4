"""Two workers racing over many due Schedules publish every target exactly once (both backends)."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import anyio
import pytest
from sqlmodel import func, select

from server.worker import Worker
from storage.tables.publishing import Publication, PublishExecution, PublishTarget, Schedule
from tests.publishing.support import seed_post
from tools.publishing import worker as publishing
from tools.schedules.rows import new_schedule

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SCHEDULES = 1000
PLATFORMS = ("instagram", "facebook", "linkedin")


async def test_two_workers_publish_every_target_exactly_once(world) -> None:
    env = world.env
    now = env.clock.now()
    item, _ = await seed_post(env.db, world.brand_a, now)
    ids = [world.integrations[p].id for p in PLATFORMS]
    async with env.db.session(write=True) as s:
        for n in range(SCHEDULES):
            # one or two targets each, due at slightly different times
            targets = [ids[n % 3]] if n % 2 else sorted({ids[n % 3], ids[(n + 1) % 3]})
            new_schedule(s, brand=world.brand_a, content_item_id=item, integration_ids=targets,
                         scheduled_at=now + timedelta(seconds=n % 60), approval_status="approved", source="api",
                         user_id="usr_test", key_id="key_test", now=now)
    env.clock.advance(minutes=2)

    claimed: Counter[str] = Counter()
    original = publishing.run_schedule

    async def counting(rt, owner, schedule_id, *args):
        claimed[owner] += 1
        await original(rt, owner, schedule_id, *args)

    publishing.run_schedule = counting
    try:
        async def drain(worker: Worker) -> None:
            while await worker.run_once():
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, Worker(env.rt, owner="worker-1"))
            tg.start_soon(drain, Worker(env.rt, owner="worker-2"))
    finally:
        publishing.run_schedule = original

    async with env.db.session(write=False) as s:
        statuses = dict((await s.exec(select(Schedule.status, func.count()).group_by(Schedule.status))).all())
        runs = (await s.exec(select(func.count()).select_from(PublishExecution))).one()
        states = dict((await s.exec(select(PublishTarget.state, func.count()).group_by(PublishTarget.state))).all())
        tokens = (await s.exec(select(PublishTarget.integration_id, PublishTarget.idempotency_token))).all()
        pubs = dict((await s.exec(select(Publication.status, func.count()).group_by(Publication.status))).all())
    expected_targets = SCHEDULES // 2 + 2 * (SCHEDULES // 2)
    assert statuses == {"published": SCHEDULES} and runs == SCHEDULES
    assert states == {"published": expected_targets} and pubs == {"published": expected_targets}
    # each Schedule was claimed once in all (no double claims), and every token reached the network once
    assert sum(claimed.values()) == SCHEDULES
    calls = Counter(c["token"] for c in env.sandbox.calls if c["op"] == "publish")
    assert len(calls) == expected_targets and set(calls.values()) == {1}
    ledger = env.sandbox.ledger.publishes()
    assert set(ledger) == set(tokens) and set(ledger.values()) == {1}
    print(f"\n{env.backend}: claims per worker {dict(claimed)}")
