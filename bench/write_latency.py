"""Write latency under concurrency: draft creation (`POST /v1/brands/{id}/content-items`) at 16 and 64 connections.

A real `socialpub serve` (its own process, scratch SOCIALPUB_HOME, `socialpub init --demo`, in-process worker on,
rate limit off) on SQLite, and on PostgreSQL too when `--database URL` is given (a scratch database created next
to URL and dropped afterwards; the database URL names is never touched). The load comes from a separate process
(closed loop: each connection sends its next create when the previous one answered, a fresh Idempotency-Key each
time), so the client does not share the server's event loop. Per level it prints p50 / p99 / max, throughput, the
server's CPU time per request (which a busy machine distorts far less than latency), the load process's own CPU
time per request (when it nears the server's, the client is what limits throughput: a closed loop's latency is
then the client's, not the server's) and the number of errors (any answer but 201, or no answer within 30 s).

The floor is the same create at 1 connection, measured in the same run against the same server: the ratio says
how much concurrency stretches the slowest writes beyond the cost of one uncontended write. Asserts nothing.

    python bench/write_latency.py [--duration 10] [--levels 16,64] [--database postgresql+asyncpg://...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SOCIALPUB = [sys.executable, "-m", "server.cli"]
REQUEST_TIMEOUT = 30.0
BODY = {"single_copy": {"caption": "Write latency bench: https://example.com/bench #bench", "hashtags": ["bench"]}}


# -- load process ---------------------------------------------------------------------------------------------

async def load(base: str, secret: str, brand_id: str, connections: int, duration: float, warmup: float) -> dict:
    """Closed-loop creates on `connections` keep-alive connections; latencies of those started after warm-up."""
    import httpx

    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    latencies: list[float] = []
    errors: dict[str, int] = {}
    sent_total = 0
    url = f"/v1/brands/{brand_id}/content-items"
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=REQUEST_TIMEOUT,
                                 headers={"Authorization": f"Bearer {secret}"}) as client:
        start = time.perf_counter()
        measured_from, stop = start + warmup, start + warmup + duration

        async def connection(n: int) -> None:
            nonlocal sent_total
            count = 0
            while (sent := time.perf_counter()) < stop:
                count += 1
                sent_total += 1
                try:
                    resp = await client.post(url, json={"name": f"Bench draft {n}.{count}", **BODY},
                                             headers={"Idempotency-Key": uuid.uuid4().hex})
                    outcome = "201" if resp.status_code == 201 else f"{resp.status_code} " + (
                        resp.json().get("error", {}).get("code", "") if resp.headers.get("content-type", "")
                        .startswith("application/json") else "")
                except httpx.HTTPError as exc:
                    outcome = type(exc).__name__
                if sent >= measured_from:
                    latencies.append(time.perf_counter() - sent)
                    if outcome != "201":
                        errors[outcome] = errors.get(outcome, 0) + 1

        cpu_start = time.process_time()
        await asyncio.gather(*(connection(n) for n in range(connections)))
        elapsed = time.perf_counter() - measured_from
        client_cpu = time.process_time() - cpu_start
    return {"connections": connections, "latencies": latencies, "errors": errors, "elapsed": elapsed,
            "sent": sent_total, "client_cpu_ms": client_cpu * 1000 / max(sent_total, 1)}


# -- orchestration --------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scratch_database(base_url: str, drop: str | None = None) -> str:
    """A private PostgreSQL database next to `base_url` (created, or dropped when `drop` names it)."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url
    from sqlalchemy.ext.asyncio import create_async_engine

    url = make_url(base_url)
    name = drop or f"sp_bench_write_{os.getpid()}"

    async def go() -> None:
        admin = create_async_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' if drop
                                    else f'CREATE DATABASE "{name}"'))
        await admin.dispose()

    asyncio.run(go())
    return url.set(database=name).render_as_string(hide_password=False)


def start_server(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str]:
    import httpx

    init = subprocess.run([*SOCIALPUB, "init", "--demo", "--json"], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    if init.returncode:
        raise SystemExit(f"socialpub init --demo failed:\n{init.stderr[-2000:]}")
    demo = json.loads(init.stdout)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        proc = subprocess.Popen([*SOCIALPUB, "serve", "--port", str(port)], env=env, cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"socialpub serve exited {proc.returncode}:\n{log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                proc.demo = demo  # pyright: ignore[reportAttributeAccessIssue]  # an attribute the test attaches to a stdlib object
                return proc, base
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"socialpub serve did not answer within 60 s:\n{log.read_text()[-2000:]}")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc); None where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_load(base: str, secret: str, brand_id: str, connections: int, duration: float, warmup: float,
             server_pid: int) -> dict:
    """One level from a separate load process; adds the server's CPU milliseconds per request, a figure a busy
    machine distorts far less than latency."""
    cpu_before = cpu_seconds(server_pid)
    done = subprocess.run([sys.executable, __file__, "--load", base, "--secret", secret, "--brand", brand_id,
                           "--connections", str(connections), "--duration", str(duration), "--warmup", str(warmup)],
                          cwd=ROOT, capture_output=True, text=True, timeout=duration + warmup + 120)
    if done.returncode:
        raise SystemExit(f"load process failed:\n{done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    cpu_after = cpu_seconds(server_pid)
    if cpu_before is not None and cpu_after is not None and result["sent"]:
        result["cpu_ms"] = (cpu_after - cpu_before) * 1000 / result["sent"]
    return result


def summary(result: dict) -> dict:
    ms = sorted(x * 1000 for x in result["latencies"])
    if not ms:
        return {"n": 0, "p50": float("nan"), "p99": float("nan"), "max": float("nan"), "rate": 0.0, "errors": {},
            "cpu_ms": float("nan"), "client_cpu_ms": float("nan")}

    def pct(p: float) -> float:
        return ms[min(len(ms) - 1, int(p * len(ms)))]

    return {"n": len(ms), "p50": pct(0.50), "p99": pct(0.99), "max": ms[-1], "rate": len(ms) / result["elapsed"],
            "errors": result["errors"], "cpu_ms": result.get("cpu_ms", float("nan")),
            "client_cpu_ms": result.get("client_cpu_ms", float("nan"))}


def bench_backend(name: str, database_url: str | None, levels: list[int], duration: float,
                  warmup: float) -> dict[int, dict]:
    with tempfile.TemporaryDirectory(prefix="socialpub-bench-write-") as home:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SOCIALPUB_HOME": home, "SOCIALPUB_RATE_LIMIT": "0"}
        env.pop("SOCIALPUB_DATABASE_URL", None)
        if database_url:
            env["SOCIALPUB_DATABASE_URL"] = database_url
        proc, base = start_server(env, Path(home) / "serve.log")
        try:
            secret, brand_id = proc.demo["api_key"]["secret"], proc.demo["brands"][0]["id"]  # pyright: ignore[reportAttributeAccessIssue]  # an attribute the test attaches to a stdlib object
            results = {}
            for level in [1, *levels]:
                results[level] = summary(run_load(base, secret, brand_id, level, duration, warmup, proc.pid))
                s = results[level]
                errors = sum(s["errors"].values()) if s["n"] else 0
                detail = f" {s['errors']}" if errors else ""
                print(f"{name:10} {level:3} conn  n={s['n']:6}  {s['rate']:7.1f} req/s  p50 {s['p50']:7.1f} ms  "
                      f"p99 {s['p99']:7.1f} ms  max {s['max']:7.1f} ms  server CPU {s['cpu_ms']:5.2f} ms/req  "
                      f"client CPU {s['client_cpu_ms']:5.2f} ms/req  errors {errors}{detail}", flush=True)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="measured seconds per level (default 10)")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each level")
    parser.add_argument("--levels", default="16,64", help="connection counts besides the 1-connection floor")
    parser.add_argument("--database", help="postgresql+asyncpg://... : also measure PostgreSQL (scratch database)")
    parser.add_argument("--load", help=argparse.SUPPRESS)
    parser.add_argument("--secret", help=argparse.SUPPRESS)
    parser.add_argument("--brand", help=argparse.SUPPRESS)
    parser.add_argument("--connections", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        print(json.dumps(asyncio.run(load(args.load, args.secret, args.brand, args.connections, args.duration,
                                          args.warmup))))
        return

    levels = [int(x) for x in args.levels.split(",")]
    print(f"draft creation, closed loop, {args.duration:g} s per level after {args.warmup:g} s warm-up; "
          f"{os.cpu_count()} CPUs", flush=True)
    results = {"sqlite": bench_backend("sqlite", None, levels, args.duration, args.warmup)}
    if args.database:
        pg_url = scratch_database(args.database)
        try:
            results["postgresql"] = bench_backend("postgresql", pg_url, levels, args.duration, args.warmup)
        finally:
            scratch_database(args.database, drop=pg_url.rsplit("/", 1)[1])
    for name, by_level in results.items():
        floor = by_level[1]["p50"]
        print(f"{name}: p99 / 1-connection p50 ({floor:.1f} ms): "
              + ", ".join(f"{level} conn {by_level[level]['p99'] / floor:.1f}x" for level in levels))
    sq = results["sqlite"]
    level = levels[0]
    print(f"ratio sqlite p99 at {level} connections / 1-connection p50: {sq[level]['p99'] / sq[1]['p50']:.1f}x "
          f"(p99 {sq[level]['p99']:.0f} ms, max {sq[level]['max']:.0f} ms)")


if __name__ == "__main__":
    main()
