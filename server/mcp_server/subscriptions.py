"""MCP resource subscriptions: a client subscribed to a Schedule's resource
(`socialpub://brands/{brand_id}/schedules/{schedule_id}`) or to a brand's notifications
(`socialpub://brands/{brand_id}/notifications`) gets `notifications/resources/updated` when it changes, then reads
the resource again for the new state. Handshake-era clients (protocol <= 2025-11-25) subscribe with
`resources/subscribe`; clients of protocol 2026-07-28 name the URIs in `subscriptions/listen`'s
`resourceSubscriptions` and get the updates on that request's stream (`ListenSink`).

A subscription is accepted only after the caller could read the resource (same dispatch, same authority as
`resources/read`; a listen stream's acknowledgement omits the URIs it refused). One `Hub` per server lifespan (per stdio connection; one for all streamable HTTP and SSE
sessions of a process) keeps the subscriptions and a watcher that tails the event log (tools/events/record.py: a
Schedule's state changes are written with the change itself, by whatever process made it) and the notifications
table. IDs are time-sortable, so the watcher reads the last `LOOKBACK` of each by ID and remembers what it
announced (a row committed a little after a later one is still seen).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from sqlmodel import col, select

from schemas.ids import id_floor
from tools.runtime import Runtime
from tools.services.telemetry import count_delivery

log = logging.getLogger("socialpub.mcp.subscriptions")

SCHEDULE_URI = "socialpub://brands/{brand_id}/schedules/{schedule_id}"
NOTIFICATIONS_URI = "socialpub://brands/{brand_id}/notifications"
POLL_SECONDS = 1.0
LOOKBACK_SECONDS = 30.0
MAX_PER_SESSION = 100  # subscriptions one session (or one listen stream) may hold
MAX_LISTEN_STREAMS = 1000  # open subscriptions/listen streams per server process
HUB = "subscriptions"  # the key of the Hub in the server's lifespan state


def schedule_uri(brand_id: str, schedule_id: str) -> str:
    return SCHEDULE_URI.format(brand_id=brand_id, schedule_id=schedule_id)


def notifications_uri(brand_id: str) -> str:
    return NOTIFICATIONS_URI.format(brand_id=brand_id)


def _floor(prefix: str, seconds_ago: float) -> str:
    return id_floor(prefix, int((time.time() - seconds_ago) * 1000))


class Hub:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        # uri -> the sessions subscribed; subject (schedule ID or brand ID) -> its URIs
        self.sessions: dict[str, set[Any]] = {}
        self.schedules: dict[str, str] = {}  # schedule ID -> uri
        self.brands: dict[str, str] = {}  # brand ID -> notifications uri
        self.announced: dict[str, float] = {}  # row IDs already announced -> when (pruned after the lookback)
        self.wake = anyio.Event()
        self.listen_streams = 0

    def watched(self, params: dict[str, str]) -> bool:
        return (params["schedule_id"] in self.schedules) if "schedule_id" in params else \
            (params["brand_id"] in self.brands)

    async def prime(self, params: dict[str, str]) -> None:
        """What happened to a subject before anyone watched it is not news: mark its recent rows announced. A
        subject already watched is left alone (its rows not yet announced are news to its other subscribers)."""
        if self.watched(params):
            return
        from storage.tables.events import Event  # here: a server with no subscriber never builds these tables
        from storage.tables.notifications import Notification

        now = time.monotonic()
        async with self.rt.db.session(write=False) as session:
            if "schedule_id" in params:
                rows = (await session.exec(select(Event.id).where(
                    Event.id >= _floor("evt", LOOKBACK_SECONDS), Event.subject_id == params["schedule_id"])
                    .limit(1000))).all()
            else:
                rows = (await session.exec(select(Notification.id).where(
                    Notification.id >= _floor("ntf", LOOKBACK_SECONDS), Notification.brand_id == params["brand_id"])
                    .limit(1000))).all()
        for row_id in rows:
            self.announced.setdefault(row_id, now)

    def add(self, session: Any, uri: str, params: dict[str, str]) -> None:
        """Subscribe `session` (anything with `async send_resource_updated(uri)`); `prime` the subject first."""
        held = sum(session in s for s in self.sessions.values())
        if held >= MAX_PER_SESSION:
            raise ValueError(f"a session may hold at most {MAX_PER_SESSION} subscriptions")
        self.sessions.setdefault(uri, set()).add(session)
        if "schedule_id" in params:
            self.schedules[params["schedule_id"]] = uri
        else:
            self.brands[params["brand_id"]] = uri
        self.wake.set()

    def remove(self, session: Any, uri: str) -> None:
        sessions = self.sessions.get(uri)
        if sessions is None:
            return
        sessions.discard(session)
        if not sessions:
            del self.sessions[uri]
            self.schedules = {k: v for k, v in self.schedules.items() if v != uri}
            self.brands = {k: v for k, v in self.brands.items() if v != uri}

    def remove_all(self, session: Any) -> None:
        for uri in list(self.sessions):
            self.remove(session, uri)

    async def _changed(self) -> list[str]:
        """The subscribed URIs whose subject changed since the last look."""
        from storage.tables.events import Event  # here: see `prime`
        from storage.tables.notifications import Notification

        uris: list[str] = []
        now = time.monotonic()
        async with self.rt.db.session(write=False) as session:
            if self.schedules:
                rows = (await session.exec(select(Event.id, Event.subject_id).where(
                    Event.id >= _floor("evt", LOOKBACK_SECONDS), col(Event.subject_id).in_(list(self.schedules)))
                    .order_by(Event.id).limit(1000))).all()
                for row_id, subject in rows:
                    if row_id not in self.announced:
                        self.announced[row_id] = now
                        uris.append(self.schedules[subject])
            if self.brands:
                rows = (await session.exec(select(Notification.id, Notification.brand_id).where(
                    Notification.id >= _floor("ntf", LOOKBACK_SECONDS), col(Notification.brand_id).in_(list(self.brands)))
                    .order_by(Notification.id).limit(1000))).all()
                for row_id, brand_id in rows:
                    if row_id not in self.announced:
                        self.announced[row_id] = now
                        uris.append(self.brands[brand_id])
        self.announced = {k: t for k, t in self.announced.items() if now - t < 2 * LOOKBACK_SECONDS}
        return list(dict.fromkeys(uris))

    async def watch(self) -> None:
        while True:
            if not self.sessions:
                self.wake = anyio.Event()
                await self.wake.wait()
                continue
            try:
                for uri in await self._changed():
                    for session in list(self.sessions.get(uri, ())):
                        try:
                            await session.send_resource_updated(uri)
                            count_delivery("mcp", "sent")
                        except Exception:  # the session is gone: forget its subscriptions
                            count_delivery("mcp", "failed")
                            self.remove_all(session)
            except Exception:
                log.exception("MCP subscription watcher pass failed")
            with anyio.move_on_after(POLL_SECONDS):
                self.wake = anyio.Event()
                await self.wake.wait()


class ListenSink:
    """One `subscriptions/listen` stream (protocol 2026-07-28) as a Hub subscriber: the Hub's updates go onto the
    stream's own bus, which the SDK's `ListenHandler` drains onto that one stream (stamped with its subscription
    ID). A bus per stream keeps the Hub's per-subscriber bookkeeping the same for both eras."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()

    async def send_resource_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))


def lifespan(rt: Runtime) -> Any:
    """The MCP Server's lifespan: a Hub and its watcher for as long as the server runs."""

    @asynccontextmanager
    async def run(_server: Any) -> AsyncIterator[dict[str, Any]]:
        hub = Hub(rt)
        async with anyio.create_task_group() as tg:
            tg.start_soon(hub.watch)
            yield {HUB: hub}
            tg.cancel_scope.cancel()

    return run


# Tools whose result names the resource to subscribe to (a `resource_link` content block).
LINKED_TOOLS = ("create_schedule", "approve_schedule")


def resource_link(tool: str, body: dict[str, Any] | None) -> dict[str, Any] | None:
    """For create_schedule and approve_schedule: the Schedule's resource, as a resource_link block."""
    if tool not in LINKED_TOOLS or not body or not body.get("success"):
        return None
    schedule = (body.get("data") or {}).get("schedule") or {}
    if not schedule.get("id") or not schedule.get("brand_id"):
        return None
    return {"type": "resource_link", "uri": schedule_uri(schedule["brand_id"], schedule["id"]),
            "name": f"schedule {schedule['id']}", "mimeType": "application/json",
            "description": "This Schedule's state. Subscribe with resources/subscribe to get "
                           "notifications/resources/updated when it is published, fails, or is approved or held."}
