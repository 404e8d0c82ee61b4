"""Readings stopped for a missing permission resume when the account is reconnected (issue 34), driven through
the console as an admin would, read back over REST: missing → reconnect → the reading is due and taken, the
notice is cleared, and a reconnect that still lacks the permission tells the admins again. Both backends."""

from __future__ import annotations

import pytest
from sqlmodel import col, select

from storage.tables.notifications import Notification
from tests.analytics.test_collect import published
from tests.console.support import csrf_of, make_user, signed_in
from tools.analytics import collect
from tools.services.metrics import permission_notice_key

pytestmark = pytest.mark.anyio


async def _notices(env, integration_id: str) -> list[Notification]:
    async with env.db.session(write=False) as s:
        return list((await s.exec(select(Notification).where(
            Notification.type == "metrics_permission_missing",
            col(Notification.dedupe_key).startswith(permission_notice_key(integration_id))))).all())


async def test_reconnecting_the_account_resumes_its_readings(world) -> None:
    env = world.env
    sc, _, pubs = await published(world)
    x, pub = world.integrations["x"].id, pubs["x"]
    await make_user(env, world.ws, "owner@example.com")
    admin = await signed_in(env, "owner@example.com")
    csrf = csrf_of((await admin.get(f"/console/brands/{sc.brand.id}/accounts")).text)
    account = f"/console/brands/{sc.brand.id}/accounts/{x}"

    async def collection() -> dict:
        got = await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id, publication_id=pub)
        assert got.status == 200, got.body
        return got.body["data"]

    async def read_insights() -> bool:
        got = await env.call("list_integrations", world.full_key, brand_id=sc.brand.id)
        assert got.status == 200, got.body
        return next(i for i in got.body["data"] if i["id"] == x)["permissions"]["read_insights"]

    assert await read_insights() is True  # X's post metrics are read
    # The network refuses to share metrics (the sandbox's stand-in for a permission the account did not grant).
    refused = await admin.post(f"{account}/faults", data={"csrf": csrf, "operation": "post_metrics",
                                                          "kind": "rejected"})
    assert refused.status_code == 303
    env.clock.advance(hours=1)
    assert await collect.collect_due(env.rt, "w1") == 0
    data = await collection()
    assert data["collection"]["status"] == "permission_missing" and data["collection"]["next_reading_at"] is None
    notices = await _notices(env, x)
    assert notices and all(n.read_at is None for n in notices)
    assert await read_insights() is False  # what an agent listing the accounts sees

    # Granting it on the network alone changes nothing here: socialpub learns of it by the reconnect.
    assert (await admin.post(f"{account}/faults", data={"csrf": csrf, "clear": "1"})).status_code == 303
    env.clock.advance(hours=6)
    assert await collect.collect_due(env.rt, "w1") == 0
    assert (await collection())["collection"]["status"] == "permission_missing"

    reconnected = await admin.post(f"{account}/status", data={"csrf": csrf, "status": "connected"})
    assert reconnected.status_code == 303
    data = await collection()
    assert data["collection"]["status"] == "collecting"
    assert data["collection"]["next_reading_at"] is not None  # due now: the next tick takes it
    assert all(n.read_at is not None for n in await _notices(env, x))  # the repair action is cleared
    assert await read_insights() is True
    assert await collect.collect_due(env.rt, "w1") == 1
    data = await collection()
    assert data["collection"]["readings"] == 1 and data["latest"]["likes"] is not None
    assert data["collection"]["status"] == "collecting"

    # A reconnect that still did not grant it: the next refusal stops the readings and tells the admins again.
    before = len(await _notices(env, x))
    await admin.post(f"{account}/faults", data={"csrf": csrf, "operation": "post_metrics", "kind": "rejected"})
    await admin.post(f"{account}/status", data={"csrf": csrf, "status": "connected"})
    env.clock.advance(days=2)
    assert await collect.collect_due(env.rt, "w1") == 0
    assert (await collection())["collection"]["status"] == "permission_missing"
    again = await _notices(env, x)
    assert len(again) > before and any(n.read_at is None for n in again)


async def test_a_reconnect_leaves_other_accounts_and_other_outcomes_alone(world) -> None:
    env = world.env
    sc, _, pubs = await published(world)
    x = world.integrations["x"].id
    await make_user(env, world.ws, "owner@example.com")
    admin = await signed_in(env, "owner@example.com")
    csrf = csrf_of((await admin.get(f"/console/brands/{sc.brand.id}/accounts")).text)
    await admin.post(f"/console/brands/{sc.brand.id}/accounts/{x}/faults",
                     data={"csrf": csrf, "operation": "post_metrics", "kind": "rejected"})
    env.clock.advance(hours=1)
    await collect.collect_due(env.rt, "w1")
    other = next(i.id for p, i in world.integrations.items() if p != "x")
    assert (await admin.post(f"/console/brands/{sc.brand.id}/accounts/{other}/status",
                             data={"csrf": csrf, "status": "connected"})).status_code in (303, 404)
    got = await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id, publication_id=pubs["x"])
    assert got.body["data"]["collection"]["status"] == "permission_missing"
