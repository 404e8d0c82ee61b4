"""The worker's plain rows (Core inserts) write what the objects of the same services write: deferred
notifications as `notify` at once, Schedule events as `event_log.schedule`."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import insert
from sqlmodel import select

from storage.tables.events import Event
from storage.tables.notifications import EmailOutbox, Notification
from tools.notifications import notify
from tools.services import event_log

pytestmark = pytest.mark.anyio


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in type(obj).model_fields}


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


async def test_schedule_event_rows_write_what_the_event_object_writes(world) -> None:
    env = world.env
    now = env.clock.now()
    schedule = SimpleNamespace(id="sch_rows", workspace_id=world.ws.id, brand_id=world.brand_a.id,
                               status="partially_published", approval_status="approved", content_item_id="ci_rows",
                               scheduled_at=now, failure_reason="1 of 2 targets did not publish.")
    async with env.db.session(write=True) as s:
        event_log.schedule(s, now, schedule, "schedule.partially_published")
        await (await s.connection()).execute(insert(event_log.EVENTS), [
            event_log.schedule_values(now, schedule, "schedule.partially_published")])
    async with env.db.session(write=False) as s:
        events = (await s.exec(select(Event).where(Event.subject_id == "sch_rows"))).all()
    assert len(events) == 2 and events[0].id != events[1].id
    as_object, as_row = ({k: v for k, v in _fields(e).items() if k != "id"} for e in events)
    assert as_object == as_row and as_row["fanned_out"] is False and as_row["data"]["status"] == "partially_published"
