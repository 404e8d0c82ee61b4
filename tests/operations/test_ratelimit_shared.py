"""Shared rate limits: two replicas (two dispatchers, two apps) counting one key's budget in Redis or in the
PostgreSQL database, the same 429 envelope with Retry-After, and a limiter outage that allows requests."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest

from server.app import build_app
from server.dispatch import Dispatcher
from server.ratelimit import RateLimitConfigError, storage_for
from tools.runtime import Runtime

pytestmark = pytest.mark.anyio
REDIS = ("127.0.0.1", 6379)


def redis_up() -> bool:
    try:
        socket.create_connection(REDIS, timeout=1).close()
        return True
    except OSError:
        return False


@contextlib.asynccontextmanager
async def replica(env, **settings) -> AsyncIterator[httpx.AsyncClient]:
    rt = Runtime(settings=env.rt.settings.model_copy(update=settings), db=env.db, clock=env.clock)
    dispatcher = Dispatcher(rt)
    app = build_app(rt, run_worker=False, dispatcher=dispatcher)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver") as c:
            yield c
    finally:
        await dispatcher.limiter.aclose()


@pytest.mark.parametrize("storage", ["redis", "database"])
async def test_budget_is_shared_across_replicas(env, storage) -> None:
    if storage == "redis":
        if not redis_up():
            pytest.skip("Redis is not reachable at 127.0.0.1:6379")
        spec = "redis://127.0.0.1:6379"
    else:
        if env.backend != "postgres":
            pytest.skip("database-backed limits run on PostgreSQL (SQLite refuses them; see the next test)")
        spec = "database"
    ws = await env.workspace()
    key = await env.key(ws, name="shared")
    budget = 5
    settings = {"rate_limit_requests": budget, "rate_limit_window": 60, "rate_limit_storage": spec}
    async with replica(env, **settings) as one, replica(env, **settings) as two:
        statuses = [(await (one if n % 2 else two).get("/v1/context", headers=env.auth(key))).status_code
                    for n in range(budget)]
        assert statuses == [200] * budget
        refused = await one.get("/v1/context", headers=env.auth(key))
        assert refused.status_code == 429
        assert (await two.get("/v1/context", headers=env.auth(key))).status_code == 429
        err = refused.json()["error"]
        assert err["code"] == "RATE_LIMITED" and err["retryable"] is True
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert err["details"]["retry_after_seconds"] == int(refused.headers["retry-after"])
        # many requests in flight at once (more than the database pool holds) neither deadlock nor fail
        crowd = await env.key(ws, name="crowd")
        results: list[int] = []
        async with anyio.create_task_group() as tg:

            async def hit(client) -> None:
                results.append((await client.get("/v1/context", headers=env.auth(crowd))).status_code)

            for n in range(24):
                tg.start_soon(hit, one if n % 2 else two)
        assert sorted(results) == [200] * budget + [429] * (24 - budget)
        # another key has its own budget
        other = await env.key(ws, name="other")
        assert (await two.get("/v1/context", headers=env.auth(other))).status_code == 200


async def test_database_limits_refused_on_sqlite(sqlite_env) -> None:
    with pytest.raises(RateLimitConfigError, match="PostgreSQL"):
        storage_for("database", sqlite_env.db)
    with pytest.raises(RateLimitConfigError, match="memory, database or redis"):
        storage_for("memcached://x", sqlite_env.db)


async def test_unreachable_storage_allows_requests(sqlite_env) -> None:
    env = sqlite_env
    ws = await env.workspace()
    key = await env.key(ws, name="k")
    async with replica(env, rate_limit_requests=1, rate_limit_window=60,
                       rate_limit_storage="redis://127.0.0.1:1") as one:
        for _ in range(3):
            assert (await one.get("/v1/context", headers=env.auth(key))).status_code == 200


async def test_memory_counters_keep_fixed_windows_and_stay_bounded(monkeypatch) -> None:
    """The in-process storage (no task per hit): a window opens at a key's first hit, refuses past the budget
    until it has passed, then starts again; expired keys are swept once the table has doubled."""
    import server.ratelimit as ratelimit

    clock = [1000.0]
    monkeypatch.setattr(ratelimit.time, "time", lambda: clock[0])
    storage = ratelimit.MemoryCounters()
    limiter = ratelimit.SharedLimiter(3, 10, storage)
    assert [await limiter.check("key:a") for _ in range(3)] == [None, None, None]
    clock[0] += 4
    assert await limiter.check("key:a") == pytest.approx(6)  # wait until the window opened at 1000 ends
    assert await limiter.check("key:b") is None  # another bucket, its own window
    assert limiter.item is not None
    key = limiter.item.key_for("key:a")
    assert (await storage.get(key), await storage.get_expiry(key)) == (4, 1010.0)
    clock[0] += 6
    assert await storage.get(key) == 0
    assert await limiter.check("key:a") is None  # a new window
    assert await storage.get_expiry(key) == 1020.0
    for n in range(3000):
        storage.bump(f"k{n}", 1)
    clock[0] += 2
    storage.bump("fresh", 1)
    assert len(storage._counters) == 3000 + 1 + 2  # all still live or not yet swept
    for n in range(2000):
        storage.bump(f"late{n}", 1)
    assert "k0" not in storage._counters and "fresh" in storage._counters
    assert len(storage._counters) < 3000  # the expired keys went in that sweep
    await storage.clear("fresh")
    assert await storage.get("fresh") == 0
    live = len(storage._counters)
    assert await storage.reset() == live and not storage._counters
