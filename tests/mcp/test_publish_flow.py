"""The agent's whole publishing path through MCP tools: preflight, an approved Schedule, the worker, then the
outcome read back as the Schedule, History, Publications, the receipt and notifications — with one target
failing while the other publishes."""

from __future__ import annotations

import pytest

from server.worker import Worker
from storage.tables.integrations import Integration
from tests.mcp.support import envelope, in_memory
from tests.schedules.support import WHEN, Sched, new_key

pytestmark = pytest.mark.anyio


async def call(client, name: str, **args):
    return envelope(await client.call_tool(name, args))


async def test_agent_schedules_and_reads_outcomes_over_mcp(world) -> None:
    env = world.env
    sc = await Sched(world).setup()
    item = await sc.item()
    # TikTok refuses the post (a final provider error); Instagram publishes.
    await env.integration(sc.brand, "threads")  # an unrelated account: never called
    async with env.db.session(write=True) as s:
        tt = await s.get(Integration, sc.tt)
        tt.provider_state = {**(tt.provider_state or {}), "faults": {"publish": "rejected"}}
        s.add(tt)

    async with in_memory(env, world.full_key) as client:
        pre = await call(client, "preflight_content", brand_id=sc.brand.id, content_item_id=item,
                         integration_ids=sc.targets, scheduled_at=WHEN, approval_status="approved")
        assert pre["data"]["can_schedule"] is True, pre
        assert pre["data"]["links"]["create_schedule"]["required_scopes"] == ["schedule:write", "publish:execute"]

        created = await call(client, "create_schedule", brand_id=sc.brand.id, content_item_id=item,
                             integration_ids=sc.targets, scheduled_at=WHEN, approval_status="approved",
                             idempotency_key=new_key())
        schedule = created["data"]["schedule"]
        assert created["data"]["outcome"] == "created" and schedule["status"] == "scheduled"
        assert schedule["latest_execution"] is None and env.sandbox.calls == []  # creating calls no provider

        env.clock.set("2026-03-05T09:30:00.000Z")
        assert await Worker(env.rt, owner="w1").run_once() >= 1

        got = (await call(client, "get_schedule", brand_id=sc.brand.id, schedule_id=schedule["id"]))["data"]
        assert got["status"] == "partially_published"
        states = {t["integration_id"]: t["state"] for t in got["latest_execution"]["targets"]}
        assert states == {sc.ig: "published", sc.tt: "failed"}

        history = (await call(client, "list_history", brand_id=sc.brand.id))["data"]["items"]
        by_status = {h["status"]: h for h in history}
        assert set(by_status) == {"published", "failed"}
        assert by_status["published"]["permalink_url"].startswith("https://")
        assert by_status["failed"]["permalink_url"] is None

        pubs = await call(client, "list_publications", brand_id=sc.brand.id)
        failed = [p for p in pubs["data"] if p["status"] == "failed"]
        assert len(failed) == 1 and failed[0]["failure_reason"] and "sandbox" not in failed[0]["failure_reason"]

        receipt = await call(client, "get_schedule_receipt", brand_id=sc.brand.id, schedule_id=schedule["id"])
        text = str(receipt)
        assert "sbx_" not in text and "sandbox fault" not in text  # no provider IDs or provider words

        notes = (await call(client, "list_notifications", brand_id=sc.brand.id))["data"]["items"]
        assert {"post_published", "post_failed"} <= {n["category"] for n in notes}

    publishes = [c for c in env.sandbox.calls if c["op"] == "publish"]
    assert sorted(c["integration_id"] for c in publishes) == sc.targets  # each target called once
