"""REST benchmark: `GET /v1/context` through the real stack, as a ratio to a bare Starlette route.

Running this script runs `bench/rest_cpu.py --scenarios context` (load from wrk, server CPU per request);
the functions below are the older httpx-client measurement, kept for bench/ratelimit.py. In them, both servers are uvicorn on 127.0.0.1 (ephemeral ports) with the same settings, each in its own process, and
are measured by the same httpx client in the same run: N requests with C in flight. The bare route is the
floor (what uvicorn + Starlette cost with no work); the ratio is what the service core costs on top
(authentication, rate limiter, dispatch, one read transaction, envelope). It also prints each server's CPU
time per request (Linux), which a slow client or a busy machine does not distort. Asserts nothing.

    python bench/rest_context.py [--duration 5] [--rounds 2]
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def uvicorn_config(app):
    import uvicorn

    # One definition of the server settings, used by both servers.
    return uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="on")





async def seed(db_url: str) -> str:
    from storage.db import Database
    from storage.migrate import upgrade
    from tools.operator import demo
    db = Database(db_url)
    await upgrade(db)
    from schemas.time import SystemClock

    async with db.session(write=True) as s:
        demo = await demo.seed_demo(s, SystemClock().now())
    await db.dispose()
    return demo["secret"]



def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc); None where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


async def measure(base: str, headers: dict[str, str], requests: int, concurrency: int,
                  pid: int) -> tuple[float, float | None]:
    """Throughput (req/s) and the server's CPU milliseconds per request over the timed phase."""
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=30) as client:
        async def worker(count: int) -> None:
            for _ in range(count):
                resp = await client.get("/v1/context")
                if resp.status_code != 200:
                    raise SystemExit(f"{base}: status {resp.status_code}: {resp.text[:200]}")

        await asyncio.gather(*(worker(20) for _ in range(concurrency)))  # warm-up: connections, caches
        share = [requests // concurrency + (1 if n < requests % concurrency else 0) for n in range(concurrency)]
        cpu_before, started = cpu_seconds(pid), time.perf_counter()
        await asyncio.gather(*(worker(n) for n in share))
        elapsed, cpu_after = time.perf_counter() - started, cpu_seconds(pid)
        cpu_ms = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1000 / requests
        return requests / elapsed, cpu_ms


def main() -> None:
    """`GET /v1/context` as `bench/rest_cpu.py` measures it (wrk load, server CPU per request): an httpx client
    in Python was slower than either server, so its throughput ratio measured the client. The helpers above stay
    for bench/ratelimit.py, which compares servers of the same app with each other."""
    sys.path.insert(0, str(ROOT / "bench"))
    import rest_cpu

    sys.argv = [sys.argv[0], "--scenarios", "context", *sys.argv[1:]]
    rest_cpu.main()


if __name__ == "__main__":
    main()
