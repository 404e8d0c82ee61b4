"""The scratch service every benchmark measures: a migrated database (SQLite under `home` unless a URL is
given), a frozen clock, no rate limit and no in-process worker."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text

from schemas.settings import Settings
from schemas.time import FrozenClock
from server.dispatch import Dispatcher
from storage.db import Database
from storage.migrate import upgrade
from tools import catalogue
from tools.runtime import Runtime

START = "2026-01-05T09:00:00.000Z"


async def scratch_runtime(home: str | Path, url: str | None = None, start: str = START, *,
                          migrate: bool = True) -> Runtime:
    url = url or f"sqlite+aiosqlite:///{home}/bench.db"
    rt = Runtime(settings=Settings(home=Path(home), database_url=url, rate_limit_requests=0, worker_enabled=False),
                 db=Database(url), clock=FrozenClock(start))
    if migrate:
        await upgrade(rt.db)
    return rt


async def median_call(dispatcher: Dispatcher, token: str, calls: list[tuple[str, dict]], repeat: int) -> float:
    """Median seconds of one in-process dispatch of each (tool name, arguments) in `calls`, after one warm-up
    round whose answers must all be 200 (a bench that times errors measures nothing)."""
    eps = [(catalogue.get(name), args) for name, args in calls]
    for ep, args in eps:
        out = await dispatcher.invoke(ep, args, token=token)
        assert out.status == 200, out.body
    samples = []
    for _ in range(repeat):
        for ep, args in eps:
            t0 = time.perf_counter()
            out = await dispatcher.invoke(ep, args, token=token)
            samples.append(time.perf_counter() - t0)
            assert out.status == 200, out.body
    return statistics.median(samples)


async def server_cpu(db: Database) -> float:
    """CPU seconds spent so far by the PostgreSQL server processes of `db`'s database's connections (read from
    /proc: the server runs on this machine); 0 on SQLite, whose work is the calling process's own. A connection
    that closed takes its CPU with it, so measure while the connections of interest are open."""
    if db.is_sqlite:
        return 0.0
    async with db.read_engine.connect() as conn:
        pids = (await conn.execute(text(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"))).scalars().all()
    spent, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        spent += (int(fields[11]) + int(fields[12])) / tick
    return spent
