"""Webhook delivery ticks: fan the event log out to subscribed endpoints, then deliver the messages.

- `fan_out`: events not yet fanned out (oldest first, locked with SKIP LOCKED so two workers never take the same)
  become one `webhook_messages` row per enabled endpoint that subscribes to the type (and brand), in one
  transaction with the event's `fanned_out` flag. The event itself was written in the state change's own
  transaction (tools/events/record.py), so a crash anywhere loses nothing.
- `deliver_webhooks`: due messages are claimed under a lease (storage/leases.py) and POSTed, signed per Standard
  Webhooks (`webhook-id` = the message ID, the same on every attempt; `webhook-timestamp` = the attempt's wall-clock
  time; `webhook-signature`). A 2xx delivers; anything else retries with `RETRY`'s backoff (about 28 hours in all);
  a message whose retries ran out fails and disables its endpoint, and the workspace admins are notified. A 410
  Gone disables the endpoint at once. Every attempt is logged (status code or error, never the response body).
  A worker that dies mid-request leaves the message `sending`; when its lease expires another worker sends it
  again with the same `webhook-id`, which receivers use to drop duplicates.

Target URLs connect through PinnedTransport: a host resolving to a private address is refused (unless allowed in
SOCIALPUB_FETCH_ALLOW_HOSTS), at every attempt, not only when the endpoint was created.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import ColumnElement, and_, or_
from sqlmodel import col, select

from providers.addresses import AddressRefused, PinnedTransport
from providers.http import ssl_context
from schemas.ids import new_id
from storage.leases import Leased, RetryPolicy
from storage.tables.brands import Brand
from storage.tables.events import Event, WebhookAttempt, WebhookEndpoint, WebhookMessage
from tools.events import webhooks
from tools.notifications import notify
from tools.runtime import Runtime
from tools.services.event_log import TEST_TYPE
from tools.services.telemetry import count_delivery

log = logging.getLogger("socialpub.events.webhooks")

_TABLE = WebhookMessage.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
MESSAGES = Leased(_TABLE, order_by=(_TABLE.c.next_attempt_at, _TABLE.c.id),
                  on_claim={"status": "sending", "attempts": _TABLE.c.attempts + 1})
# 30 s, 1, 2, 4 ... min, then every 4 h: the 16th attempt comes about 28 hours after the first.
RETRY = RetryPolicy(base=timedelta(seconds=30), cap=timedelta(hours=4), max_attempts=16)
LEASE = timedelta(minutes=2)
TIMEOUT = httpx.Timeout(15.0, connect=10.0)
BATCH = 50
USER_AGENT = "socialpub-webhooks/1"


def due(now: datetime) -> ColumnElement[bool]:
    c = MESSAGES.table.c
    waiting = and_(c.status == "pending", or_(c.next_attempt_at.is_(None), c.next_attempt_at <= now))
    return or_(waiting, and_(c.status == "sending", MESSAGES.expired(now)))


def _wants(endpoint: WebhookEndpoint, event: Event) -> bool:
    if event.type == TEST_TYPE:
        return event.data.get("endpoint_id") == endpoint.id
    return event.type in endpoint.event_types and (endpoint.brand_ids is None or event.brand_id in endpoint.brand_ids)


async def fan_out(rt: Runtime, owner: str) -> int:
    """Tick: one message per (new event, subscribed endpoint); how many messages it queued (marking events that no
    endpoint wants is bookkeeping, not work: a worker pass with no webhooks reports nothing done)."""
    if owner in rt.stopping:
        return 0
    now = rt.clock.now()
    async with rt.db.session(write=False) as session:
        if (await session.exec(select(Event.id).where(col(Event.fanned_out).is_(False)).limit(1))).first() is None:
            return 0
    async with rt.db.session(write=True) as session:
        events = (await session.exec(select(Event).where(col(Event.fanned_out).is_(False)).order_by(Event.id)
                                     .limit(BATCH).with_for_update(skip_locked=True))).all()
        if not events:
            return 0
        workspaces = sorted({e.workspace_id for e in events})
        endpoints: dict[str, list[WebhookEndpoint]] = {}
        for endpoint in (await session.exec(select(WebhookEndpoint).where(
                col(WebhookEndpoint.workspace_id).in_(workspaces), col(WebhookEndpoint.enabled).is_(True)))).all():
            endpoints.setdefault(endpoint.workspace_id, []).append(endpoint)
        queued = 0
        for event in events:
            for endpoint in endpoints.get(event.workspace_id, []):
                if _wants(endpoint, event):
                    queued += 1
                    session.add(WebhookMessage(id=new_id("msg"), workspace_id=event.workspace_id,
                                               endpoint_id=endpoint.id, event_id=event.id, event_type=event.type,
                                               next_attempt_at=now, created_at=now, updated_at=now))
            event.fanned_out = True
    return queued


def payload(rt: Runtime, event: Event) -> str:
    """The request body: `{type, timestamp, data}` (Standard Webhooks' recommended shape), links made absolute."""
    base = rt.settings.public_url.rstrip("/")
    data = dict(event.data)
    if isinstance(data.get("links"), dict):
        data["links"] = {k: base + v for k, v in data["links"].items()}
    return json.dumps({"type": event.type, "timestamp": event.created_at.isoformat().replace("+00:00", "Z"),
                       "data": data}, separators=(",", ":"), sort_keys=True)


def client(rt: Runtime) -> httpx.AsyncClient:
    transport = PinnedTransport(verify=ssl_context(), allow_hosts=rt.settings.fetch_allow_hosts)
    return httpx.AsyncClient(transport=transport, timeout=TIMEOUT, follow_redirects=False, trust_env=False)


async def _attempt(rt: Runtime, http: httpx.AsyncClient, endpoint: WebhookEndpoint, message: WebhookMessage,
                   event: Event) -> tuple[int | None, str | None, bool]:
    """POST once: (status code, error, retryable)."""
    body = payload(rt, event)
    now = rt.clock.now()
    sent_at = datetime.now(UTC)  # receivers compare webhook-timestamp with their own clock
    headers = {"webhook-id": message.id, "webhook-timestamp": str(int(sent_at.timestamp())),
               "webhook-signature": webhooks.sign(webhooks.signing_secrets(rt.settings, endpoint, now), message.id,
                                                  sent_at, body),
               "content-type": "application/json", "user-agent": USER_AGENT}
    try:
        response = await http.post(endpoint.url, content=body.encode(), headers=headers)
        await response.aclose()
    except AddressRefused as exc:
        return None, f"refused: the host resolves to a {exc.category} address", False
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: could not reach the endpoint", True
    if 200 <= response.status_code < 300:
        return response.status_code, None, False
    return response.status_code, f"HTTP {response.status_code}", response.status_code != 410


async def deliver_one(rt: Runtime, owner: str, http: httpx.AsyncClient, message_id: str) -> str:
    """Attempt one claimed message and settle it: delivered | retry | failed | lost."""
    async with rt.db.session(write=False) as session:
        message = await session.get(WebhookMessage, message_id)
        endpoint = await session.get(WebhookEndpoint, message.endpoint_id) if message else None
        event = await session.get(Event, message.event_id) if message else None
    if message is None or message.lease_owner != owner or endpoint is None or event is None:
        return "lost"
    started = time.monotonic()
    if not endpoint.enabled:
        code, error, retryable = None, "the endpoint is disabled", False
    else:
        code, error, retryable = await _attempt(rt, http, endpoint, message, event)
    duration = int((time.monotonic() - started) * 1000)
    now = rt.clock.now()
    if error is None:
        outcome, values = "delivered", {"status": "delivered", "delivered_at": now, "last_status_code": code,
                                        "last_error": None}
    elif retryable and not RETRY.exhausted(message.attempts):
        outcome, values = "retry", {"status": "pending", "next_attempt_at": now + RETRY.delay(message.attempts),
                                    "last_status_code": code, "last_error": error}
    else:
        outcome, values = "failed", {"status": "failed", "last_status_code": code, "last_error": error}
    async with rt.db.session(write=True) as session:
        connection = await session.connection()
        if not await MESSAGES.release(connection, owner, [message_id], now, values):
            return "lost"
        session.add(WebhookAttempt(id=new_id("wha"), endpoint_id=endpoint.id, message_id=message_id,
                                   status_code=code, error=error, duration_ms=duration, created_at=now))
        if outcome == "failed" and endpoint.enabled and (code == 410 or retryable):
            await _disable(session, now, endpoint.id, event,
                           "the endpoint answered 410 Gone" if code == 410 else
                           f"deliveries failed for {message.attempts} attempts over a day ({error})")
    count_delivery("webhook", {"delivered": "sent"}.get(outcome, outcome))
    if outcome != "delivered":
        log.info("webhook message %s to endpoint %s: %s (%s)", message_id, endpoint.id, outcome, error)
    return outcome


async def _disable(session: Any, now: datetime, endpoint_id: str, event: Event, reason: str) -> None:
    endpoint = await session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or not endpoint.enabled:
        return
    endpoint.enabled, endpoint.disabled_reason, endpoint.updated_at = False, reason[:300], now
    brand = await session.get(Brand, event.brand_id) if event.brand_id else None
    brand = brand or (await session.exec(select(Brand).where(Brand.workspace_id == endpoint.workspace_id)
                                         .order_by(col(Brand.created_at)).limit(1))).first()
    if brand is not None:  # an in-app notification (and email, per preference) to the workspace admins
        await notify.notify(session, now, brand, "webhook_endpoint_disabled", "integration_refresh",
                            "Webhook endpoint disabled",
                            f"Deliveries to the webhook endpoint {endpoint.id} stopped: {reason}. Fix the receiver, "
                            "then enable it again and resend what it missed from its delivery log.",
                            audience="admins", dedupe_key=f"webhook_disabled:{endpoint.id}",
                            link=f"{notify.CONSOLE}/webhooks/{endpoint.id}")


async def deliver_webhooks(rt: Runtime, owner: str) -> int:
    """Tick: attempt the due messages; how many."""
    if owner in rt.stopping:
        return 0
    now = rt.clock.now()
    if not await MESSAGES.any_due(rt.db, due(now)):
        return 0
    ids = await MESSAGES.claim(rt.db, due(now), now, owner, lease=LEASE, limit=BATCH)
    if not ids:
        return 0
    async with client(rt) as http:
        for message_id in ids:
            await deliver_one(rt, owner, http, message_id)
    return len(ids)


async def send_test(rt: Runtime, endpoint_id: str, workspace_id: str | None = None) -> dict[str, Any]:
    """Record a `webhook.test` event for one endpoint and deliver it now (the CLI's and console's Test)."""
    from tools.services import event_log as record

    now = rt.clock.now()
    async with rt.db.session(write=True) as session:
        endpoint = await webhooks.get(session, endpoint_id, workspace_id)
        if not endpoint.enabled:
            raise webhooks.WebhookError("the endpoint is disabled: enable it first")
        event = record.add(session, now, TEST_TYPE, workspace_id=endpoint.workspace_id, brand_id=None,
                           subject_id=endpoint.id, data={"endpoint_id": endpoint.id})
        message = WebhookMessage(id=new_id("msg"), workspace_id=endpoint.workspace_id, endpoint_id=endpoint.id,
                                 event_id=event.id, event_type=TEST_TYPE, next_attempt_at=now, created_at=now,
                                 updated_at=now)
        event.fanned_out = True
        session.add(message)
    owner = f"test:{message.id}"
    claimed = await MESSAGES.claim(rt.db, MESSAGES.table.c.id == message.id, now, owner, lease=LEASE, limit=1)
    async with client(rt) as http:
        outcome = await deliver_one(rt, owner, http, claimed[0]) if claimed else "lost"
    async with rt.db.session(write=False) as session:
        settled = await session.get(WebhookMessage, message.id)
    assert settled is not None
    return {"message_id": message.id, "outcome": outcome, "status_code": settled.last_status_code,
            "error": settled.last_error}


TICKS = [fan_out, deliver_webhooks]
