"""Post metrics end to end on the sandbox (issue 34): a post published by the worker enters collection when its
network offers metrics (X here) and not otherwise (Discord webhooks have none); the tick reads it on the
decaying cadence, stores each reading once, and stops after the last; a refusal stops the account's posts and
tells admins once; rate limits back off. Read back over REST and MCP. Both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlmodel import func, select

from storage.tables.analytics import MetricSnapshot, PostMetricsState
from storage.tables.notifications import Notification
from tests.publishing.support import set_provider_state
from tests.schedules.support import Sched
from tools.analytics import collect
from tools.analytics.cadence import STEPS, next_due
from tools.publishing import worker as publishing

pytestmark = pytest.mark.anyio


async def published(world) -> tuple[Sched, str, dict[str, str]]:
    """A Schedule to X and Discord published by the worker; returns (sched, schedule id, platform -> pub id)."""
    env = world.env
    sc = await Sched(world).setup()
    x = world.integrations["x"].id
    discord = await env.integration(world.brand_a, "discord")
    sc.targets = sorted([discord.id, x])
    item = await sc.item(tiktok_settings=None, instagram_settings=None, x_settings={},
                         discord_settings={"post_type": "DC_MESSAGE"})
    created = await sc.create(item, approval_status="approved")
    assert created.status == 201, created.body
    sid = created.body["data"]["schedule"]["id"]
    env.clock.advance(days=3, minutes=30)
    assert await publishing.publish_due(env.rt, "w1") >= 1
    async with env.db.session(write=False) as s:
        from storage.tables.publishing import Publication
        pubs = (await s.exec(select(Publication).where(Publication.schedule_id == sid))).all()
    assert {p.status for p in pubs} == {"published"}, [(p.platform, p.status) for p in pubs]
    return sc, sid, {p.platform: p.id for p in pubs}


async def state(env, publication_id: str) -> PostMetricsState:
    async with env.db.session(write=False) as s:
        found = await s.get(PostMetricsState, publication_id)
    assert found is not None, publication_id
    return found


async def maybe_state(env, publication_id: str) -> PostMetricsState | None:
    async with env.db.session(write=False) as s:
        return await s.get(PostMetricsState, publication_id)


async def snapshots(env, publication_id: str) -> int:
    async with env.db.session(write=False) as s:
        return (await s.exec(select(func.count()).select_from(MetricSnapshot)
                             .where(MetricSnapshot.publication_id == publication_id))).one()


async def test_published_post_is_read_on_the_cadence_and_served(world) -> None:
    env = world.env
    sc, _, pubs = await published(world)
    x_pub, dc_pub = pubs["x"], pubs["discord"]
    first = await state(env, x_pub)
    assert first.status == "collecting" and first.next_due_at == first.published_at + STEPS[0]
    assert await maybe_state(env, dc_pub) is None  # Discord: no metrics read (capabilities say so)

    assert await collect.collect_due(env.rt, "w1") == 0  # not due before an hour
    env.clock.advance(hours=1)
    assert await collect.collect_due(env.rt, "w1") == 1
    got = await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id, publication_id=x_pub)
    assert got.status == 200, got.body
    data = got.body["data"]
    assert data["collection"]["status"] == "collecting" and data["collection"]["readings"] == 1
    latest = data["latest"]
    # X reports these (providers/metrics.SUPPORT); the rest stay null, never 0
    assert set(k for k, v in latest.items() if v is not None) == {"impressions", "likes", "reposts", "replies", "saves"}
    assert latest["video_views"] is None and len(data["readings"]) == 1
    assert data["readings"][0]["network_metrics"]["sandbox_likes"] == latest["likes"]

    env.clock.advance(hours=5)
    assert await collect.collect_due(env.rt, "w1") == 1
    later = (await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id,
                            publication_id=x_pub)).body["data"]
    assert later["latest"]["impressions"] >= latest["impressions"] and len(later["readings"]) == 2

    # a week of downtime: one reading, then the cadence goes on from there (no burst of catch-up readings)
    env.clock.advance(days=8)
    assert await collect.collect_due(env.rt, "w1") == 1
    assert await collect.collect_due(env.rt, "w1") == 0
    row = await state(env, x_pub)
    assert row.next_due_at == row.published_at + timedelta(days=30)
    env.clock.advance(days=30)
    assert await collect.collect_due(env.rt, "w1") == 1
    row = await state(env, x_pub)
    assert row.status == "done" and row.next_due_at is None and await snapshots(env, x_pub) == 4

    dc = await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id, publication_id=dc_pub)
    assert dc.body["data"]["collection"]["status"] == "unsupported" and dc.body["data"]["latest"] is None


async def test_a_reading_is_stored_once_whatever_reads_it(world) -> None:
    env = world.env
    _, _, pubs = await published(world)
    env.clock.advance(hours=1)
    due = (await state(env, pubs["x"])).next_due_at
    assert due is not None
    # two workers found it due; only the one whose claim lands reads it
    assert await collect.read_one(env.rt, pubs["x"], due) == 1
    assert await collect.read_one(env.rt, pubs["x"], due) == 0
    assert await snapshots(env, pubs["x"]) == 1


async def test_refused_permission_stops_the_account_and_tells_admins_once(world) -> None:
    env = world.env
    sc, _, pubs = await published(world)
    x = world.integrations["x"].id
    async with env.db.session(write=True) as s:
        await set_provider_state(s, x, {"faults": {"post_metrics": "rejected"}})
    env.clock.advance(hours=1)
    assert await collect.collect_due(env.rt, "w1") == 0
    row = await state(env, pubs["x"])
    assert row.status == "permission_missing" and row.next_due_at is None
    async with env.db.session(write=False) as s:
        notes = (await s.exec(select(Notification).where(Notification.type == "metrics_permission_missing"))).all()
    assert notes and len({n.user_id for n in notes}) == len(notes)  # one per admin, once
    out = await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id, publication_id=pubs["x"])
    assert out.body["data"]["collection"]["status"] == "permission_missing"
    assert "token" not in str(out.body).lower()


async def test_rate_limits_back_off_then_the_reading_is_skipped(world) -> None:
    env = world.env
    _, _, pubs = await published(world)
    x = world.integrations["x"].id
    async with env.db.session(write=True) as s:
        await set_provider_state(s, x, {"faults": {"post_metrics": "rate_limited"}})
    env.clock.advance(hours=1)
    waits = []
    for _ in range(collect.MAX_FAILURES - 1):
        assert await collect.collect_due(env.rt, "w1") == 0
        due = (await state(env, pubs["x"])).next_due_at
        assert due is not None
        waits.append(due - env.clock.now())
        env.clock.set(due)
    assert waits == sorted(waits) and waits[0] >= collect.RETRY_AFTER and waits[1] == 2 * waits[0]
    assert await collect.collect_due(env.rt, "w1") == 0  # the last failure: this reading is skipped
    row = await state(env, pubs["x"])
    assert row.failures == 0 and row.status == "collecting"
    assert row.next_due_at == next_due(row.published_at, env.clock.now())


async def test_reading_needs_analytics_scope_and_the_brand(world) -> None:
    env = world.env
    sc, _, pubs = await published(world)
    narrow = await env.key(world.ws, scopes=["publications:read"])
    out = await env.call("get_publication_metrics", narrow, brand_id=sc.brand.id, publication_id=pubs["x"])
    assert out.status == 403 and out.body["error"]["code"] == "INSUFFICIENT_SCOPE"
    other = await env.call("get_publication_metrics", world.key_b_only, brand_id=sc.brand.id,
                           publication_id=pubs["x"])
    assert other.status in (403, 404)
    wrong = await env.call("get_publication_metrics", world.full_key, brand_id=world.brand_b.id,
                           publication_id=pubs["x"])
    assert wrong.status == 404


async def test_the_schedule_page_shows_each_published_posts_metrics(world) -> None:
    from tests.console.support import make_user, signed_in

    env = world.env
    sc, sid, pubs = await published(world)
    env.clock.advance(hours=1)
    assert await collect.collect_due(env.rt, "w1") == 1
    await make_user(env, world.ws, "reviewer@example.com")
    browser = await signed_in(env, "reviewer@example.com")
    page = await browser.get(f"/console/brands/{sc.brand.id}/schedules/{sid}")
    assert page.status_code == 200, page.text
    latest = (await env.call("get_publication_metrics", world.full_key, brand_id=sc.brand.id,
                             publication_id=pubs["x"])).body["data"]["latest"]
    assert f"likes {latest['likes']:,}" in page.text and "This network offers no post metrics." in page.text
