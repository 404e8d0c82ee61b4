"""Queues: routes, DST-correct slot times, the worker tick (one Schedule per slot, even with racing workers),
held vs approved Schedules by the authority that set the queue, and the "queued" usage probe."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import anyio
import pytest
from sqlmodel import col, select

from schemas.ids import new_id
from schemas.time import iso, parse_timestamp
from storage.tables.accounts import ApiKey
from storage.tables.content import ContentItem
from storage.tables.publishing import Schedule
from storage.tables.queues import Queue
from tools.content import usage as content_usage
from tools.publishing import queues as queues_mod
from tools.publishing.queues import fire, next_slot, queue_tick

pytestmark = pytest.mark.anyio

FIELDS = {"id", "name", "brand_id", "active", "mode", "times_of_day", "timezone", "interval_minutes", "start_at",
          "next_run_at", "loop", "content_item_ids", "integration_ids", "skip_count", "approval_status",
          "created_at", "updated_at"}
SCHEDULE_ONLY = ("schedule:read", "schedule:write", "posts:read", "posts:write")


class Queues:
    def __init__(self, world: Any) -> None:
        self.world, self.env, self.brand = world, world.env, world.brand_a
        self.li, self.x = world.integrations["linkedin"].id, world.integrations["x"].id
        self.limited = ""  # a schedule:write-only key, made by the `qs` fixture

    def url(self, suffix: str = "", brand_id: str | None = None) -> str:
        return f"/v1/brands/{brand_id or self.brand.id}/queues{suffix}"

    async def items(self, n: int, brand: Any = None, settings: dict[str, Any] | None = None) -> list[str]:
        out = []
        for i in range(n):
            resp = await self.env.rest.post(f"/v1/brands/{(brand or self.brand).id}/content-items", json={
                "name": f"Item {i}", "copy_mode": "single",
                "single_copy": {"caption": f"Post {i}", "hashtags": [], "title": None},
                **({"linkedin_settings": {}} if settings is None else settings)},
                headers=self.env.auth(self.world.full_key))
            assert resp.status_code == 201, resp.json()
            out.append(resp.json()["data"]["content_item"]["id"])
        return out

    async def create(self, secret: str | None = None, **body: Any) -> Any:
        body.setdefault("name", "Weekday mornings")
        body.setdefault("mode", "times_of_day")
        body.setdefault("integration_ids", [self.li])
        if body["mode"] == "times_of_day":
            body.setdefault("times_of_day", ["09:00"])
        return await self.env.rest.post(self.url(), json=body, headers=self.env.auth(secret or self.world.full_key))

    async def made(self, secret: str | None = None, **body: Any) -> dict[str, Any]:
        resp = await self.create(secret, **body)
        assert resp.status_code == 201, resp.json()
        return resp.json()["data"]

    async def patch(self, queue_id: str, secret: str | None = None, **body: Any) -> Any:
        return await self.env.rest.patch(self.url(f"/{queue_id}"), json=body,
                                         headers=self.env.auth(secret or self.world.full_key))

    async def schedules(self) -> list[Schedule]:
        async with self.env.db.session(write=False) as s:
            return list((await s.exec(select(Schedule).order_by(col(Schedule.scheduled_at), col(Schedule.id)))).all())

    async def row(self, queue_id: str) -> Queue | None:
        async with self.env.db.session(write=False) as s:
            return await s.get(Queue, queue_id)


@pytest.fixture
async def qs(world) -> Queues:
    q = Queues(world)
    q.limited = await world.env.key(world.ws, scopes=SCHEDULE_ONLY, name="schedule only")
    return q


def codes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(i["field_path"], i["code"]) for i in body["error"].get("issues", [])]


# -- routes -----------------------------------------------------------------------------------------------------

async def test_create_times_of_day_queue(qs) -> None:
    items = await qs.items(2)
    data = await qs.made(content_item_ids=items[::-1], times_of_day=["18:00", "09:00"],
                         integration_ids=[qs.x, qs.li][::-1] if qs.x > qs.li else [qs.x, qs.li])
    assert set(data) == FIELDS
    assert data["timezone"] == "Europe/Paris"  # the brand's by default
    assert data["times_of_day"] == ["09:00", "18:00"] and data["content_item_ids"] == items[::-1]
    assert data["integration_ids"] == sorted([qs.x, qs.li])
    # Clock: 2026-03-02T09:00Z = 10:00 in Paris, so the next slot is 18:00 Paris = 17:00Z.
    assert data["next_run_at"] == "2026-03-02T17:00:00.000Z"
    assert data["active"] and not data["loop"] and data["skip_count"] == 0 and data["mode"] == "times_of_day"
    assert data["approval_status"] == "approved" and data["interval_minutes"] is None and data["start_at"] is None


async def test_interval_queue_counts_elapsed_minutes(qs) -> None:
    items = await qs.items(1)
    data = await qs.made(mode="interval", interval_minutes=90, content_item_ids=items,
                         start_at="2026-03-02T08:00:00Z")
    assert data["next_run_at"] == "2026-03-02T09:30:00.000Z" and data["start_at"] == "2026-03-02T08:00:00.000Z"
    default = await qs.made(mode="interval", interval_minutes=60, content_item_ids=items)
    assert default["start_at"] == default["next_run_at"] == "2026-03-02T10:00:00.000Z"


async def test_empty_queue_has_no_next_run(qs) -> None:
    data = await qs.made()
    assert data["content_item_ids"] == [] and data["next_run_at"] is None and data["active"]


@pytest.mark.parametrize("body, path", [
    ({"name": "x" * 201}, "$.name"),
    ({"name": ""}, "$.name"),
    ({"name": "   "}, "$.name"),
    ({"mode": "hourly"}, "$.mode"),
    ({"integration_ids": []}, "$.integration_ids"),
    ({"times_of_day": ["24:00"]}, "$.times_of_day[0]"),
    ({"times_of_day": ["9:00"]}, "$.times_of_day[0]"),
    ({"times_of_day": ["09:00", "09:00"]}, "$.times_of_day[1]"),
    ({"times_of_day": []}, "$.times_of_day"),
    ({"timezone": "Mars/Olympus_Mons"}, "$.timezone"),
    ({"mode": "interval"}, "$.interval_minutes"),
    ({"mode": "interval", "interval_minutes": 4}, "$.interval_minutes"),
    ({"mode": "interval", "interval_minutes": 60, "start_at": "2026-03-02 10:00"}, "$.start_at"),
    ({"content_item_ids": ["ci_01M813C05ZAMFD857P260GAYXK"] * 2}, "$.content_item_ids[1]"),
    ({"content_item_ids": [new_id("ci") for _ in range(501)]}, "$.content_item_ids"),
    ({"skip_count": 3}, "$.skip_count"),
])
async def test_create_refuses_malformed_input(qs, body, path) -> None:
    resp = await qs.create(**body)
    assert resp.status_code == 400, resp.json()
    assert path in [p for p, _ in codes(resp.json())], resp.json()
    assert (await qs.env.rest.get(qs.url(), headers=qs.env.auth(qs.limited))).json()["data"] == []


async def test_ids_of_another_brand_are_field_issues(qs, world) -> None:
    other_target = await world.env.integration(world.brand_b, "linkedin")
    mine = await qs.items(1)
    theirs = await qs.items(1, brand=world.brand_b)
    resp = await qs.create(integration_ids=sorted([qs.li, other_target.id]), content_item_ids=mine)
    assert resp.status_code == 422
    index = sorted([qs.li, other_target.id]).index(other_target.id)
    assert codes(resp.json()) == [(f"$.integration_ids[{index}]", "NOT_FOUND")]
    resp = await qs.create(content_item_ids=[mine[0], theirs[0]])
    assert resp.status_code == 422 and codes(resp.json()) == [("$.content_item_ids[1]", "NOT_FOUND")]
    queue = await qs.made(content_item_ids=mine)
    resp = await qs.patch(queue["id"], content_item_ids=theirs)
    assert resp.status_code == 422 and codes(resp.json()) == [("$.content_item_ids[0]", "NOT_FOUND")]
    resp = await qs.patch(queue["id"], integration_ids=[other_target.id])
    assert resp.status_code == 422 and codes(resp.json()) == [("$.integration_ids[0]", "NOT_FOUND")]
    assert (await qs.row(queue["id"])).content_item_ids == mine


async def test_list_and_get(qs) -> None:
    first = await qs.made(name="First")
    second = await qs.made(name="Second")
    resp = await qs.env.rest.get(qs.url(), headers=qs.env.auth(qs.limited))
    body = resp.json()
    assert resp.status_code == 200 and "pagination" not in body and isinstance(body["data"], list)
    assert [q["id"] for q in body["data"]] == [first["id"], second["id"]]
    got = await qs.env.rest.get(qs.url(f"/{second['id']}"), headers=qs.env.auth(qs.limited))
    assert got.status_code == 200 and got.json()["data"] == second
    missing = await qs.env.rest.get(qs.url("/que_01M813C05ZAMFD857P260GAYXK"), headers=qs.env.auth(qs.limited))
    assert missing.status_code == 404


async def test_queue_count_is_capped(qs, monkeypatch) -> None:
    from schemas import queues as sq
    monkeypatch.setattr(sq, "QUEUES_PER_BRAND_MAX", 2)
    await qs.made()
    await qs.made()
    resp = await qs.create()
    assert resp.status_code == 422 and codes(resp.json()) == [("$", "LIMIT_REACHED")]


async def test_scopes_and_brand_restriction(qs, world) -> None:
    queue = await qs.made()
    reader = await world.env.key(world.ws, scopes=("schedule:read",), name="reader")
    assert (await qs.env.rest.get(qs.url(), headers=qs.env.auth(reader))).status_code == 200
    resp = await qs.create(reader)
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert (await qs.patch(queue["id"], reader, name="New")).status_code == 403
    for method, suffix in (("GET", ""), ("GET", f"/{queue['id']}"), ("POST", ""), ("PATCH", f"/{queue['id']}"),
                           ("DELETE", f"/{queue['id']}")):
        resp = await qs.env.rest.request(method, qs.url(suffix), json={} if method in ("POST", "PATCH") else None,
                                         headers=qs.env.auth(world.key_b_only))
        assert resp.status_code == 404, (method, suffix)
    resp = await qs.env.rest.get(qs.url(f"/{queue['id']}", brand_id=world.brand_b.id),
                                 headers=qs.env.auth(world.full_key))
    assert resp.status_code == 404


async def test_patch_changes_only_given_fields(qs) -> None:
    items = await qs.items(2)
    queue = await qs.made(content_item_ids=items, loop=True)
    resp = await qs.patch(queue["id"], name="Evenings", times_of_day=["20:30"], timezone="America/New_York")
    data = resp.json()["data"]
    assert resp.status_code == 200 and data["name"] == "Evenings" and data["times_of_day"] == ["20:30"]
    assert data["content_item_ids"] == items and data["loop"] and data["integration_ids"] == queue["integration_ids"]
    assert data["next_run_at"] == "2026-03-03T01:30:00.000Z"  # 20:30 EST on 2 March
    assert data["updated_at"] == iso(qs.env.clock.now())
    resp = await qs.patch(queue["id"], integration_ids=[])
    assert resp.status_code == 400 and [p for p, _ in codes(resp.json())] == ["$.integration_ids"]
    resp = await qs.patch(queue["id"], integration_ids=None)
    assert resp.status_code == 400
    resp = await qs.patch(queue["id"])
    assert resp.status_code == 400 and codes(resp.json()) == [("$", "EMPTY_UPDATE")]
    resp = await qs.patch(queue["id"], mode="interval")  # interval mode without interval_minutes
    assert resp.status_code == 422 and codes(resp.json()) == [("$.interval_minutes", "REQUIRED")]
    resp = await qs.patch(queue["id"], active=False)
    assert resp.json()["data"]["next_run_at"] is None and not resp.json()["data"]["active"]


async def test_delete_keeps_content_and_schedules(qs) -> None:
    items = await qs.items(1)
    queue = await qs.made(content_item_ids=items)
    assert queue["next_run_at"] == "2026-03-03T08:00:00.000Z"  # 09:00 in Paris
    qs.env.clock.set("2026-03-03T08:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    resp = await qs.env.rest.delete(qs.url(f"/{queue['id']}"), headers=qs.env.auth(qs.limited))
    assert resp.status_code == 200 and resp.json()["data"] == {"id": queue["id"], "outcome": "deleted"}
    assert await qs.row(queue["id"]) is None
    async with qs.env.db.session(write=False) as s:
        assert await s.get(ContentItem, items[0]) is not None
    assert len(await qs.schedules()) == 1
    assert (await qs.env.rest.delete(qs.url(f"/{queue['id']}"), headers=qs.env.auth(qs.limited))).status_code == 404


# -- DST --------------------------------------------------------------------------------------------------------

def ny(times: list[str]) -> Queue:
    return Queue(id="que_x", workspace_id="w", brand_id="b", name="n", mode="times_of_day", times_of_day=times,
                 timezone="America/New_York", content_item_ids=["ci_x"], integration_ids=["int_x"], created_by="u")


def at(text: str) -> datetime:
    return parse_timestamp(text)


def test_spring_forward_slot_moves_by_the_gap() -> None:
    # 2026-03-08: clocks jump from 02:00 EST to 03:00 EDT; 02:30 does not exist that day.
    q = ny(["02:30"])
    assert iso(next_slot(q, at("2026-03-08T05:00:00Z"))) == "2026-03-08T07:30:00.000Z"  # 03:30 EDT
    assert iso(next_slot(q, at("2026-03-08T07:30:00Z"))) == "2026-03-09T06:30:00.000Z"  # 02:30 EDT next day
    assert iso(next_slot(q, at("2026-03-07T06:00:00Z"))) == "2026-03-07T07:30:00.000Z"  # 02:30 EST the day before
    # 02:30 and 03:30 land on the same instant that day: one slot, not two.
    both = ny(["02:30", "03:30"])
    first = next_slot(both, at("2026-03-08T05:00:00Z"))
    assert first is not None
    assert iso(first) == "2026-03-08T07:30:00.000Z"
    assert iso(next_slot(both, first)) == "2026-03-09T06:30:00.000Z"


def test_fall_back_slot_uses_the_first_occurrence_once() -> None:
    # 2026-11-01: clocks fall back from 02:00 EDT to 01:00 EST; 01:30 happens twice (05:30Z and 06:30Z).
    q = ny(["01:30"])
    first = next_slot(q, at("2026-11-01T04:00:00Z"))
    assert first is not None
    assert iso(first) == "2026-11-01T05:30:00.000Z"  # 01:30 EDT
    assert iso(next_slot(q, first)) == "2026-11-02T06:30:00.000Z"  # never 06:30Z on 1 November
    assert iso(next_slot(q, at("2026-10-31T00:00:00Z"))) == "2026-10-31T05:30:00.000Z"
    assert iso(next_slot(q, at("2026-11-01T06:00:00Z"))) == "2026-11-02T06:30:00.000Z"


def test_interval_slots_ignore_dst() -> None:
    q = ny([])
    q.mode, q.interval_minutes, q.start_at = "interval", 60, at("2026-03-08T05:00:00Z")
    assert iso(next_slot(q, at("2026-03-08T06:59:59Z"))) == "2026-03-08T07:00:00.000Z"
    assert iso(next_slot(q, at("2026-03-08T07:00:00Z"))) == "2026-03-08T08:00:00.000Z"
    assert iso(next_slot(q, at("2026-03-01T00:00:00Z"))) == "2026-03-08T05:00:00.000Z"


async def test_dst_slots_through_the_routes(qs) -> None:
    items = await qs.items(1)
    qs.env.clock.set("2026-03-08T05:00:00Z")
    data = await qs.made(content_item_ids=items, times_of_day=["02:30"], timezone="America/New_York")
    assert data["next_run_at"] == "2026-03-08T07:30:00.000Z"
    qs.env.clock.set("2026-11-01T04:00:00Z")
    data = await qs.made(content_item_ids=items, times_of_day=["01:30"], timezone="America/New_York")
    assert data["next_run_at"] == "2026-11-01T05:30:00.000Z"


# -- the tick ---------------------------------------------------------------------------------------------------

async def test_tick_turns_each_slot_into_one_schedule_in_order(qs) -> None:
    items = await qs.items(2)
    queue = await qs.made(content_item_ids=items, times_of_day=["09:00", "18:00"])
    assert await queue_tick(qs.env.rt, "w1") == 0  # not due yet
    qs.env.clock.set("2026-03-02T17:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    assert await queue_tick(qs.env.rt, "w1") == 0  # the slot is consumed
    made = await qs.schedules()
    assert len(made) == 1
    s = made[0]
    assert (s.source, s.queue_id, s.content_item_id, iso(s.scheduled_at)) == (
        "queue", queue["id"], items[0], "2026-03-02T17:00:00.000Z")
    assert s.integration_ids == [qs.li] and s.approval_status == "approved" and s.status == "scheduled"
    assert s.approved_by_key == qs.env.key_row(qs.world.full_key).id
    row = await qs.row(queue["id"])
    assert row.skip_count == 1 and iso(row.next_run_at) == "2026-03-03T08:00:00.000Z"
    qs.env.clock.set("2026-03-03T08:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    made = await qs.schedules()
    assert [m.content_item_id for m in made] == items
    row = await qs.row(queue["id"])
    assert row.skip_count == 2 and not row.active and row.next_run_at is None  # used up, no loop
    qs.env.clock.set("2026-03-05T08:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 0 and len(await qs.schedules()) == 2


async def test_loop_wraps_around(qs) -> None:
    items = await qs.items(2)
    queue = await qs.made(content_item_ids=items, loop=True, mode="interval", interval_minutes=60)
    for hour in range(10, 15):
        qs.env.clock.set(f"2026-03-02T{hour:02d}:00:00Z")
        assert await queue_tick(qs.env.rt, "w1") == 1
    assert [s.content_item_id for s in await qs.schedules()] == [items[0], items[1]] * 2 + [items[0]]
    row = await qs.row(queue["id"])
    assert row.active and row.skip_count == 5 and iso(row.next_run_at) == "2026-03-02T15:00:00.000Z"


async def test_missed_slots_collapse_into_one_schedule(qs) -> None:
    items = await qs.items(3)
    queue = await qs.made(content_item_ids=items, mode="interval", interval_minutes=60)
    qs.env.clock.set("2026-03-02T13:30:00Z")  # slots at 10, 11, 12 and 13 were missed
    assert await queue_tick(qs.env.rt, "w1") == 1
    made = await qs.schedules()
    assert len(made) == 1 and iso(made[0].scheduled_at) == "2026-03-02T10:00:00.000Z"
    row = await qs.row(queue["id"])
    assert row.skip_count == 1 and iso(row.next_run_at) == "2026-03-02T14:00:00.000Z"


async def test_deleted_items_are_skipped_and_counted(qs) -> None:
    items = await qs.items(3)
    queue = await qs.made(content_item_ids=items, mode="interval", interval_minutes=60, active=False)
    async with qs.env.db.session(write=True) as s:  # not in use (inactive queue), so it may go
        await s.delete(await s.get(ContentItem, items[0]))
    await qs.patch(queue["id"], active=True)
    qs.env.clock.set("2026-03-02T10:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    assert [s.content_item_id for s in await qs.schedules()] == [items[1]]
    assert (await qs.row(queue["id"])).skip_count == 2


async def test_queue_set_without_publish_authority_makes_held_schedules(qs) -> None:
    items = await qs.items(2)
    queue = await qs.made(qs.limited, content_item_ids=items, mode="interval", interval_minutes=60)
    assert queue["approval_status"] == "pending_review"
    qs.env.clock.set("2026-03-02T10:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    s = (await qs.schedules())[0]
    assert s.approval_status == "pending_review" and s.status == "action_required" and s.approved_by_key is None
    # A publish:execute holder re-sets the targets: later slots are approved.
    resp = await qs.patch(queue["id"], integration_ids=[qs.li])
    assert resp.json()["data"]["approval_status"] == "approved"
    # A change of name by a key without authority keeps the approval; a change of items drops it.
    assert (await qs.patch(queue["id"], qs.limited, name="Renamed")).json()["data"]["approval_status"] == "approved"
    resp = await qs.patch(queue["id"], qs.limited, content_item_ids=items[::-1])
    assert resp.json()["data"]["approval_status"] == "pending_review"
    resp = await qs.patch(queue["id"], qs.limited, loop=True)
    assert resp.json()["data"]["approval_status"] == "pending_review"
    await qs.patch(queue["id"], content_item_ids=items)
    qs.env.clock.set("2026-03-02T11:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    assert [(x.approval_status, x.status) for x in await qs.schedules()] == [
        ("pending_review", "action_required"), ("approved", "scheduled")]


async def test_an_approved_slot_that_preflight_blocks_is_held(qs) -> None:
    items = await qs.items(1, settings={}) + await qs.items(1)  # the first has no linkedin_settings
    queue = await qs.made(content_item_ids=items, mode="interval", interval_minutes=60)
    assert queue["approval_status"] == "approved"
    for hour in (10, 11):
        qs.env.clock.set(f"2026-03-02T{hour}:00:00Z")
        assert await queue_tick(qs.env.rt, "w1") == 1
    blocked, ready = await qs.schedules()
    assert (blocked.approval_status, blocked.status, blocked.approved_by_key) == (
        "pending_review", "action_required", None)
    assert blocked.failure_reason.startswith("Preflight found 1 blocker(s)")
    assert (ready.approval_status, ready.status, ready.failure_reason) == ("approved", "scheduled", None)


async def test_revoked_approver_no_longer_approves(qs) -> None:
    items = await qs.items(1)
    approver = await qs.env.key(qs.world.ws, name="approver")
    await qs.made(approver, content_item_ids=items, mode="interval", interval_minutes=60)
    async with qs.env.db.session(write=True) as s:
        key = await s.get(ApiKey, qs.env.key_row(approver).id)
        key.revoked_at = qs.env.clock.now()
        s.add(key)
    qs.env.clock.set("2026-03-02T10:00:00Z")
    assert await queue_tick(qs.env.rt, "w1") == 1
    assert (await qs.schedules())[0].approval_status == "pending_review"


async def test_a_stale_claim_makes_nothing(qs) -> None:
    items = await qs.items(2)
    queue = await qs.made(content_item_ids=items, mode="interval", interval_minutes=60)
    qs.env.clock.set("2026-03-02T10:00:00Z")
    stale = await qs.row(queue["id"])  # what a second worker read before the first one committed
    assert await queue_tick(qs.env.rt, "w1") == 1
    async with qs.env.db.session(write=True) as s:
        assert await fire(s, stale, qs.env.clock.now()) is False
    assert len(await qs.schedules()) == 1


async def test_two_racing_workers_make_one_schedule_per_slot(qs, monkeypatch) -> None:
    items = await qs.items(2)  # the queues stay active after the slot, so only the claim condition protects it
    ids = [(await qs.made(content_item_ids=items, mode="interval", interval_minutes=60, name=f"Q{i}"))["id"]
           for i in range(12)]
    qs.env.clock.set("2026-03-02T10:00:00Z")
    done: list[int] = []
    # Rendezvous: each worker has read the same due queues before either claims one (PostgreSQL). On SQLite
    # the second write transaction cannot begin until the first commits, so the wait simply runs out.
    arrived, both = [0], anyio.Event()
    real_fire = queues_mod.fire

    async def rendezvous_fire(session: Any, q: Queue, now: datetime, *args: Any) -> bool:
        if not both.is_set():
            arrived[0] += 1
            if arrived[0] >= 2:
                both.set()
            with anyio.move_on_after(2):
                await both.wait()
        return await real_fire(session, q, now, *args)

    monkeypatch.setattr(queues_mod, "fire", rendezvous_fire)

    async def worker(name: str) -> None:
        done.append(await queue_tick(qs.env.rt, name))

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker, "w1")
        tg.start_soon(worker, "w2")
    made = await qs.schedules()
    assert sum(done) == 12 and len(made) == 12
    assert sorted(s.queue_id for s in made) == sorted(ids) and {s.content_item_id for s in made} == {items[0]}


# -- content usage ----------------------------------------------------------------------------------------------

async def test_items_of_an_active_queue_are_queued(qs) -> None:
    items = await qs.items(3)
    queue = await qs.made(content_item_ids=items[:2])
    found = await _usage(qs, items)
    assert found == {items[0]: {"queued"}, items[1]: {"queued"}}
    await qs.patch(queue["id"], active=False)
    assert await _usage(qs, items) == {}
    # A queued item cannot be deleted through the drafts routes.
    await qs.patch(queue["id"], active=True)
    resp = await qs.env.rest.delete(f"/v1/brands/{qs.brand.id}/content-items/{items[0]}",
                                    headers=qs.env.auth(qs.world.full_key))
    assert resp.status_code == 409 and resp.json()["error"]["details"]["usage"] == ["queued"]


async def _usage(qs: Queues, items: list[str]) -> dict[str, set[str]]:
    async with qs.env.db.session(write=False) as s:
        return await content_usage.usage(s, qs.brand.id, items)


async def test_a_held_slot_is_made_ahead_approved_before_it_is_due_and_published(qs) -> None:
    from server.worker import Worker
    from tools.publishing.queues import HOLD_AHEAD

    env = qs.env
    items = await qs.items(2)
    queue = await qs.made(qs.limited, content_item_ids=items, times_of_day=["09:00"])
    assert queue["approval_status"] == "pending_review"
    slot = (await qs.row(queue["id"])).next_run_at
    assert env.clock.now() < slot <= env.clock.now() + HOLD_AHEAD
    assert await queue_tick(env.rt, "w1") == 1  # made now, for the slot ahead
    assert await queue_tick(env.rt, "w1") == 0  # one held slot ahead at a time
    [held] = await qs.schedules()
    assert (held.scheduled_at, held.approval_status) == (slot, "pending_review")
    resp = await env.rest.post(f"/v1/brands/{qs.brand.id}/schedules/{held.id}/approve",
                               json={"confirm_schedule_id": held.id},
                               headers=env.auth(qs.world.full_key, **{"Idempotency-Key": "approve-held"}))
    assert resp.status_code == 200, resp.json()
    env.clock.set(slot.isoformat())
    await Worker(env.rt, owner="w1").run_once()
    published = next(s for s in await qs.schedules() if s.id == held.id)
    assert published.status == "published", (published.status, published.failure_reason)
