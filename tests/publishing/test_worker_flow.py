"""End to end through the Schedule routes: a held Schedule waits for approval by a key with publish:execute,
then the worker publishes it at its time; the routes refuse to change a Schedule once its run started."""

from __future__ import annotations

import pytest

from server.worker import Worker
from tests.schedules.support import Sched
from tools.publishing import worker as publishing

pytestmark = pytest.mark.anyio


async def test_held_then_approved_schedule_publishes_at_its_time(world) -> None:
    env = world.env
    sc = await Sched(world).setup()
    item = await sc.item()
    writer = await sc.key("schedule:write", "schedule:read")
    approver = await sc.key("schedule:write", "schedule:read", "publish:execute")
    created = await sc.create(item, writer)
    assert created.status == 201, created.body
    sid = created.body["data"]["schedule"]["id"]

    env.clock.advance(days=3, minutes=30)  # past its time: held, so nothing happens
    await Worker(env.rt, owner="w1").run_once()  # its ticks may remind reviewers of it (docs/events.md)
    assert env.sandbox.calls == [] and await publishing.publish_due(env.rt, "w1") == 0

    env.clock.set("2026-03-04T09:00:00.000Z")  # before its time again, to approve a future Schedule
    approved = await env.call("approve_schedule", approver, idempotency_key="approve-1", brand_id=sc.brand.id,
                              schedule_id=sid, confirm_schedule_id=sid)
    assert approved.status == 200, approved.body
    assert approved.body["data"]["schedule"]["status"] == "scheduled" and env.rt.work_ready.is_set()
    assert await publishing.publish_due(env.rt, "w1") == 0  # not due yet

    env.clock.set("2026-03-05T09:30:00.000Z")
    assert await Worker(env.rt, owner="w1").run_once() == 1
    got = await env.call("get_schedule", writer, brand_id=sc.brand.id, schedule_id=sid)
    s = got.body["data"]
    assert s["status"] == "published" and s["latest_execution"]["id"].startswith("run_")
    assert sorted(c["integration_id"] for c in env.sandbox.calls if c["op"] == "publish") == sc.targets

    # a run has happened: reschedule and cancel are refused and change nothing
    for name, extra in (("cancel_schedule", {"confirm_schedule_id": sid}),
                        ("reschedule_schedule", {"confirm_schedule_id": sid, "scheduled_at": "2026-03-06T09:30:00Z"})):
        out = await env.call(name, approver, idempotency_key=f"{name}-1", brand_id=sc.brand.id, schedule_id=sid,
                             **extra)
        assert out.status == 409 and out.body["error"]["code"] == "CONFLICT", (name, out.body)
    assert (await env.call("get_schedule", writer, brand_id=sc.brand.id, schedule_id=sid)).body["data"] == s
