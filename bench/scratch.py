"""The scratch service every benchmark measures: a migrated database (SQLite under `home` unless a URL is
given), a frozen clock, no rate limit and no in-process worker."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.settings import Settings
from schemas.time import FrozenClock
from storage.db import Database
from storage.migrate import upgrade
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
