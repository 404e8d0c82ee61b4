"""The worker's cheap row construction writes what the ORM constructors write: `_new_row` against `Model(**values)`
and the deferred notifications (plain rows, Core inserts) against `notify` writing objects at once."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from storage.tables.notifications import EmailOutbox, Notification
from storage.tables.publishing import Publication, PublishExecution, PublishTarget
from tests.publishing.test_worker import setup
from tools.notifications import notify
from tools.publishing import worker as publishing

pytestmark = pytest.mark.anyio


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in type(obj).model_fields}


def test_new_row_is_what_the_model_constructor_makes() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 3, 2, 9, tzinfo=UTC)
    cases = [
        (PublishExecution, {"id": "run_x", "brand_id": "brd_x", "schedule_id": "sch_x", "status": "processing",
                            "started_at": now, "created_at": now, "updated_at": now}),
        (PublishTarget, {"id": "ptg_x", "execution_id": "run_x", "schedule_id": "sch_x", "brand_id": "brd_x",
                         "integration_id": "int_x", "platform": "instagram", "idempotency_token": "sp_x",
                         "created_at": now, "updated_at": now, "publication_id": "pub_x"}),
        (Publication, {"id": "pub_x", "workspace_id": "ws_x", "brand_id": "brd_x", "schedule_id": "sch_x",
                       "execution_id": "run_x", "target_id": "ptg_x", "platform": "instagram",
                       "integration_id": "int_x", "post_id": "ci_x", "post_name": None, "post_type": "GRID_POST",
                       "media_type": None, "status": "processing", "source": "calendar", "created_at": now,
                       "updated_at": now}),
    ]
    for model, values in cases:
        made, built = publishing._new_row(model, **values), model(**values)
        assert _fields(made) == _fields(built)
        assert made.__pydantic_fields_set__ == built.__pydantic_fields_set__
        made.updated_at = built.updated_at = datetime(2026, 3, 2, 10, tzinfo=UTC)  # a change afterwards
        assert _fields(made) == _fields(built) and made.__pydantic_fields_set__ == built.__pydantic_fields_set__


async def test_new_rows_insert_the_rows_the_constructor_inserts(world) -> None:
    env = world.env
    now = env.clock.now()
    sid, _item, ids = await setup(world)
    values = {"execution_id": "run_rows", "schedule_id": sid, "brand_id": world.brand_a.id,
              "platform": "instagram", "idempotency_token": "sp_rows", "created_at": now, "updated_at": now}
    async with env.db.session(write=True) as s:
        s.add(PublishExecution(id="run_rows", brand_id=world.brand_a.id, schedule_id=sid, status="processing",
                               started_at=now, created_at=now, updated_at=now))
        await s.flush()
        fast = publishing._new_row(PublishTarget, id="ptg_fast", integration_id=ids["instagram"], **values)
        fast.state = "attempting"  # a change before the insert, as the first attempt makes
        slow = PublishTarget(id="ptg_slow", integration_id=ids["facebook"], **values)
        slow.state = "attempting"
        s.add_all([fast, slow])
    async with env.db.session(write=False) as s:
        rows = {t.id: _fields(t) for t in (await s.exec(select(PublishTarget).where(
            PublishTarget.execution_id == "run_rows"))).all()}
    assert rows["ptg_fast"] == {**rows["ptg_slow"], "id": "ptg_fast", "integration_id": ids["instagram"]}
    assert rows["ptg_fast"]["state"] == "attempting" and rows["ptg_fast"]["attempts"] == 0


async def test_deferred_notifications_write_what_immediate_ones_write(world) -> None:
    env = world.env
    await env.key(world.ws, name="colleague")  # two recipients
    now = env.clock.now()
    args = ("post_failed", "post_failed", "Post failed on Instagram", "“Spring” could not be published.")
    async with env.db.session(write=True) as s:
        at_once = await notify.notify(s, now, world.brand_a, *args)
    async with env.db.session(write=True) as s:
        s.info[notify.DEFERRED] = []
        deferred = await notify.notify(s, now, world.brand_a, *args)
        await notify.flush_deferred(s)
        assert s.info[notify.DEFERRED] == []
    assert at_once == deferred and at_once.notifications >= 2 and at_once.emails >= 1
    async with env.db.session(write=False) as s:
        notes = (await s.exec(select(Notification).order_by(Notification.id))).all()
        emails = (await s.exec(select(EmailOutbox).order_by(EmailOutbox.id))).all()

    def shape(rows: list[Any], drop: tuple[str, ...]) -> list[tuple]:
        return sorted(tuple(sorted((k, str(v)) for k, v in _fields(r).items() if k not in drop)) for r in rows)

    assert len(notes) == 2 * at_once.notifications and len(emails) == 2 * at_once.emails
    first = {n.id for n in notes[: at_once.notifications]}
    earlier = [n for n in notes if n.id in first]
    later = [n for n in notes if n.id not in first]
    assert shape(earlier, ("id",)) == shape(later, ("id",))
    earlier_mail = [e for e in emails if e.notification_id in first]
    later_mail = [e for e in emails if e.notification_id not in first]
    assert shape(earlier_mail, ("id", "notification_id")) == shape(later_mail, ("id", "notification_id"))
    assert {e.notification_id for e in later_mail} <= {n.id for n in later}
