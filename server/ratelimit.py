"""Rate limits.

`SharedLimiter` holds the per-key (and per-IP, for keyless endpoints) API budget: `rate_limit_requests` per
`rate_limit_window` seconds, counted by the `limits` library in fixed windows, in the storage
`SOCIALPUB_RATE_LIMIT_STORAGE` names: `memory` (this process: the default for one machine), `redis://host:port`
(every replica shares the counters), or `database` (a counter row per key in the service's PostgreSQL, with one
atomic upsert per request: no extra component, see docs/decisions.md). `RateLimiter` below is the small
in-process token bucket that still guards the public HTML pages (bio, claim) per client address.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from limits import RateLimitItemPerSecond
from limits.aio.storage import Storage
from limits.aio.strategies import FixedWindowRateLimiter
from limits.storage import storage_from_string
from sqlalchemy import Table, case, delete, select
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.responses import Response

from storage.db import Database

log = logging.getLogger("socialpub.ratelimit")

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

    def refund(self, bucket: str) -> None:
        """Give back a token `check` took (the attempt turned out not to count, e.g. a right password)."""
        if bucket in self._buckets and self.rate:
            now = self.clock()
            tokens, last = self._buckets[bucket]
            self._buckets[bucket] = (min(self.capacity, tokens + (now - last) * self.rate + 1.0), now)

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


class MemoryCounters(Storage):
    """`limits` fixed-window counters in this process, without `limits.aio`'s MemoryStorage cost: that storage
    starts an asyncio task on every hit to sweep expired keys (and keeps a lock per key), a per-request constant
    of every REST call. Here a counter restarts when its window has passed (the same fixed windows: a window
    opens at its key's first hit) and expired keys are swept whenever the table has doubled since the last
    sweep, so memory stays bounded by the live keys. `bump` is the synchronous hit `SharedLimiter` uses."""

    STORAGE_SCHEME = None

    def __init__(self) -> None:
        super().__init__()
        self._counters: dict[str, list[float]] = {}  # key -> [count, expires at (time.time())]
        self._sweep_at = 1024

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    def bump(self, key: str, expiry: float, amount: int = 1) -> int:
        now = time.time()
        entry = self._counters.get(key)
        if entry is None or entry[1] <= now:
            if entry is None and len(self._counters) >= self._sweep_at:
                self._sweep(now)
            self._counters[key] = [amount, now + expiry]
            return amount
        entry[0] += amount
        return int(entry[0])

    def _sweep(self, now: float) -> None:
        self._counters = {k: v for k, v in self._counters.items() if v[1] > now}
        self._sweep_at = max(1024, 2 * len(self._counters))

    def _live(self, key: str) -> list[float] | None:
        entry = self._counters.get(key)
        return entry if entry is not None and entry[1] > time.time() else None

    async def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        return self.bump(key, expiry, amount)

    async def get(self, key: str) -> int:
        entry = self._live(key)
        return int(entry[0]) if entry else 0

    async def get_expiry(self, key: str) -> float:
        entry = self._live(key)
        return entry[1] if entry else time.time()

    async def check(self) -> bool:
        return True

    async def reset(self) -> int | None:
        count = len(self._counters)
        self._counters.clear()
        return count

    async def clear(self, key: str) -> None:
        self._counters.pop(key, None)


class DatabaseStorage(Storage):
    """`limits` storage on the service's own database: one row per limit key, bumped by an atomic
    INSERT .. ON CONFLICT DO UPDATE .. RETURNING, which restarts the window when the row has expired. `limits`
    ships no async PostgreSQL storage; expired rows are removed by the retention tick (tools/retention.py)."""

    STORAGE_SCHEME = None

    def __init__(self, db: Database) -> None:
        super().__init__()
        # Its own small pool: a request holds a connection of the main pool while it is counted, so counting
        # from that pool too would deadlock once every connection waits for a second one.
        self.engine = create_async_engine(db.url, pool_size=5, max_overflow=5, pool_timeout=5, pool_pre_ping=True)
        if db.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:
            from sqlalchemy.dialects.sqlite import insert
        self._insert = insert
        # Imported here: only this storage uses the table, and every process with a dispatcher imports this module.
        from storage.tables.operations import RateLimitCounter

        self.table: Table = RateLimitCounter.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return Exception

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now, table = time.time(), self.table
        expired = table.c.expires_at <= now
        stmt = self._insert(table).values(key=key, count=amount, expires_at=now + expiry)
        stmt = stmt.on_conflict_do_update(index_elements=[table.c.key], set_={
            "count": case((expired, amount), else_=table.c.count + amount),
            "expires_at": case((expired, now + expiry), else_=table.c.expires_at),
        }).returning(table.c.count)
        async with self.engine.begin() as conn:
            return int((await conn.execute(stmt)).scalar_one())

    async def _row(self, key: str) -> tuple[int, float] | None:
        table = self.table
        async with self.engine.connect() as conn:
            row = (await conn.execute(select(table.c.count, table.c.expires_at).where(table.c.key == key))).first()
        return (int(row[0]), float(row[1])) if row and row[1] > time.time() else None

    async def get(self, key: str) -> int:
        row = await self._row(key)
        return row[0] if row else 0

    async def get_expiry(self, key: str) -> float:
        row = await self._row(key)
        return row[1] if row else time.time()

    async def check(self) -> bool:
        try:
            async with self.engine.connect() as conn:
                await conn.execute(select(1))
            return True
        except Exception:
            return False

    async def reset(self) -> int | None:
        async with self.engine.begin() as conn:
            return (await conn.execute(delete(self.table))).rowcount

    async def aclose(self) -> None:
        await self.engine.dispose()

    async def clear(self, key: str) -> None:
        async with self.engine.begin() as conn:
            await conn.execute(delete(self.table).where(self.table.c.key == key))


class RateLimitConfigError(ValueError):
    """SOCIALPUB_RATE_LIMIT_STORAGE names something this service cannot use."""


def storage_for(spec: str, db: Database) -> Storage:
    spec = (spec or "memory").strip()
    if spec == "memory":
        return MemoryCounters()
    if spec == "database":
        if db.is_sqlite:
            raise RateLimitConfigError(
                "SOCIALPUB_RATE_LIMIT_STORAGE=database needs PostgreSQL (on SQLite every request would queue on the "
                "single writer); use memory on one machine.")
        return DatabaseStorage(db)
    if spec.startswith(("redis://", "rediss://")):
        found = storage_from_string(f"async+{spec}")
        assert isinstance(found, Storage)  # an async+ URL makes limits' async storage
        return found
    raise RateLimitConfigError(f"SOCIALPUB_RATE_LIMIT_STORAGE must be memory, database or redis://host:port, "
                               f"not {spec[:60]!r}.")


class SharedLimiter:
    """The API budget, counted where the settings say. `check` answers None (allowed) or the seconds to wait.

    If the storage fails (Redis or the database unreachable) the request is allowed and a warning logged:
    a limiter outage must not become an API outage."""

    def __init__(self, requests: int, window: float, storage: Storage) -> None:
        self.item = RateLimitItemPerSecond(requests, max(1, math.ceil(window))) if requests > 0 else None
        self.storage = storage
        self.strategy = FixedWindowRateLimiter(storage)
        # In memory a hit is a dict update: counted without the strategy's and the storage's coroutine layers.
        self._bump = storage.bump if isinstance(storage, MemoryCounters) else None
        self._warned = 0.0

    @classmethod
    def from_settings(cls, settings: Any, db: Database) -> SharedLimiter:
        return cls(settings.rate_limit_requests, settings.rate_limit_window,
                   storage_for(settings.rate_limit_storage, db))

    async def check(self, bucket: str) -> float | None:
        if self.item is None:
            return None
        if self._bump is not None:
            key = self.item.key_for(bucket)
            if self._bump(key, self.item.get_expiry()) <= self.item.amount:
                return None
            return max(0.001, await self.storage.get_expiry(key) - time.time())
        try:
            if await self.strategy.hit(self.item, bucket):
                return None
            reset = (await self.strategy.get_window_stats(self.item, bucket)).reset_time
        except Exception as exc:
            if time.monotonic() - self._warned > 60:
                self._warned = time.monotonic()
                log.warning("rate-limit storage unavailable (%s); allowing requests", type(exc).__name__)
            return None
        return max(0.001, reset - time.time())

    async def aclose(self) -> None:
        close = getattr(self.storage, "aclose", None)
        if close is not None:
            await close()
