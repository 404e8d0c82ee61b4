"""REST benchmark: `GET /v1/context` through the real stack, as a ratio to a bare Starlette route.

Both servers are uvicorn on 127.0.0.1 (ephemeral ports) with the same settings, each in its own process, and
are measured by the same httpx client in the same run: N requests with C in flight. The bare route is the
floor (what uvicorn + Starlette cost with no work); the ratio is what the service core costs on top
(authentication, rate limiter, dispatch, one read transaction, envelope). It also prints each server's CPU
time per request (Linux), which a slow client or a busy machine does not distort. Asserts nothing.

    python bench/rest_context.py [--requests 1000] [--concurrency 16] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def uvicorn_config(app):
    import uvicorn

    # One definition of the server settings, used by both servers.
    return uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="on")


def bare_app():
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def context(request):
        return JSONResponse({"success": True, "data": {"ok": True}, "meta": {"request_id": "req_bare"}})

    return Starlette(routes=[Route("/v1/context", context, methods=["GET"])])


def service_app(db_url: str, home: str):
    from schemas.settings import Settings
    from server.app import build_app
    from tools.runtime import Runtime

    settings = Settings(home=Path(home), database_url=db_url, rate_limit_requests=0, worker_enabled=False)
    return build_app(Runtime.from_settings(settings), run_worker=False)


async def serve(kind: str, db_url: str, home: str) -> None:
    import uvicorn

    app = bare_app() if kind == "bare" else service_app(db_url, home)
    server = uvicorn.Server(uvicorn_config(app))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    print(f"PORT {server.servers[0].sockets[0].getsockname()[1]}", flush=True)
    await task


async def seed(db_url: str) -> str:
    from storage.db import Database
    from storage.migrate import upgrade
    from tools.operator import actions as operator
    db = Database(db_url)
    await upgrade(db)
    from schemas.time import SystemClock

    async with db.session(write=True) as s:
        demo = await operator.seed_demo(s, SystemClock().now())
    await db.dispose()
    return demo["secret"]


def start(kind: str, db_url: str, home: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", kind, "--db", db_url, "--home", home],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"{kind} server did not start")
    return proc, f"http://127.0.0.1:{line.split()[1]}"


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="alternate the servers this many times; best of each")
    parser.add_argument("--serve", choices=["bare", "context"], help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve, args.db, args.home))
        return

    with tempfile.TemporaryDirectory(prefix="socialpub-bench-") as home:
        db_url = f"sqlite+aiosqlite:///{home}/bench.db"
        secret = asyncio.run(seed(db_url))
        procs = {}
        try:
            for kind in ("bare", "context"):
                procs[kind] = start(kind, db_url, home)
            best = {"bare": 0.0, "context": 0.0}
            cpu: dict[str, float | None] = {"bare": None, "context": None}
            for _ in range(args.rounds):
                for kind in ("bare", "context"):
                    proc, base = procs[kind]
                    rate, cpu_ms = asyncio.run(measure(base, {"Authorization": f"Bearer {secret}"},
                                                       args.requests, args.concurrency, proc.pid))
                    best[kind] = max(best[kind], rate)
                    if cpu_ms is not None:
                        cpu[kind] = cpu_ms if cpu[kind] is None else min(cpu[kind], cpu_ms)
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=10)
    print(f"requests={args.requests} concurrency={args.concurrency} rounds={args.rounds} (best of rounds)")
    print(f"bare Starlette route   {best['bare']:9.1f} req/s")
    print(f"GET /v1/context        {best['context']:9.1f} req/s")
    print(f"ratio context/bare     {best['context'] / best['bare']:9.3f}")
    # Throughput is capped by whichever side is slower (often the client); server CPU per request is not.
    if cpu["bare"] and cpu["context"]:
        print(f"server CPU per request: bare {cpu['bare']:.2f} ms, context {cpu['context']:.2f} ms, "
              f"ratio bare/context {cpu['bare'] / cpu['context']:.3f}")


if __name__ == "__main__":
    main()
