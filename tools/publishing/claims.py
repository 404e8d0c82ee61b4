"""Claiming due Schedules for the publishing worker, on the worker's one lease mechanism (storage/leases.py).

A claim is one statement: approved Schedules that are `scheduled` and due, `publishing` ones whose retry time came
(lease released), or `publishing` ones whose lease expired (a dead worker) move to `publishing` under this
worker's lease (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so two workers never claim the same Schedule). While a
batch runs, its worker renews the leases it holds every RENEW_SECONDS; a worker asked to stop hands back at once
the claimed Schedules it has not started.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import anyio
from sqlalchemy import ColumnElement, and_, case, or_

from storage.leases import Leased
from storage.tables.publishing import Schedule
from tools.runtime import Runtime

log = logging.getLogger("socialpub.publishing")

# A worker's claim on a Schedule: short, renewed every RENEW_SECONDS by the claiming worker while it works
# (and at each attempt), so a live worker never loses it and a dead one's claims are free again within LEASE.
LEASE = timedelta(seconds=30)
RENEW_SECONDS = 10.0
STOP_POLL_SECONDS = 0.2  # how soon a stopping worker hands back the Schedules of its batch not yet started

_TABLE = Schedule.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
SCHEDULES = Leased(_TABLE, order_by=(_TABLE.c.scheduled_at, _TABLE.c.id), on_claim={"status": "publishing"})


def due(now: datetime) -> ColumnElement[bool]:
    """What a worker may claim now (only approved Schedules, ever)."""
    c = _TABLE.c
    return and_(c.approval_status == "approved", or_(
        and_(c.status == "scheduled", c.scheduled_at <= now),
        and_(c.status == "publishing", c.lease_owner.is_(None),
             or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now)),
        and_(c.status == "publishing", SCHEDULES.expired(now))))


async def claim_due(rt: Runtime, owner: str, *, limit: int) -> list[str]:
    """Claim up to `limit` due Schedules for `owner`; their IDs, sorted."""
    now = rt.clock.now()
    return await SCHEDULES.claim(rt.db, due(now), now, owner, lease=LEASE, limit=limit)


async def renew_leases(rt: Runtime, owner: str, batch_done: anyio.Event) -> None:
    """The heartbeat: while a batch runs, push the lease of every Schedule this worker holds forward."""
    while True:
        with anyio.move_on_after(RENEW_SECONDS):
            await batch_done.wait()
            return
        try:
            async with rt.db.session(write=True) as s:
                await SCHEDULES.renew(await s.connection(), owner, rt.clock.now(), LEASE)
        except Exception:
            log.warning("could not renew the leases of worker %s; retrying", owner, exc_info=True)


async def hand_back(rt: Runtime, owner: str, claimed: list[str], started: set[str],
                    batch_done: anyio.Event) -> None:
    """When the worker is asked to stop mid-batch, release at once the claimed Schedules it has not started
    (they wait for a slot of the batch), so another worker takes them without waiting for the lease."""
    while owner not in rt.stopping:
        with anyio.move_on_after(STOP_POLL_SECONDS):
            await batch_done.wait()
            return
    await release(rt, owner, [schedule_id for schedule_id in claimed if schedule_id not in started])


async def release(rt: Runtime, owner: str, schedule_ids: list[str]) -> None:
    """Give back claimed Schedules (a stopping worker), in one statement: due again for any worker at once. One
    claimed but never started is `scheduled` again, as it was."""
    if not schedule_ids:
        return
    c = _TABLE.c
    never_started = and_(c.status == "publishing", c.latest_execution_id.is_(None))
    async with rt.db.session(write=True) as s:
        await SCHEDULES.release(await s.connection(), owner, schedule_ids, rt.clock.now(),
                                {"status": case((never_started, "scheduled"), else_=c.status)})
