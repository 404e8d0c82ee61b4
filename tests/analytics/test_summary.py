"""The summary's arithmetic, groups, paging and top posts over seeded readings (both backends), the period's
refusals, and the performance digest as the MCP resource an agent reads before planning."""

from __future__ import annotations

import json
from datetime import timedelta

import mcp_types as types
import pytest

from schemas.ids import new_id
from schemas.metrics import COMMON
from schemas.time import iso
from storage.tables.analytics import PostMetricsState
from storage.tables.content import ContentItem, ContentItemLabel
from storage.tables.library import Label
from tests.mcp.support import in_memory

pytestmark = pytest.mark.anyio


def text_of(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


def test_the_metric_types_are_the_common_set() -> None:
    from typing import get_args

    from schemas.analytics import Metric, Metrics
    assert get_args(Metric) == COMMON and tuple(Metrics.model_fields) == COMMON


async def seed(env, brand, rows: list[dict]) -> list[str]:
    """Readings as the collector leaves them: one state row per published post, with a content item."""
    now = env.clock.now()
    ids = []
    async with env.db.session(write=True) as s:
        for r in rows:
            item = ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id,
                               created_by="usr_test", name=r.get("name", "Post"), copy_mode="single",
                               single_copy={"caption": "x", "hashtags": [], "title": None}, settings={},
                               created_at=now, updated_at=now)
            s.add(item)
            pub = new_id("pub")
            ids.append(pub)
            values = {k: r.get(k) for k in COMMON}
            state = PostMetricsState(publication_id=pub, workspace_id=brand.workspace_id, brand_id=brand.id,
                                     integration_id="int_x", platform=r["platform"], post_id=item.id,
                                     publish_id="p", published_at=r["at"], status="collecting", step=1,
                                     next_due_at=r["at"] + timedelta(hours=6),
                                     read_at=None if r.get("unread") else r["at"] + timedelta(hours=1),
                                     created_at=now, updated_at=now)
            for name, value in values.items():
                setattr(state, name, value)
            s.add(state)
            for label in r.get("labels", []):
                await s.flush()
                s.add(ContentItemLabel(content_item_id=item.id, label_id=label, brand_id=brand.id))
    return ids


async def label(env, brand, name: str) -> str:
    now = env.clock.now()
    async with env.db.session(write=True) as s:
        row = Label(id=new_id("lbl"), workspace_id=brand.workspace_id, brand_id=brand.id, name=name,
                    created_at=now, updated_at=now)
        s.add(row)
    return row.id


async def test_summary_sums_groups_and_pages(world) -> None:
    env = world.env
    a, b = world.brand_a, world.brand_b  # A is in Europe/Paris
    now = env.clock.now()
    promo = await label(env, a, "Promo")
    day = now.replace(hour=8, minute=0, second=0, microsecond=0) - timedelta(days=2)  # 09:00 or 10:00 in Paris
    await seed(env, a, [
        {"platform": "x", "at": day, "likes": 10, "impressions": 100, "labels": [promo], "name": "One"},
        {"platform": "x", "at": day + timedelta(hours=1), "likes": 5, "impressions": None},
        {"platform": "youtube", "at": day, "likes": 7, "video_views": 300, "labels": [promo]},
        {"platform": "x", "at": day, "likes": 1000, "unread": True},  # no reading yet: not counted
        {"platform": "x", "at": now - timedelta(days=40), "likes": 1000},  # outside the default 30 days
    ])
    await seed(env, b, [{"platform": "x", "at": day, "likes": 999}])  # another brand's: never counted
    headers = env.auth(world.full_key)
    base = f"/v1/brands/{a.id}/analytics/summary"

    got = (await env.rest.get(base, headers=headers)).json()["data"]
    assert got["posts"] == 3 and got["totals"]["likes"] == 22 and got["totals"]["impressions"] == 100
    assert got["totals"]["video_views"] == 300 and got["totals"]["reposts"] is None
    assert got["period"]["time_zone"] == "Europe/Paris" and got["group_by"] == "platform"
    assert [(g["key"], g["posts"], g["metrics"]["likes"]) for g in got["groups"]] == [("x", 2, 15), ("youtube", 1, 7)]

    labels = (await env.rest.get(base, params={"group_by": "label"}, headers=headers)).json()["data"]
    assert [(g["key"], g["name"], g["posts"], g["metrics"]["likes"]) for g in labels["groups"]] == \
        [(promo, "Promo", 2, 17)]

    hours = (await env.rest.get(base, params={"group_by": "weekday_hour"}, headers=headers)).json()["data"]
    local = day.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))
    first = f"{('mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun')[local.weekday()]}-{local.hour:02d}"
    assert {g["key"]: g["posts"] for g in hours["groups"]}[first] == 2

    page1 = (await env.rest.get(base, params={"group_by": "content_item", "limit": 2}, headers=headers)).json()
    assert len(page1["data"]["groups"]) == 2 and page1["data"]["next_cursor"]
    page2 = (await env.rest.get(base, params={"group_by": "content_item", "limit": 2,
                                              "cursor": page1["data"]["next_cursor"]}, headers=headers)).json()
    keys = [g["key"] for g in page1["data"]["groups"] + page2["data"]["groups"]]
    assert len(keys) == len(set(keys)) == 3 and page2["data"]["next_cursor"] is None

    top = (await env.rest.get(f"/v1/brands/{a.id}/analytics/top-posts", params={"metric": "likes", "limit": 2},
                              headers=headers)).json()["data"]
    assert [t["metrics"]["likes"] for t in top["items"]] == [10, 7]
    assert top["items"][0]["links"]["self"]["href"].endswith("/metrics")
    only_yt = (await env.rest.get(f"/v1/brands/{a.id}/analytics/top-posts",
                                  params={"metric": "video_views", "platform": "youtube"}, headers=headers)).json()
    assert [t["platform"] for t in only_yt["data"]["items"]] == ["youtube"]

    longer = (await env.rest.get(base, params={"since": iso(now - timedelta(days=60))}, headers=headers)).json()
    assert longer["data"]["posts"] == 4


async def test_period_refusals(world) -> None:
    env = world.env
    base = f"/v1/brands/{world.brand_a.id}/analytics/summary"
    headers = env.auth(world.full_key)
    for params, code in (({"since": "2026-03-01T00:00:00Z", "until": "2026-02-01T00:00:00Z"}, "WINDOW_ORDER"),
                         ({"since": "2024-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "WINDOW_TOO_LONG")):
        out = await env.rest.get(base, params=params, headers=headers)
        assert out.status_code == 400, out.json()
        assert out.json()["error"]["issues"][0]["code"] == code
    bad = await env.rest.get(base, params={"since": "yesterday"}, headers=headers)
    assert bad.status_code == 400
    wrong = await env.rest.get(base, params={"group_by": "colour"}, headers=headers)
    assert wrong.status_code == 400


async def test_performance_resource_for_agents(world) -> None:
    env = world.env
    a = world.brand_a
    now = env.clock.now()
    uri = f"socialpub://brands/{a.id}/performance"
    async with in_memory(env, world.full_key) as client:
        empty = json.loads(text_of(await client.read_resource(uri)))
    assert empty["posts"] == 0 and "No published post" in empty["text"]

    await seed(env, a, [{"platform": "x", "at": now - timedelta(days=1), "likes": 40, "name": "Cold brew <b>"},
                        {"platform": "youtube", "at": now - timedelta(days=2), "likes": 4}])
    async with in_memory(env, world.full_key) as client:
        perf = json.loads(text_of(await client.read_resource(uri)))
        summary = await client.call_tool("get_analytics_summary", {"brand_id": a.id})
    assert perf["posts"] == 2 and "on x" in perf["text"] and "Cold brew <b>" in perf["text"]
    assert len(perf["text"]) < 1200  # a few hundred tokens
    assert summary.structured_content["data"]["totals"]["likes"] == 44


async def test_autopilot_writes_more_of_what_worked(world) -> None:
    from storage.tables.brands import Brand
    from tools.autopilot.topics import BUILTIN, context_for

    env = world.env
    a = world.brand_a
    now = env.clock.now()
    async with env.db.session(write=False) as s:
        brand = await s.get(Brand, a.id)
        before = await context_for(s, brand, week_number=1, theme="Spring", now=now)
    assert before.performing == ()  # no readings: planning as before
    await seed(env, a, [{"platform": "x", "at": now - timedelta(days=3), "likes": 90, "name": "Cold brew season"},
                        {"platform": "x", "at": now - timedelta(days=2), "likes": 5, "name": "Opening hours"}])
    async with env.db.session(write=False) as s:
        brand = await s.get(Brand, a.id)
        ctx = await context_for(s, brand, week_number=1, theme="Spring", now=now)
    assert ctx.performing == ("Cold brew season", "Opening hours")
    assert "Cold brew season" in await BUILTIN.topic(ctx)
