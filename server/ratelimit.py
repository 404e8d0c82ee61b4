"""Per-key token buckets, in memory (per process; each replica enforces its own budget)."""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.responses import Response

_MAX_BUCKETS = 100_000  # bound memory: idle buckets are dropped first


def retry_after(wait: float) -> int:
    """Whole seconds for a Retry-After header: never 0, never early."""
    return max(1, int(wait + 0.999))


class RateLimiter:
    def __init__(self, requests: int, window: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(requests)
        self.rate = requests / window if window > 0 else 0.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # bucket -> (tokens, last refill time)

    def check(self, bucket: str) -> float | None:
        """Take one token; None when allowed, else seconds until the next token."""
        if self.capacity <= 0:
            return None
        now = self.clock()
        tokens, last = self._buckets.get(bucket, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        if tokens < 1.0:
            self._buckets[bucket] = (tokens, now)
            return (1.0 - tokens) / self.rate
        if len(self._buckets) >= _MAX_BUCKETS and bucket not in self._buckets:
            self._prune(now)
        self._buckets[bucket] = (tokens - 1.0, now)
        return None

    def refusal(self, bucket: str) -> Response | None:
        """For public (keyless) pages: a plain 429 with Retry-After when `bucket` is over budget, else None."""
        wait = self.check(bucket)
        if wait is None:
            return None
        return Response("Too many requests.", status_code=429, media_type="text/plain",
                        headers={"Retry-After": str(retry_after(wait))})

    def _prune(self, now: float) -> None:
        full_after = self.capacity / self.rate if self.rate else 0
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}
