"""Outbound webhooks against a real HTTP receiver on 127.0.0.1 that checks signatures with the standardwebhooks
library: every subscribed event arrives signed; a 500 then a 200 is the same webhook-id again; exhausted retries
disable the endpoint and tell the admins; private addresses are refused; a rotation keeps the old secret valid for
its overlap; secrets are shown once and never again."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta

import pytest
from sqlmodel import select
from standardwebhooks.webhooks import WebhookVerificationError

from providers import addresses
from storage.tables.events import Event, WebhookEndpoint, WebhookMessage
from storage.tables.notifications import Notification
from tests.events.receiver import Receiver
from tests.publishing.support import seed_post, seed_schedule, set_provider_state
from tools.events import webhook_delivery, webhooks
from tools.notifications import notify
from tools.operator import actions as operator
from tools.publishing import worker as publishing
from tools.services import event_log as record
from tools.services.event_log import EVENT_TYPES

pytestmark = pytest.mark.anyio


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def allow_loopback(env) -> None:
    env.rt.settings.fetch_allow_hosts = ("127.0.0.1",)


async def endpoint(env, ws, url: str, types=("all",), brands=None) -> tuple[WebhookEndpoint, str]:
    async with env.db.session(write=True) as s:
        return await webhooks.create(s, env.clock.now(), env.rt.settings, ws.id, url, list(types), brands)


async def drain(env, owner: str = "w1") -> None:
    await webhook_delivery.fan_out(env.rt, owner)
    await webhook_delivery.deliver_webhooks(env.rt, owner)


async def messages(env) -> list[WebhookMessage]:
    async with env.db.session(write=False) as s:
        return list((await s.exec(select(WebhookMessage).order_by(WebhookMessage.id))).all())


async def publish(world, platforms, faults=None) -> str:
    env = world.env
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    ids = [world.integrations[p].id for p in platforms]
    async with env.db.session(write=True) as s:
        for p in platforms:
            await set_provider_state(s, world.integrations[p].id, {"faults": {"publish": (faults or {}).get(p)}}
                                     if (faults or {}).get(p) else {})
    sid = await seed_schedule(env.db, world.brand_a, item, ids, env.clock.now())
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    return sid


async def test_every_subscribed_event_arrives_signed(world, receiver, caplog) -> None:
    env = world.env
    allow_loopback(env)
    caplog.set_level(logging.DEBUG)
    everything, secret = await endpoint(env, world.ws, receiver.url)
    only_b, _ = await endpoint(env, world.ws, receiver.url + "?b", ["schedule.held"], [world.brand_b.id])

    await publish(world, ["facebook"])  # schedule.published
    await publish(world, ["facebook", "instagram"], {"instagram": "rejected"})  # partially_published
    await publish(world, ["instagram"], {"instagram": "rejected"})  # failed
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    held = await seed_schedule(env.db, world.brand_a, item, [world.integrations["facebook"].id], env.clock.now(),
                               approval_status="pending_review")  # schedule.held
    out = await env.call("approve_schedule", world.full_key, idempotency_key=str(uuid.uuid4()),
                         brand_id=world.brand_a.id, schedule_id=held, confirm_schedule_id=held)
    assert out.status == 200, out.body  # schedule.approved
    rejected = await seed_schedule(env.db, world.brand_a, item, [world.integrations["facebook"].id],
                                   env.clock.now(), approval_status="pending_review")
    out = await env.call("cancel_schedule", world.full_key, idempotency_key=str(uuid.uuid4()),
                         brand_id=world.brand_a.id, schedule_id=rejected, confirm_schedule_id=rejected)
    assert out.status == 200, out.body  # schedule.rejected
    async with env.db.session(write=True) as s:
        await operator.set_integration_status(s, env.clock.now(), world.integrations["x"].id, "needs_reauth")
        linkedin = await s.get(type(world.integrations["linkedin"]), world.integrations["linkedin"].id)
        await notify.integration_expiring(s, env.clock.now(), linkedin, env.clock.now() + timedelta(days=5))
        from tests.publishing.support import media_row
        ready, failed = media_row(world.brand_a, env.clock.now()), media_row(world.brand_a, env.clock.now())
        failed.status, failed.failure_code = "failed", "UNSUPPORTED_MEDIA"
        s.add_all([ready, failed])
        record.media(s, env.clock.now(), ready, "media.ready")
        record.media(s, env.clock.now(), failed, "media.failed")
    await drain(env)

    assert sorted(set(receiver.types())) == sorted(EVENT_TYPES)
    for got in receiver.received:
        body = got.verify(secret)  # the library's verification: signature, id and timestamp
        assert got.headers["content-type"] == "application/json"
        assert set(body) == {"type", "timestamp", "data"} and body["data"]["brand_id"] == world.brand_a.id
        if body["type"].startswith("schedule."):
            sid = body["data"]["schedule_id"]
            assert body["data"]["links"]["console"] == \
                f"http://testserver/console/brands/{world.brand_a.id}/schedules/{sid}"
    assert len({r.id for r in receiver.received}) == len(receiver.received)  # one webhook-id per message
    # the brand-B endpoint got nothing: every event was on brand A
    assert not [m for m in await messages(env) if m.endpoint_id == only_b.id]
    # no secret in a payload, a log line, or the public view of an endpoint
    bodies = b"".join(r.body for r in receiver.received).decode()
    assert secret not in bodies and secret not in caplog.text
    assert secret not in json.dumps(webhooks.public(everything), default=str)
    async with env.db.session(write=False) as s:
        stored = await s.get(WebhookEndpoint, everything.id)
    assert secret not in stored.secret  # sealed by the vault


async def test_500_then_200_is_the_same_webhook_id_and_resend_repeats_it(world, receiver) -> None:
    env = world.env
    allow_loopback(env)
    receiver.script = [500]
    ep, secret = await endpoint(env, world.ws, receiver.url, ["schedule.published"])
    await publish(world, ["facebook"])
    await drain(env)
    [message] = await messages(env)
    assert message.status == "pending" and message.last_status_code == 500
    assert message.next_attempt_at == env.clock.now() + timedelta(seconds=30)
    await drain(env)  # not due yet
    assert len(receiver.received) == 1
    env.clock.advance(seconds=30)
    await drain(env)
    first, second = receiver.received
    assert first.id == second.id == message.id
    second.verify(secret)
    async with env.db.session(write=False) as s:
        [entry] = await webhooks.delivery_log(s, ep.id)
    assert entry["status"] == "delivered" and [a["status_code"] for a in entry["log"]] == [500, 200]
    async with env.db.session(write=True) as s:
        await webhooks.resend(s, env.clock.now(), message.id)
    await drain(env)
    assert [r.id for r in receiver.received] == [message.id] * 3
    # /metrics counts deliveries, retries and failures per channel
    metrics = (await env.rest.get("/metrics")).text
    for outcome in ("sent", "retry"):
        assert f'socialpub_event_deliveries_total{{channel="webhook",outcome="{outcome}"}}' in metrics


async def test_persistent_failure_disables_the_endpoint_and_notifies_admins(world, receiver) -> None:
    env = world.env
    allow_loopback(env)
    receiver.default = 503
    member = env.key_row(await env.key(world.ws, scopes=["brands:read"], name="member")).user_id
    ep, _ = await endpoint(env, world.ws, receiver.url, ["schedule.published"])
    await publish(world, ["facebook"])
    started = env.clock.now()
    for _ in range(webhook_delivery.RETRY.max_attempts):
        await drain(env)
        [message] = await messages(env)
        if message.status != "pending":
            break
        env.clock.advance(seconds=(message.next_attempt_at - env.clock.now()).total_seconds())
    else:
        raise AssertionError("the message was still pending after every attempt")
    assert message.status == "failed" and message.attempts == webhook_delivery.RETRY.max_attempts
    assert env.clock.now() - started >= timedelta(hours=24)  # retried for at least a day
    async with env.db.session(write=False) as s:
        row = await s.get(WebhookEndpoint, ep.id)
        notes = (await s.exec(select(Notification).where(Notification.type == "webhook_endpoint_disabled"))).all()
    assert row.enabled is False and "503" in row.disabled_reason
    admins = {env.key_row(k).user_id for k in (world.full_key, world.key_b_only)}
    assert {n.user_id for n in notes} == admins and member not in admins  # admins only
    # a disabled endpoint gets no new messages
    await publish(world, ["facebook"])
    await webhook_delivery.fan_out(env.rt, "w1")
    assert len(await messages(env)) == 1


async def test_private_addresses_are_refused(world, dialled, monkeypatch) -> None:
    env = world.env
    for url in ("http://10.0.0.7/hook", "http://192.168.1.20/hook", "http://169.254.169.254/latest",
                "http://localhost:8080/x", "http://[::1]/x"):
        with pytest.raises(webhooks.WebhookError, match="refused"):
            await endpoint(env, world.ws, url)
    # a name that resolves to a private address is refused when it connects, and never dialled
    await endpoint(env, world.ws, "http://hooks.example.test/x", ["schedule.published"])

    async def private_answer(host: str, port: int) -> list[str]:
        return ["10.1.2.3"]

    monkeypatch.setattr(addresses, "resolve_host", private_answer)
    await publish(world, ["facebook"])
    await drain(env)
    [message] = await messages(env)
    assert message.status == "failed" and message.last_error is not None and "private" in message.last_error
    assert not [d for d in dialled if "10.1.2.3" in d]


async def test_rotation_keeps_the_old_secret_valid_for_the_overlap(world, receiver) -> None:
    env = world.env
    allow_loopback(env)
    ep, old = await endpoint(env, world.ws, receiver.url, ["schedule.published"])
    async with env.db.session(write=True) as s:
        _, new = await webhooks.rotate_secret(s, env.clock.now(), env.rt.settings, ep.id)
    assert new != old and new.startswith("whsec_")
    await publish(world, ["facebook"])
    await drain(env)
    [during] = receiver.received
    assert len(during.headers["webhook-signature"].split(" ")) == 2
    during.verify(old)
    during.verify(new)
    env.clock.advance(hours=webhooks.ROTATION_OVERLAP.total_seconds() / 3600 + 1)
    await publish(world, ["facebook"])
    await drain(env)
    after = receiver.received[-1]
    after.verify(new)
    with pytest.raises(WebhookVerificationError):
        after.verify(old)


async def test_event_is_written_with_the_state_change(world) -> None:
    """No endpoint yet, a crash after the commit: the event is in the log all the same, and a later fan-out
    (here, after an endpoint is created) still finds it."""
    env = world.env
    sid = await publish(world, ["facebook"])
    async with env.db.session(write=False) as s:
        [event] = (await s.exec(select(Event).where(Event.subject_id == sid))).all()
    assert event.type == "schedule.published" and event.fanned_out is False


async def test_retention_removes_old_delivery_logs_children_first(world, receiver) -> None:
    from tools import retention

    env = world.env
    allow_loopback(env)
    await endpoint(env, world.ws, receiver.url, ["schedule.published"])
    await publish(world, ["facebook"])
    await drain(env)
    assert [m.status for m in await messages(env)] == ["delivered"]
    env.clock.advance(days=retention.EVENT_DAYS - 1)
    swept = await retention.sweep(env.rt)
    assert swept["webhook_messages"] == swept["events"] == 0  # not old enough
    env.clock.advance(days=2)
    swept = await retention.sweep(env.rt)
    assert swept["webhook_attempts"] == 1 and swept["webhook_messages"] == 1 and swept["events"] >= 1
    assert await messages(env) == []
