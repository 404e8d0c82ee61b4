"""Per-key rate limits: 429 RATE_LIMITED with Retry-After and retryable true."""

from __future__ import annotations

import pytest

from server.ratelimit import RateLimiter

pytestmark = pytest.mark.anyio


async def test_over_budget_is_429_with_retry_after(env_factory) -> None:
    async with env_factory(rate_limit_requests=2, rate_limit_window=60) as env:
        ws = await env.workspace()
        key, other = await env.key(ws, name="k"), await env.key(ws, name="other")
        for _ in range(2):
            assert (await env.rest.get("/v1/context", headers=env.auth(key))).status_code == 200
        resp = await env.rest.get("/v1/context", headers=env.auth(key))
        assert resp.status_code == 429
        err = resp.json()["error"]
        assert err["code"] == "RATE_LIMITED" and err["retryable"] is True and err["status"] == 429
        assert int(resp.headers["retry-after"]) >= 1
        assert err["next_action"] == "wait_and_retry"
        # budgets are per key
        assert (await env.rest.get("/v1/context", headers=env.auth(other))).status_code == 200


def test_bucket_refills() -> None:
    now = [0.0]
    limiter = RateLimiter(2, 10, clock=lambda: now[0])
    assert limiter.check("a") is None and limiter.check("a") is None
    wait = limiter.check("a")
    assert wait == pytest.approx(5.0)
    now[0] = 5.0
    assert limiter.check("a") is None


def test_zero_disables() -> None:
    limiter = RateLimiter(0, 60)
    assert all(limiter.check("a") is None for _ in range(1000))
