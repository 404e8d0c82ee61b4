"""Claiming due Schedules (tools/publishing/claims.py): what is due, crash recovery through an expired lease, the
hand-back of claims never started, and a lease renewal that reads a worker's own claims through the partial
`lease_owner` index, not the whole schedules table (EXPLAIN on both backends)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import event, insert, select, text

from schemas.ids import new_id
from storage.tables.publishing import Schedule
from tests.publishing.support import schedule_of, seed_post, seed_schedule
from tools.publishing import claims

pytestmark = pytest.mark.anyio
SCHEDULES = Schedule.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it


async def test_only_due_approved_schedules_are_claimed_and_an_expired_lease_is_recovered(world) -> None:
    env = world.env
    now = env.clock.now()
    item, _ = await seed_post(env.db, world.brand_a, now)
    ig = [world.integrations["instagram"].id]
    due = await seed_schedule(env.db, world.brand_a, item, ig, now, at=now - timedelta(minutes=1))
    await seed_schedule(env.db, world.brand_a, item, ig, now, at=now + timedelta(hours=1))  # not yet
    await seed_schedule(env.db, world.brand_a, item, ig, now, at=now - timedelta(minutes=1),
                        approval_status="pending_review")  # held
    assert await claims.claim_due(env.rt, "w1", limit=10) == [due]
    claimed = await schedule_of(env.db, due)
    assert (claimed.status, claimed.lease_owner, claimed.lease_expires_at) == ("publishing", "w1", now + claims.LEASE)
    assert await claims.claim_due(env.rt, "w2", limit=10) == []  # held by w1
    env.clock.advance(seconds=claims.LEASE.total_seconds() + 1)  # w1 died: its lease runs out
    assert await claims.claim_due(env.rt, "w2", limit=10) == [due]
    assert (await schedule_of(env.db, due)).lease_owner == "w2"


async def test_release_hands_back_only_the_owners_claims_as_they_were(world) -> None:
    env = world.env
    now = env.clock.now()
    item, _ = await seed_post(env.db, world.brand_a, now)
    ig = [world.integrations["instagram"].id]
    ids = [await seed_schedule(env.db, world.brand_a, item, ig, now, at=now - timedelta(minutes=1)) for _ in range(3)]
    mine = await claims.claim_due(env.rt, "w1", limit=2)
    (theirs,) = await claims.claim_due(env.rt, "w2", limit=2)
    await claims.release(env.rt, "w1", [*mine, theirs])
    for schedule_id in mine:  # never started: scheduled again, free for anyone at once
        row = await schedule_of(env.db, schedule_id)
        assert (row.status, row.lease_owner, row.lease_expires_at) == ("scheduled", None, None)
    assert (await schedule_of(env.db, theirs)).lease_owner == "w2"
    assert sorted(await claims.claim_due(env.rt, "w3", limit=10)) == sorted(mine) and set(ids) == {*mine, theirs}


async def _plan(env, statement: str, params) -> str:
    prefix = "EXPLAIN QUERY PLAN " if env.backend == "sqlite" else "EXPLAIN "
    async with env.db.session(write=True) as s:
        conn = await s.connection()
        rows = (await conn.exec_driver_sql(prefix + statement, params)).all()
    return "\n".join(" ".join(str(v) for v in row) for row in rows)


async def test_lease_renewal_reads_the_owners_claims_through_the_lease_owner_index(world) -> None:
    env = world.env
    now = env.clock.now()
    item, _ = await seed_post(env.db, world.brand_a, now)
    sid = await seed_schedule(env.db, world.brand_a, item, [world.integrations["instagram"].id], now,
                              at=now - timedelta(minutes=1))
    async with env.db.session(write=True) as s:  # a large table of which a worker holds a handful
        conn = await s.connection()
        row = dict((await conn.execute(select(SCHEDULES).where(SCHEDULES.c.id == sid))).mappings().one())
        await conn.execute(insert(SCHEDULES), [{**row, "id": new_id("sch"), "status": "published"}
                                               for _ in range(4000)])
    for owner in ("w1", "w2"):
        await claims.claim_due(env.rt, owner, limit=1)
    if env.backend == "postgres":
        async with env.db.session(write=True) as s:
            await (await s.connection()).execute(text("ANALYZE schedules"))

    sent: list[tuple[str, object]] = []

    def capture(_conn, _cursor, statement, parameters, _context, _many) -> None:
        sent.append((statement, parameters))

    engine = env.db.write_engine.sync_engine
    event.listen(engine, "before_cursor_execute", capture)
    try:
        async with env.db.session(write=True) as s:
            assert await claims.SCHEDULES.renew(await s.connection(), "w1", env.clock.now(), claims.LEASE) == 1
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    [(statement, params)] = [(q, p) for q, p in sent if q.lstrip().upper().startswith("UPDATE SCHEDULES")]
    plan = await _plan(env, statement, params)
    assert "ix_schedules_lease_owner" in plan, plan
    if env.backend == "sqlite":
        assert "SCAN schedules" not in plan, plan
    else:
        assert "Seq Scan on schedules" not in plan, plan
