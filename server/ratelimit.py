"""Per-key token buckets, in memory (per process; each replica enforces its own budget)."""

from __future__ import annotations

import time
from collections.abc import Callable

_MAX_BUCKETS = 100_000  # bound memory: idle buckets are dropped first


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

    def _prune(self, now: float) -> None:
        full_after = self.capacity / self.rate if self.rate else 0
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}
