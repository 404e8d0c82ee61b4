"""Schedule routes beyond the state table: create's payload and refusals, get, the window list and its cursor,
latest_execution redaction, the content usage probe and move-to-draft's "no other use" rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import event
from sqlmodel import select

from storage.tables.content import ContentItemLabel
from storage.tables.publishing import Schedule
from tests.schedules.support import SCHEDULE_FIELDS, WHEN, WHEN_UTC, Sched, new_key
from tools import areas
from tools.content import usage as content_usage

pytestmark = pytest.mark.anyio


async def schedules(sc: Sched) -> int:
    return (await sc.env.row_counts())["schedules"]


# -- create ----------------------------------------------------------------------------------------------------------

async def test_held_create_payload(sc) -> None:
    secret = await sc.key("schedule:write")
    calls = list(sc.env.sandbox.calls)
    out = await sc.create(sc.item_id, secret)
    assert out.status == 201, out.body
    data = out.body["data"]
    assert set(data) == {"schedule", "outcome"} and data["outcome"] == "created"
    s = data["schedule"]
    assert set(s) == SCHEDULE_FIELDS
    assert s["brand_id"] == sc.brand.id and s["content_item_id"] == sc.item_id
    assert s["integration_ids"] == sc.targets
    assert s["scheduled_at"] == WHEN_UTC  # the +01:00 input, stored and returned as UTC with milliseconds
    assert s["approval_status"] == "pending_review" and s["status"] == "action_required"
    assert s["blocking_reason"]["code"] == "APPROVAL_PENDING" and s["blocking_reason"]["repair_guidance"]
    assert s["latest_execution"] is None
    assert [a["action"] for a in s["next_actions"]] == ["review_approval"] and s["next_actions"][0]["guidance"]
    base = f"/v1/brands/{sc.brand.id}"
    assert s["links"] == {
        "self": {"href": f"{base}/schedules/{s['id']}", "required_scopes": ["schedule:read"]},
        "targets": {"href": f"{base}/targets", "required_scopes": ["integrations:read"]},
        "preflight": {"href": f"{base}/content-items/{sc.item_id}/preflight", "method": "POST",
                      "required_scopes": ["schedule:write"]},
    }
    assert s["created_at"] == s["updated_at"] == "2026-03-02T09:00:00.000Z"
    assert sc.env.sandbox.calls == calls
    row = await sc.row(s["id"])
    assert row["source"] == "api" and row["created_by_key"] == sc.env.key_row(secret).id
    assert row["approved_by_key"] is None and row["approved_at"] is None
    assert not sc.env.rt.work_ready.is_set()  # nothing for the worker to do
    # get returns the same Schedule directly
    got = await sc.env.call("get_schedule", sc.world.full_key, brand_id=sc.brand.id, schedule_id=s["id"])
    assert got.status == 200 and got.body["data"] == s


async def test_approved_create_records_the_publishing_key_and_wakes_the_worker(sc) -> None:
    secret = await sc.key("schedule:write", "publish:execute")
    out = await sc.create(sc.item_id, secret, approval_status="approved")
    assert out.status == 201, out.body
    s = out.body["data"]["schedule"]
    assert s["status"] == "scheduled" and s["approval_status"] == "approved" and s["blocking_reason"] is None
    assert [a["action"] for a in s["next_actions"]] == ["wait_for_execution"]
    row = await sc.row(s["id"])
    assert row["approved_by_key"] == sc.env.key_row(secret).id and row["approved_at"] is not None
    assert sc.env.rt.work_ready.is_set()


async def test_approved_create_without_publish_execute_fails_closed_before_writing(sc) -> None:
    secret = await sc.key("schedule:write")
    before = await sc.env.row_counts()
    out = await sc.create(sc.item_id, secret, approval_status="approved")
    assert out.status == 403 and out.body["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert out.body["error"]["details"]["missing_scopes"] == ["publish:execute"]
    assert await sc.env.row_counts() == before  # no Schedule, no idempotency record
    # even for content that would be blocked: authority is checked first
    blocked = await sc.item(tiktok_settings={"media_ids": [sc.video], "post_type": "VIDEO"})
    out = await sc.create(blocked, secret, approval_status="approved")
    assert out.status == 403


async def test_rest_replay_header_and_conflict(sc) -> None:
    body = {"content_item_id": sc.item_id, "scheduled_at": WHEN, "integration_ids": sc.targets,
            "approval_status": "pending_review"}
    url = f"/v1/brands/{sc.brand.id}/schedules"
    headers = sc.env.auth(sc.world.full_key, Idempotency_Key="abc-1")
    first = await sc.env.rest.post(url, json=body, headers=headers)
    assert first.status_code == 201 and "Idempotency-Replayed" not in first.headers
    again = await sc.env.rest.post(url, json=body, headers=headers)
    assert again.status_code == 200 and again.headers["Idempotency-Replayed"] == "true"
    assert again.json()["data"]["outcome"] == "replayed"
    assert again.json()["data"]["schedule"] == first.json()["data"]["schedule"]
    other = await sc.env.rest.post(url, json={**body, "approval_status": "rejected"}, headers=headers)
    assert other.status_code == 409 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert await schedules(sc) == 1
    no_key = await sc.env.rest.post(url, json=body, headers=sc.env.auth(sc.world.full_key))
    assert no_key.status_code == 400 and no_key.json()["error"]["issues"][0]["field_path"] == "$.idempotency_key"


async def test_rejected_create_is_recorded_and_never_publishes(sc) -> None:
    out = await sc.create(sc.item_id, approval_status="rejected")
    assert out.status == 201
    s = out.body["data"]["schedule"]
    assert s["status"] == "action_required" and s["blocking_reason"]["code"] == "APPROVAL_REJECTED"
    assert s["next_actions"] == []


@pytest.mark.parametrize(("change", "status", "code", "path"), [
    ({"approval_status": None}, 400, "MALFORMED_REQUEST", "$.approval_status"),
    ({"approval_status": "auto"}, 400, "MALFORMED_REQUEST", "$.approval_status"),
    ({"scheduled_at": "2026-03-05T10:30:00"}, 400, "MALFORMED_REQUEST", "$.scheduled_at"),
    ({"scheduled_at": "next tuesday"}, 400, "MALFORMED_REQUEST", "$.scheduled_at"),
    ({"integration_ids": []}, 400, "MALFORMED_REQUEST", "$.integration_ids"),
    ({"integration_ids": "REVERSED"}, 400, "MALFORMED_REQUEST", "$.integration_ids"),
    ({"integration_ids": "DUPLICATE"}, 400, "MALFORMED_REQUEST", "$.integration_ids"),
    ({"integration_ids": "TWENTY_ONE"}, 400, "MALFORMED_REQUEST", "$.integration_ids"),
    ({"extra": 1}, 400, "MALFORMED_REQUEST", "$.extra"),
    ({"scheduled_at": "2026-03-01T10:00:00Z"}, 422, "PREFLIGHT_BLOCKED", "$.scheduled_at"),
    ({"content_item_id": "UNKNOWN"}, 404, "CONTENT_ITEM_NOT_FOUND", None),
    ({"integration_ids": "OTHER_BRAND"}, 422, "PREFLIGHT_BLOCKED", None),
], ids=["approval-missing", "approval-unknown", "naive-time", "not-a-time", "no-targets", "unsorted", "duplicate",
        "21-targets", "unknown-field", "past-time", "unknown-item", "other-brand-target"])
async def test_create_refusals_write_nothing(sc, change: dict[str, Any], status: int, code: str,
                                             path: str | None) -> None:
    body: dict[str, Any] = {"brand_id": sc.brand.id, "content_item_id": sc.item_id, "scheduled_at": WHEN,
                            "integration_ids": sc.targets, "approval_status": "pending_review"}
    for k, v in change.items():
        if v is None:
            del body[k]
        elif v == "REVERSED":
            body[k] = list(reversed(sc.targets))
        elif v == "DUPLICATE":
            body[k] = [sc.targets[0], sc.targets[0]]
        elif v == "TWENTY_ONE":
            body[k] = sorted([sc.targets[0][:4] + f"{i:026d}" for i in range(21)])
        elif v == "OTHER_BRAND":
            other = (await sc.env.integration(sc.world.brand_b, "instagram")).id
            body[k] = sorted([sc.tt, other])
        elif v == "UNKNOWN":
            body[k] = "cnt_" + "0" * 26
        else:
            body[k] = v
    before = await sc.env.row_counts()
    out = await sc.env.call("create_schedule", sc.world.full_key, idempotency_key=new_key(), **body)
    assert out.status == status, out.body
    assert out.body["error"]["code"] == code
    if path:
        assert any(i["field_path"].startswith(path) for i in out.body["error"]["issues"]), out.body
    assert await sc.env.row_counts() == before


async def test_blocked_content_is_refused_with_the_preflight_blockers(sc) -> None:
    blocked = await sc.item(tiktok_settings={"media_ids": [sc.video], "post_type": "VIDEO"})
    out = await sc.create(blocked)
    assert out.status == 422 and out.body["error"]["code"] == "PREFLIGHT_BLOCKED"
    assert {i["code"] for i in out.body["error"]["issues"]} == {"TIKTOK_PRIVACY_LEVEL_REQUIRED",
                                                               "TIKTOK_TERMS_NOT_AGREED"}
    assert out.body["error"]["details"]["fingerprint"].startswith("sha256:")
    assert await schedules(sc) == 0


# -- get ---------------------------------------------------------------------------------------------------------

async def test_get_refusals(sc) -> None:
    schedule_id = await sc.seed(sc.item_id, "held")
    unknown = await sc.env.call("get_schedule", sc.world.full_key, brand_id=sc.brand.id,
                                schedule_id="sch_" + "0" * 26)
    assert unknown.status == 404 and unknown.body["error"]["code"] == "NOT_FOUND"
    # brand B's key, asking with brand B in the path for brand A's Schedule: not disclosed
    wrong_brand = await sc.env.call("get_schedule", sc.world.key_b_only, brand_id=sc.world.brand_b.id,
                                    schedule_id=schedule_id)
    assert wrong_brand.status == 404
    restricted = await sc.env.call("get_schedule", sc.world.key_b_only, brand_id=sc.brand.id,
                                   schedule_id=schedule_id)
    assert restricted.status == 404
    no_scope = await sc.env.call("get_schedule", await sc.key("schedule:write"), brand_id=sc.brand.id,
                                 schedule_id=schedule_id)
    assert no_scope.status == 403


async def test_latest_execution_is_redacted(sc) -> None:
    schedule_id = await sc.seed(sc.item_id, "run")
    out = await sc.env.call("get_schedule", sc.world.full_key, brand_id=sc.brand.id, schedule_id=schedule_id)
    assert out.status == 200
    s = out.body["data"]
    run = s["latest_execution"]
    assert set(run) == {"id", "status", "started_at", "finished_at", "targets"}
    assert run["id"].startswith("run_") and run["status"] == "processing" and run["finished_at"] is None
    assert [t["integration_id"] for t in run["targets"]] == sc.targets
    for t in run["targets"]:
        assert set(t) == {"integration_id", "platform", "state", "attempts", "failure_reason"}
        assert t["state"] == "attempting" and t["attempts"] == 1
    text = json.dumps(out.body)
    assert "PROVIDER-SECRET-ID" not in text and "example.com/p/1" not in text and "rate_limited" not in text
    assert s["status"] == "publishing" and [a["action"] for a in s["next_actions"]] == ["wait_for_execution"]


# -- list --------------------------------------------------------------------------------------------------------

async def list_(sc: Sched, **query: Any) -> Any:
    query.setdefault("from", "2026-03-01T00:00:00.000Z")
    query.setdefault("to", "2026-04-01T00:00:00.000Z")
    return await sc.env.call("list_schedules", sc.world.full_key, brand_id=sc.brand.id, **query)


async def seed_times(sc: Sched, *times: str) -> list[str]:
    return [await sc.seed(sc.item_id, "held", at=t) for t in times]


async def test_list_window_bounds_and_order(sc) -> None:
    ids = await seed_times(sc, "2026-03-10T00:00:00.000Z", "2026-03-03T00:00:00.000Z", "2026-03-20T00:00:00.000Z",
                           "2026-03-20T00:00:00.000Z", "2026-03-31T00:00:00.000Z")
    out = await list_(sc, **{"from": "2026-03-03T00:00:00.000Z", "to": "2026-03-31T00:00:00.000Z"})
    assert out.status == 200, out.body
    data = out.body["data"]
    # from inclusive, to exclusive; ordered by (scheduled_at, id)
    assert [i["id"] for i in data["items"]] == [ids[1], ids[0], *sorted(ids[2:4])]
    assert data["has_more"] is False and data["next_cursor"] is None
    assert set(data["items"][0]) == SCHEDULE_FIELDS
    desc = await list_(sc, order_direction="desc")
    assert [i["id"] for i in desc.body["data"]["items"]] == [ids[4], *sorted(ids[2:4], reverse=True), ids[0], ids[1]]
    # another brand's Schedules are never listed
    other = await sc.env.call("list_schedules", sc.world.full_key, brand_id=sc.world.brand_b.id,
                              **{"from": "2026-03-01T00:00:00.000Z", "to": "2026-04-01T00:00:00.000Z"})
    assert other.body["data"]["items"] == []


@pytest.mark.parametrize("direction", ["asc", "desc"])
async def test_list_cursor_pages_cover_the_window_once(sc, direction: str) -> None:
    times = [f"2026-03-{d:02d}T12:00:00.000Z" for d in (5, 6, 6, 6, 7, 9, 12)]
    ids = await seed_times(sc, *times)
    expected = [i for _, i in sorted(zip(times, ids, strict=True), reverse=direction == "desc")]
    seen: list[str] = []
    cursor = None
    for _ in range(10):
        out = await list_(sc, limit=2, order_direction=direction, **({"cursor": cursor} if cursor else {}))
        assert out.status == 200, out.body
        data = out.body["data"]
        assert len(data["items"]) <= 2
        seen += [i["id"] for i in data["items"]]
        cursor = data["next_cursor"]
        assert data["has_more"] is (cursor is not None)
        if cursor is None:
            break
    assert seen == expected


async def test_list_cursor_is_bound_to_window_label_and_direction(sc) -> None:
    await seed_times(sc, "2026-03-05T00:00:00.000Z", "2026-03-06T00:00:00.000Z")
    cursor = (await list_(sc, limit=1)).body["data"]["next_cursor"]
    assert cursor
    label = await add_label(sc)
    for query in ({"from": "2026-03-02T00:00:00.000Z"}, {"to": "2026-04-02T00:00:00.000Z"},
                  {"order_direction": "desc"}, {"label": label}, {}):
        out = await list_(sc, limit=1, cursor=cursor + ("x" if not query else ""), **query)
        assert out.status == 400 and out.body["error"]["code"] == "INVALID_CURSOR", query
    ok = await list_(sc, limit=1, cursor=cursor)
    assert ok.status == 200 and len(ok.body["data"]["items"]) == 1


async def add_label(sc: Sched, brand: Any = None) -> str:
    from schemas.ids import new_id
    from storage.tables.library import Label
    brand = brand or sc.brand
    async with sc.env.db.session(write=True) as s:
        label = Label(id=new_id("lbl"), workspace_id=brand.workspace_id, brand_id=brand.id, name="Promo",
                      created_at=sc.env.clock.now(), updated_at=sc.env.clock.now())
        s.add(label)
    return label.id


async def test_list_label_filter(sc) -> None:
    label = await add_label(sc)
    labelled = await sc.item(name="Labelled")
    async with sc.env.db.session(write=True) as s:
        s.add(ContentItemLabel(content_item_id=labelled, label_id=label, brand_id=sc.brand.id))
    plain = await sc.seed(sc.item_id, "held")
    tagged = await sc.seed(labelled, "scheduled")
    assert {i["id"] for i in (await list_(sc)).body["data"]["items"]} == {plain, tagged}
    out = await list_(sc, label=label)
    assert [i["id"] for i in out.body["data"]["items"]] == [tagged]
    foreign = await list_(sc, label=await add_label(sc, sc.world.brand_b))
    assert foreign.status == 422 and foreign.body["error"]["issues"][0]["field_path"] == "$.label"


@pytest.mark.parametrize(("query", "path", "code"), [
    ({"from": "2026-03-01T00:00:00"}, "$.from", "INVALID_TIMESTAMP"),
    ({"to": "soon"}, "$.to", "INVALID_TIMESTAMP"),
    ({"to": "2026-03-01T00:00:00.000Z"}, "$.to", "WINDOW_ORDER"),
    ({"to": "2026-02-01T00:00:00.000Z"}, "$.to", "WINDOW_ORDER"),
    ({"to": "2026-06-02T00:00:00.001Z"}, "$.to", "WINDOW_TOO_LONG"),
    ({"limit": 0}, "$.limit", "OUT_OF_RANGE"),
    ({"limit": 51}, "$.limit", "OUT_OF_RANGE"),
    ({"order_direction": "up"}, "$.order_direction", "NOT_ALLOWED"),
    ({"from": None}, "$.from", "REQUIRED"),
], ids=["naive-from", "bad-to", "empty-window", "reversed", "94-days", "limit-0", "limit-51", "direction", "no-from"])
async def test_list_bad_query(sc, query: dict[str, Any], path: str, code: str) -> None:
    args: dict[str, Any] = {"from": "2026-03-01T00:00:00.000Z", "to": "2026-04-01T00:00:00.000Z", **query}
    args = {k: v for k, v in args.items() if v is not None}
    out = await sc.env.call("list_schedules", sc.world.full_key, brand_id=sc.brand.id, **args)
    assert out.status == 400 and out.body["error"]["code"] == "INVALID_QUERY", out.body
    assert {(i["field_path"], i["code"]) for i in out.body["error"]["issues"]} == {(path, code)}


async def test_list_window_of_exactly_93_days_and_rest(sc) -> None:
    await seed_times(sc, "2026-03-05T00:00:00.000Z")
    resp = await sc.env.rest.get(f"/v1/brands/{sc.brand.id}/schedules",
                                 params={"from": "2026-03-01T00:00:00.000Z", "to": "2026-06-02T00:00:00.000Z"},
                                 headers=sc.env.auth(sc.world.full_key))
    assert resp.status_code == 200, resp.json()
    assert len(resp.json()["data"]["items"]) == 1


async def test_list_reads_executions_in_batch(sc) -> None:
    """The number of statements does not grow with the number of Schedules (no query per row)."""
    async def statements() -> int:
        count = 0

        def on_execute(*_: Any) -> None:
            nonlocal count
            count += 1

        engine = sc.env.db.read_engine.sync_engine
        event.listen(engine, "before_cursor_execute", on_execute)
        try:
            assert (await list_(sc)).status == 200
        finally:
            event.remove(engine, "before_cursor_execute", on_execute)
        return count

    await sc.seed(sc.item_id, "run")
    one = await statements()
    for _ in range(4):
        await sc.seed(sc.item_id, "run")
    assert await statements() == one


# -- usage probe and move to drafts -------------------------------------------------------------------------------

async def usage_of(sc: Sched, item_id: str) -> set[str]:
    async with sc.env.db.session(write=False) as s:
        return (await content_usage.usage(s, sc.brand.id, [item_id])).get(item_id, set())


async def set_status(sc: Sched, schedule_id: str, status: str) -> None:
    async with sc.env.db.session(write=True) as s:
        row = (await s.exec(select(Schedule).where(Schedule.id == schedule_id))).one()
        row.status = status
        s.add(row)


async def test_usage_probe_states(sc) -> None:
    assert await usage_of(sc, sc.item_id) == set()
    held = await sc.seed(sc.item_id, "held")
    assert await usage_of(sc, sc.item_id) == {"scheduled"}
    # a scheduled item is no longer an editable draft
    edit = await sc.env.call("update_draft", sc.world.full_key, idempotency_key=new_key(), brand_id=sc.brand.id,
                             draft_id=sc.item_id, confirm_draft_id=sc.item_id, caption="Renamed")
    assert edit.status == 409 and edit.body["error"]["details"]["usage"] == ["scheduled"]
    await set_status(sc, held, "publishing")
    assert await usage_of(sc, sc.item_id) == {"publishing"}
    await set_status(sc, held, "cancelled")
    assert await usage_of(sc, sc.item_id) == set()  # a cancelled Schedule does not use the item
    await sc.publish(held, sc.item_id)
    assert await usage_of(sc, sc.item_id) == {"published"}
    other_item = await sc.item(name="Other")
    assert await usage_of(sc, other_item) == set()


async def move(sc: Sched, schedule_id: str) -> Any:
    return await sc.env.call("move_schedule_to_draft", sc.world.full_key, idempotency_key=new_key(),
                             brand_id=sc.brand.id, schedule_id=schedule_id, confirm_schedule_id=schedule_id)


async def test_move_to_draft_refused_while_another_use_remains(sc) -> None:
    first = await sc.seed(sc.item_id, "held")
    second = await sc.seed(sc.item_id, "scheduled")
    out = await move(sc, first)
    assert out.status == 409 and out.body["error"]["details"]["usage"] == ["scheduled"]
    assert await sc.row(first) is not None
    # delete needs no such check: it removes only this Schedule
    deleted = await sc.env.call("delete_schedule", sc.world.full_key, idempotency_key=new_key(),
                                brand_id=sc.brand.id, schedule_id=second, confirm_schedule_id=second)
    assert deleted.status == 200 and deleted.body["data"]["outcome"] == "deleted"
    # now this Schedule is the only use: it moves, and the item is a draft again
    out = await move(sc, first)
    assert out.status == 200 and out.body["data"] == {"id": first, "content_item_id": sc.item_id,
                                                      "outcome": "moved_to_draft"}
    drafts = await sc.env.call("list_drafts", sc.world.full_key, brand_id=sc.brand.id)
    assert sc.item_id in {d["id"] for d in drafts.body["data"]["items"]}


async def test_move_to_draft_refused_when_published_or_queued(sc) -> None:
    held = await sc.seed(sc.item_id, "held")
    old = await sc.seed(sc.item_id, "cancelled")
    await sc.publish(old, sc.item_id)
    out = await move(sc, held)
    assert out.status == 409 and out.body["error"]["details"]["usage"] == ["published"]

    other_item = await sc.item(name="Queued")
    queued = await sc.seed(other_item, "held")

    async def queue_probe(session: Any, brand_id: str, ids: list[str]) -> dict[str, set[str]]:
        return {other_item: {"queued"}} if other_item in ids else {}

    registered = areas.usage_probes()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(areas, "usage_probes", lambda: (*registered, queue_probe))
        out = await move(sc, queued)
    assert out.status == 409 and out.body["error"]["details"]["usage"] == ["queued"]
    assert await sc.row(queued) is not None


async def test_delete_keeps_content_and_media(sc) -> None:
    schedule_id = await sc.seed(sc.item_id, "scheduled")
    out = await sc.env.call("delete_schedule", sc.world.full_key, idempotency_key=new_key(), brand_id=sc.brand.id,
                            schedule_id=schedule_id, confirm_schedule_id=schedule_id)
    assert out.status == 200
    item = await sc.env.call("get_content_item", sc.world.full_key, brand_id=sc.brand.id, content_item_id=sc.item_id)
    assert item.status == 200
    media = await sc.env.call("get_media", sc.world.full_key, brand_id=sc.brand.id, media_id=sc.image)
    assert media.status == 200
    gone = await sc.env.call("get_schedule", sc.world.full_key, brand_id=sc.brand.id, schedule_id=schedule_id)
    assert gone.status == 404


# -- readiness re-checks -----------------------------------------------------------------------------------------

async def test_reschedule_to_the_past_is_blocked(sc) -> None:
    schedule_id = await sc.seed(sc.item_id, "scheduled")
    before = await sc.row(schedule_id)
    out = await sc.env.call("reschedule_schedule", sc.world.full_key, idempotency_key=new_key(),
                            brand_id=sc.brand.id, schedule_id=schedule_id, confirm_schedule_id=schedule_id,
                            scheduled_at="2026-03-02T08:59:59Z")
    assert out.status == 422 and out.body["error"]["code"] == "PREFLIGHT_BLOCKED"
    assert "SCHEDULED_AT_IN_PAST" in {i["code"] for i in out.body["error"]["issues"]}
    assert await sc.row(schedule_id) == before


async def test_approve_rechecks_readiness_and_time(sc) -> None:
    schedule_id = await sc.seed(sc.item_id, "held")
    # a target disconnected since the Schedule was created: approval re-runs preflight
    async with sc.env.db.session(write=True) as s:
        from storage.tables.integrations import Integration
        row = (await s.exec(select(Integration).where(Integration.id == sc.tt))).one()
        row.status = "disconnected"
        s.add(row)
    before = await sc.row(schedule_id)
    out = await sc.env.call("approve_schedule", sc.world.full_key, idempotency_key=new_key(), brand_id=sc.brand.id,
                            schedule_id=schedule_id, confirm_schedule_id=schedule_id)
    assert out.status == 422 and out.body["error"]["code"] == "PREFLIGHT_BLOCKED", out.body
    assert await sc.row(schedule_id) == before
    # a held Schedule whose time has passed: 409, reschedule first
    past = await sc.seed(sc.item_id, "held", at="2026-03-02T10:00:00Z")
    sc.env.clock.advance(hours=2)
    out = await sc.env.call("approve_schedule", sc.world.full_key, idempotency_key=new_key(), brand_id=sc.brand.id,
                            schedule_id=past, confirm_schedule_id=past)
    assert out.status == 409 and out.body["error"]["next_action"] == "reschedule_schedule"
    assert (await sc.row(past))["approval_status"] == "pending_review"


async def test_concurrent_cancels_one_wins(sc) -> None:
    """The row is locked for the write: two cancels under different keys never both succeed."""
    import anyio

    schedule_id = await sc.seed(sc.item_id, "scheduled")
    results: list[Any] = []

    async def cancel() -> None:
        results.append(await sc.env.call("cancel_schedule", sc.world.full_key, idempotency_key=new_key(),
                                         brand_id=sc.brand.id, schedule_id=schedule_id,
                                         confirm_schedule_id=schedule_id))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(cancel)
    assert sorted(r.status for r in results) == [200, 409, 409]


async def test_rest_routes_for_changes(sc) -> None:
    base = f"/v1/brands/{sc.brand.id}/schedules"
    held, other = await sc.seed(sc.item_id, "held"), await sc.seed(await sc.item(name="B"), "held")
    headers = sc.env.auth(sc.world.full_key, Idempotency_Key="k-approve")
    resp = await sc.env.rest.post(f"{base}/{held}/approve", json={"confirm_schedule_id": held}, headers=headers)
    assert resp.status_code == 200 and resp.json()["data"]["outcome"] == "approved"
    again = await sc.env.rest.post(f"{base}/{held}/approve", json={"confirm_schedule_id": held}, headers=headers)
    assert again.status_code == 200 and again.headers["Idempotency-Replayed"] == "true"
    assert again.json()["data"]["outcome"] == "approved"
    resp = await sc.env.rest.request("DELETE", f"{base}/{other}", json={"confirm_schedule_id": other,
                                                                         "idempotency_key": "k-delete"},
                                     headers=sc.env.auth(sc.world.full_key))
    assert resp.status_code == 200 and resp.json()["data"]["outcome"] == "deleted"
    listed = await sc.env.rest.get(base, params={"from": "2026-03-01T00:00:00.000Z", "to": "2026-04-01T00:00:00Z"},
                                   headers=sc.env.auth(sc.world.full_key))
    assert [i["id"] for i in listed.json()["data"]["items"]] == [held]
