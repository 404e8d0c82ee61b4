"""What the shared rate limiter costs: `GET /v1/context` throughput with the API budget counted in Redis
(and, with --postgres URL, in the PostgreSQL database) as a ratio to the same service counting in memory.

Each server is uvicorn on 127.0.0.1 in its own process with one database (SQLite unless --postgres), a
budget far above what the run sends (nothing is refused: every request pays for one counter update), and the
same httpx client measures them alternately in the same run, best of `--rounds`. The in-memory limiter is the
floor; the goal is a ratio of at least 0.90 (the shared limiter costs at most 10 %). Asserts nothing.

    python bench/ratelimit.py [--requests 1000] [--concurrency 16] [--rounds 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "bench"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from rest_context import measure, seed, uvicorn_config  # noqa: E402  (same client and server settings)

BUDGET = 10**9  # requests per window: never reached, so every request is counted and none refused
REDIS = "redis://127.0.0.1:6379"


async def serve(storage: str, db_url: str, home: str) -> None:
    import uvicorn

    from schemas.settings import Settings
    from server.app import build_app
    from tools.runtime import Runtime

    settings = Settings(home=Path(home), database_url=db_url, rate_limit_requests=BUDGET, rate_limit_window=60,
                        rate_limit_storage=storage, worker_enabled=False)
    server = uvicorn.Server(uvicorn_config(build_app(Runtime.from_settings(settings), run_worker=False)))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    print(f"PORT {server.servers[0].sockets[0].getsockname()[1]}", flush=True)
    await task


def start(storage: str, db_url: str, home: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", storage, "--db", db_url, "--home", home],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"server with {storage} limits did not start")
    return proc, f"http://127.0.0.1:{line.split()[1]}"


def scratch_database(base_url: str, drop: str | None = None) -> str:
    """A private database next to `base_url` (created, or dropped when `drop` names it): never the base one."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    url = make_url(base_url)
    name = drop or f"sp_bench_{os.getpid()}"

    async def go() -> None:
        admin = create_async_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' if drop
                                    else f'CREATE DATABASE "{name}"'))
        await admin.dispose()

    asyncio.run(go())
    return url.set(database=name).render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", help="postgresql+asyncpg://... : also measure database-backed limits")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.db, args.home))
        return

    pg_url = scratch_database(args.postgres) if args.postgres else None
    with tempfile.TemporaryDirectory(prefix="socialpub-bench-") as home:
        db_url = pg_url or f"sqlite+aiosqlite:///{home}/bench.db"
        secret = asyncio.run(seed(db_url))
        kinds = ["memory", REDIS, *(["database"] if args.postgres else [])]
        procs = {}
        best = dict.fromkeys(kinds, 0.0)
        cpu: dict[str, float] = {}
        try:
            for kind in kinds:
                procs[kind] = start(kind, db_url, home)
            for _ in range(args.rounds):
                for kind in kinds:
                    proc, base = procs[kind]
                    rate, cpu_ms = asyncio.run(measure(base, {"Authorization": f"Bearer {secret}"},
                                                       args.requests, args.concurrency, proc.pid))
                    best[kind] = max(best[kind], rate)
                    if cpu_ms is not None:
                        cpu[kind] = min(cpu.get(kind, cpu_ms), cpu_ms)
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=10)
            if pg_url:
                scratch_database(args.postgres, drop=pg_url.rsplit("/", 1)[1])
    print(f"requests={args.requests} concurrency={args.concurrency} rounds={args.rounds} "
          f"database={'postgresql' if args.postgres else 'sqlite'} (best of rounds)")
    for kind in kinds:
        line = f"limits in {kind:24} {best[kind]:9.1f} req/s   ratio to memory {best[kind] / best['memory']:.3f}"
        if kind in cpu and "memory" in cpu:
            line += f"   server CPU {cpu[kind]:.2f} ms/request (memory/this {cpu['memory'] / cpu[kind]:.3f})"
        print(line)
    print(f"ratio redis/memory (goal >= 0.90): {best[REDIS] / best['memory']:.3f}")


if __name__ == "__main__":
    main()
