"""Retention: idempotency records expire after SOCIALPUB_IDEMPOTENCY_TTL (a replay after that is a new request),
the worker tick removes expired records, finished jobs and ended rate-limit counters in bounded batches."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlmodel import func, select

from schemas.ids import new_id
from server.worker import Worker, registry
from storage.tables.idempotency import IdempotencyRecord
from storage.tables.jobs import Job
from storage.tables.operations import RateLimitCounter
from tests.test_idempotency import brand_count, install_probe_endpoint
from tools import retention

pytestmark = pytest.mark.anyio


async def count(env, model, *where) -> int:
    async with env.db.session(write=False) as s:
        return (await s.exec(select(func.count()).select_from(model).where(*where))).one()


async def test_replay_within_ttl_then_new_request_after_expiry(world, monkeypatch) -> None:
    env = world.env
    assert env.rt.settings.idempotency_ttl == 24 * 3600  # the default window
    install_probe_endpoint(monkeypatch, env)
    h = {**env.auth(world.full_key), "Idempotency-Key": "ttl-key"}
    assert (await env.rest.post("/v1/probe", json={"name": "ttl"}, headers=h)).status_code == 201
    env.clock.advance(hours=23, minutes=59)
    again = await env.rest.post("/v1/probe", json={"name": "ttl"}, headers=h)
    assert again.status_code == 200 and again.headers["idempotency-replayed"] == "true"
    assert await brand_count(env, "ttl") == 1
    # Past the window the key is forgotten even before the tick ran: the same request executes again ...
    env.clock.advance(minutes=2)
    fresh = await env.rest.post("/v1/probe", json={"name": "ttl"}, headers=h)
    assert fresh.status_code == 201 and "idempotency-replayed" not in fresh.headers
    assert await brand_count(env, "ttl") == 2
    # ... and its key is remembered again from now on (a different input under it is a conflict).
    assert (await env.rest.post("/v1/probe", json={"name": "other"}, headers=h)).status_code == 409
    assert await count(env, IdempotencyRecord) == 1


async def test_worker_tick_deletes_expired_rows_in_bounded_batches(world, monkeypatch) -> None:
    env = world.env
    assert retention.retention_tick in registry()[1]  # the worker runs it
    monkeypatch.setattr(retention, "BATCH", 3)
    now = env.clock.now()
    key_row = env.key_row(world.full_key)
    async with env.db.session(write=True) as s:
        for n in range(5):
            s.add(IdempotencyRecord(id=new_id("idm"), api_key_id=key_row.id, endpoint="create_probe", key=f"old{n}",
                                    request_hash="0" * 64, created_at=now - timedelta(hours=25)))
        s.add(IdempotencyRecord(id=new_id("idm"), api_key_id=key_row.id, endpoint="create_probe", key="young",
                                request_hash="0" * 64, created_at=now - timedelta(hours=1)))
        for status, age in (("done", 8), ("done", 1), ("failed", 8), ("failed", 31), ("queued", 60)):
            s.add(Job(id=new_id("job"), kind="test.kind", payload={}, status=status, run_at=now - timedelta(days=age),
                      created_at=now, updated_at=now))
        s.add(RateLimitCounter(key="ended", count=3, expires_at=time.time() - 5))
        s.add(RateLimitCounter(key="running", count=3, expires_at=time.time() + 60))
    first = await retention.sweep(env.rt)
    assert first == {"idempotency_records": 3, "jobs_done": 1, "jobs_failed": 1, "rate_limit_counters": 1,
                     "oauth_spent_tokens": 0,  # (tests/console/test_oauth_rfcs.py sweeps those)
                     "webhook_attempts": 0, "webhook_messages": 0, "events": 0,
                     "email_outbox": 0}  # (tests/events/test_webhooks.py sweeps those)
    await Worker(env.rt).run_once()  # the tick takes the next batch
    assert await count(env, IdempotencyRecord) == 1
    assert await count(env, IdempotencyRecord, IdempotencyRecord.key == "young") == 1
    assert await count(env, Job) == 3  # recent done, recent failed, the queued one
    assert await count(env, RateLimitCounter) == 1
    assert await retention.sweep(env.rt) == dict.fromkeys(first, 0)
