"""The spec's Schedule state table as one parametrised table.

Each row: the route, the state the Schedule starts in, the scopes the route needs, and what comes out (HTTP
status, outcome, the status afterwards, or the row removed). For every success row the same table drives:
each missing scope -> 403 with nothing changed, an exact replay -> 200 + Idempotency-Replayed, the same key
with other input -> 409 IDEMPOTENCY_KEY_CONFLICT, a key restricted to another brand -> 404. Refusal rows
(a run has started, cancelled, not held) -> 409 CONFLICT with nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.schedules.support import SCHEDULE_FIELDS, Sched, new_key

pytestmark = pytest.mark.anyio

W, P, X, PW = "schedule:write", "publish:execute", "schedule:read", "posts:write"
NEW_TIME = "2026-03-06T08:00:00+01:00"
NEW_TIME_UTC = "2026-03-06T07:00:00.000Z"
REMOVED = "removed"


@dataclass(frozen=True)
class Row:
    name: str
    endpoint: str
    start: str | None  # held | rejected | scheduled | cancelled | run | None (create)
    scopes: tuple[str, ...]
    status: int = 200
    outcome: str | None = None
    after: str | None = None  # status afterwards, or REMOVED
    args: dict[str, Any] = field(default_factory=dict)
    replay_outcome: str | None = None  # the outcome a replay reports
    error: str | None = None


TABLE = [
    # (none) -> action_required: held create needs only schedule:write
    Row("create held", "create_schedule", None, (W,), 201, "created", "action_required",
        {"approval_status": "pending_review"}, "replayed"),
    # (none) -> scheduled: approved create additionally needs publish:execute
    Row("create approved", "create_schedule", None, (W, P), 201, "created", "scheduled",
        {"approval_status": "approved"}, "replayed"),
    # action_required (held) -> scheduled (approved)
    Row("approve held", "approve_schedule", "held", (W, P), 200, "approved", "scheduled", {}, "approved"),
    # (held or scheduled) -> unchanged status, only scheduled_at changes
    Row("reschedule held", "reschedule_schedule", "held", (W, P), 200, "rescheduled", "action_required",
        {"scheduled_at": NEW_TIME}, "replayed"),
    Row("reschedule scheduled", "reschedule_schedule", "scheduled", (W, P), 200, "rescheduled", "scheduled",
        {"scheduled_at": NEW_TIME}, "replayed"),
    # (held or scheduled) -> cancelled
    Row("cancel held", "cancel_schedule", "held", (W,), 200, "cancelled", "cancelled", {}, "replayed"),
    Row("cancel scheduled", "cancel_schedule", "scheduled", (W,), 200, "cancelled", "cancelled", {}, "replayed"),
    # (unsent) -> removed, content kept as draft
    Row("move held to drafts", "move_schedule_to_draft", "held", (W, PW), 200, "moved_to_draft", REMOVED, {},
        "moved_to_draft"),
    Row("move scheduled to drafts", "move_schedule_to_draft", "scheduled", (W, PW), 200, "moved_to_draft", REMOVED,
        {}, "moved_to_draft"),
    # (unsent) -> removed, content and media remain
    Row("delete held", "delete_schedule", "held", (W,), 200, "deleted", REMOVED, {}, "deleted"),
    Row("delete scheduled", "delete_schedule", "scheduled", (W,), 200, "deleted", REMOVED, {}, "deleted"),
    Row("delete cancelled", "delete_schedule", "cancelled", (W,), 200, "deleted", REMOVED, {}, "deleted"),
    # any -> unchanged, 409 CONFLICT, once a run is processing or has run
    Row("reschedule after run", "reschedule_schedule", "run", (W, P), 409, args={"scheduled_at": NEW_TIME},
        error="CONFLICT"),
    Row("cancel after run", "cancel_schedule", "run", (W,), 409, error="CONFLICT"),
    Row("approve after run", "approve_schedule", "run", (W, P), 409, error="CONFLICT"),
    Row("move after run", "move_schedule_to_draft", "run", (W, PW), 409, error="CONFLICT"),
    Row("delete after run", "delete_schedule", "run", (W,), 409, error="CONFLICT"),
    # decisions (docs/decisions.md): cancelled stays cancelled; only held schedules are approved
    Row("cancel cancelled", "cancel_schedule", "cancelled", (W,), 409, error="CONFLICT"),
    Row("reschedule cancelled", "reschedule_schedule", "cancelled", (W, P), 409, args={"scheduled_at": NEW_TIME},
        error="CONFLICT"),
    Row("approve cancelled", "approve_schedule", "cancelled", (W, P), 409, error="CONFLICT"),
    Row("approve approved", "approve_schedule", "scheduled", (W, P), 409, error="CONFLICT"),
    Row("approve rejected", "approve_schedule", "rejected", (W, P), 409, error="CONFLICT"),
]
SUCCESS = [r for r in TABLE if r.status < 400]
MISSING = [(r, s) for r in SUCCESS for s in r.scopes]


async def start(sc: Sched, row: Row, item_id: str | None = None) -> str | None:
    return None if row.start is None else await sc.seed(item_id or sc.item_id, row.start)


async def send(sc: Sched, row: Row, secret: str, schedule_id: str | None, key: str | None = None,
               brand_id: str | None = None) -> Any:
    args: dict[str, Any] = {"brand_id": brand_id or sc.brand.id, **row.args}
    if row.endpoint == "create_schedule":
        args.update(content_item_id=sc.item_id, scheduled_at="2026-03-05T10:30:00+01:00", integration_ids=sc.targets)
    else:
        args.update(schedule_id=schedule_id, confirm_schedule_id=schedule_id)
    return await sc.env.call(row.endpoint, secret, idempotency_key=key or new_key(), **args)


async def state(sc: Sched, schedule_id: str | None) -> Any:
    return (await sc.env.row_counts(), await sc.row(schedule_id) if schedule_id else None)


@pytest.mark.parametrize("row", TABLE, ids=[r.name for r in TABLE])
async def test_transition(sc, row: Row) -> None:
    schedule_id = await start(sc, row)
    secret = await sc.key(*row.scopes)
    calls = list(sc.env.sandbox.calls)
    before = await state(sc, schedule_id)
    out = await send(sc, row, secret, schedule_id)
    assert out.status == row.status, out.body
    assert sc.env.sandbox.calls == calls  # no route here calls a provider
    if row.error:
        assert out.body["error"]["code"] == row.error
        assert await state(sc, schedule_id) == before
        return
    data = out.body["data"]
    assert data["outcome"] == row.outcome
    schedule_id = schedule_id or data["schedule"]["id"]
    stored = await sc.row(schedule_id)
    if row.after == REMOVED:
        assert stored is None
        assert data["id"] == schedule_id and data["content_item_id"] == sc.item_id
        assert (await sc.env.call("get_content_item", sc.world.full_key, brand_id=sc.brand.id,
                                  content_item_id=sc.item_id)).status == 200  # content kept
        return
    assert stored["status"] == row.after
    schedule = data["schedule"]
    assert set(schedule) == SCHEDULE_FIELDS and schedule["id"] == schedule_id and schedule["status"] == row.after
    if row.endpoint == "approve_schedule":
        assert data["id"] == schedule_id
        assert stored["approval_status"] == "approved" and stored["blocking_reason"] is None
        assert stored["approved_by_key"] == sc.env.key_row(secret).id and stored["approved_at"] is not None
        assert [a["action"] for a in schedule["next_actions"]] == ["wait_for_execution"]
    if row.endpoint == "reschedule_schedule":
        assert schedule["scheduled_at"] == NEW_TIME_UTC
        assert before[1]["status"] == stored["status"] and before[1]["approval_status"] == stored["approval_status"]
        assert before[1]["integration_ids"] == stored["integration_ids"]
    if row.endpoint == "cancel_schedule":
        assert schedule["next_actions"] == [] and stored["cancelled_at"] is not None
        assert stored["scheduled_at"] == before[1]["scheduled_at"] and stored["blocking_reason"] is None


@pytest.mark.parametrize(("row", "missing"), MISSING, ids=[f"{r.name}-without-{s}" for r, s in MISSING])
async def test_each_missing_scope_is_refused_and_changes_nothing(sc, row: Row, missing: str) -> None:
    schedule_id = await start(sc, row)
    secret = await sc.key(*(s for s in row.scopes if s != missing), X)
    before = await state(sc, schedule_id)
    out = await send(sc, row, secret, schedule_id)
    assert out.status == 403, out.body
    assert out.body["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert missing in out.body["error"]["details"]["required_scopes"]
    assert await state(sc, schedule_id) == before


@pytest.mark.parametrize("row", SUCCESS, ids=[r.name for r in SUCCESS])
async def test_replay_and_changed_input(sc, row: Row) -> None:
    schedule_id = await start(sc, row)
    other_id = await start(sc, row, await sc.item(name="Other"))  # another item: move-to-draft needs no other use
    key = new_key()
    first = await send(sc, row, sc.world.full_key, schedule_id, key=key)
    assert first.status == row.status, first.body
    after_first = await state(sc, schedule_id)
    again = await send(sc, row, sc.world.full_key, schedule_id, key=key)
    assert again.status == 200 and again.headers.get("Idempotency-Replayed") == "true"
    assert again.body["data"]["outcome"] == row.replay_outcome
    assert {k: v for k, v in again.body["data"].items() if k != "outcome"} == \
        {k: v for k, v in first.body["data"].items() if k != "outcome"}
    assert await state(sc, schedule_id) == after_first  # a replay writes nothing
    if row.endpoint == "create_schedule":  # other input under the same key: another time
        changed = await sc.create(sc.item_id, key=key, scheduled_at="2026-03-07T10:00:00Z",
                                  approval_status=row.args["approval_status"])
    else:  # other input under the same key: another Schedule
        changed = await send(sc, row, sc.world.full_key, other_id, key=key)
    assert changed.status == 409 and changed.body["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert await state(sc, schedule_id) == after_first


@pytest.mark.parametrize("row", SUCCESS, ids=[r.name for r in SUCCESS])
async def test_brand_restriction_hides_the_schedule(sc, row: Row) -> None:
    schedule_id = await start(sc, row)
    before = await state(sc, schedule_id)
    out = await send(sc, row, sc.world.key_b_only, schedule_id)
    assert out.status == 404 and out.body["error"]["code"] == "NOT_FOUND"
    assert await state(sc, schedule_id) == before


CONFIRMED = [r for r in SUCCESS if r.endpoint != "create_schedule"]


@pytest.mark.parametrize("row", CONFIRMED, ids=[r.name for r in CONFIRMED])
async def test_confirm_id_mismatch_is_refused(sc, row: Row) -> None:
    schedule_id = await start(sc, row)
    other_id = await sc.seed(sc.item_id, "held")
    before = await state(sc, schedule_id)
    out = await sc.env.call(row.endpoint, sc.world.full_key, idempotency_key=new_key(), brand_id=sc.brand.id,
                            schedule_id=schedule_id, confirm_schedule_id=other_id, **row.args)
    assert out.status == 422 and out.body["error"]["code"] == "DOMAIN_VALIDATION_FAILED"
    assert out.body["error"]["issues"][0]["field_path"] == "$.confirm_schedule_id"
    assert await state(sc, schedule_id) == before
    missing_key = await sc.env.call(row.endpoint, sc.world.full_key, brand_id=sc.brand.id, schedule_id=schedule_id,
                                    confirm_schedule_id=schedule_id, **row.args)
    assert missing_key.status == 400 and missing_key.body["error"]["issues"][0]["field_path"] == "$.idempotency_key"
    assert await state(sc, schedule_id) == before
