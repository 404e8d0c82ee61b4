"""The worker's deferred notifications (plain rows, Core inserts) write what `notify` writes as objects at once."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from storage.tables.notifications import EmailOutbox, Notification
from tools.notifications import notify

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
