"""Soak: `socialpub serve` at 80 % of its measured peak for a bounded time, with its resident memory sampled.

A scratch home (`socialpub init --demo`, SQLite, rate limit off) and a `socialpub serve` subprocess on a free
loopback port. First the peak: `wrk -t1 -c16` for `--peak-seconds` each on `GET /v1/context` and on draft
creation (`POST /v1/brands/{id}/content-items`). Then the soak: a rate-limited open-loop load generator in a
separate process (this file with `--load`: asyncio, raw HTTP/1.1 keep-alive connections, requests issued on a
fixed schedule whatever the latency) sends both at once, each at 80 % of half its peak (the server's time
split evenly between them), for `--minutes`. Every `--sample-seconds` the server's VmRSS is read from
/proc/<pid>/status. Reported: errors (non-2xx, connection errors, 10 s timeouts), the achieved rate against
the target, p50/p99 latency, and RSS growth after warm-up (the median of the samples in the minute after
warm-up against the median of the last minute's samples); the floor is the peak measured in the same run.
Loopback only; nothing leaves the machine. Asserts nothing.

    python bench/soak.py [--minutes 5] [--warmup-seconds 60] [--peak-seconds 10] [--load-fraction 0.8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "socialpub")
DRAFT_BODY = json.dumps({"name": "Soak draft", "single_copy": {"caption": "Soak test https://example.com #soak"}})
MAX_CONNECTIONS = 64  # per stream: enough in flight for the target rate; more only when the server lags
TIMEOUT_SECONDS = 10.0
# uvicorn closes a keep-alive connection idle for 5 s; a pooled connection idle longer than this is dropped
# rather than reused (a client-side race, not a server error).
IDLE_REUSE_SECONDS = 2.0


# --- the load generator (its own process) ----------------------------------------------------------------

class Stream:
    """One request kind at a fixed rate over a pool of keep-alive connections."""

    def __init__(self, host: str, port: int, raw: bytes, rate: float) -> None:
        self.host, self.port, self.raw, self.rate = host, port, raw, rate
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []
        self.open = 0
        self.freed = asyncio.Condition()
        self.sent = self.ok = self.errors = self.late = 0
        self.latencies: list[float] = []
        self.first_errors: list[str] = []

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        async with self.freed:
            while not self.idle and self.open >= MAX_CONNECTIONS:
                self.late += 1
                await self.freed.wait()
            while self.idle:
                reader, writer, since = self.idle.pop()
                if time.monotonic() - since < IDLE_REUSE_SECONDS:
                    return reader, writer
                self.open -= 1
                writer.close()
            self.open += 1
        try:
            return await asyncio.open_connection(self.host, self.port)
        except OSError:
            async with self.freed:
                self.open -= 1
            raise

    async def _give_back(self, conn, keep: bool) -> None:
        async with self.freed:
            if keep:
                self.idle.append((*conn, time.monotonic()))
            else:
                self.open -= 1
                conn[1].close()
            self.freed.notify()

    async def _one(self) -> None:
        started = time.perf_counter()
        conn = None
        try:
            conn = await self._connection()
            reader, writer = conn
            writer.write(self.raw)
            status, keep = await asyncio.wait_for(_read_response(reader), TIMEOUT_SECONDS)
            await self._give_back(conn, keep)
            conn = None
            if 200 <= status < 300:
                self.ok += 1
                self.latencies.append(time.perf_counter() - started)
            else:
                self._error(f"HTTP {status}")
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self._error(f"{type(exc).__name__}: {exc}")
            if conn is not None:
                await self._give_back(conn, False)

    def _error(self, what: str) -> None:
        self.errors += 1
        if len(self.first_errors) < 5:
            self.first_errors.append(what)

    async def run(self, seconds: float) -> None:
        start = time.perf_counter()
        tasks: set[asyncio.Task] = set()
        n = 0
        while True:
            at = start + n / self.rate
            if at - start >= seconds:
                break
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            task = asyncio.create_task(self._one())
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            self.sent += 1
            n += 1
        if tasks:
            await asyncio.wait(tasks, timeout=TIMEOUT_SECONDS + 5)
        for _reader, writer, _since in self.idle:
            writer.close()

    def summary(self, seconds: float) -> dict:
        lat = sorted(self.latencies) or [0.0]
        return {"target_rate": self.rate, "sent": self.sent, "ok": self.ok, "errors": self.errors,
                "achieved_rate": self.ok / seconds, "waited_for_connection": self.late,
                "p50_ms": 1000 * lat[len(lat) // 2], "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))],
                "first_errors": self.first_errors}


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    if "content-length" not in headers:
        raise ValueError("response without Content-Length")
    await reader.readexactly(int(headers["content-length"]))
    return status, headers.get("connection", "").lower() != "close"


def _request(method: str, path: str, secret: str, body: str | None = None) -> bytes:
    head = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Authorization: Bearer {secret}"]
    if body is not None:
        head += ["Content-Type: application/json", f"Content-Length: {len(body.encode())}"]
    return ("\r\n".join(head) + "\r\n\r\n" + (body or "")).encode()


async def load(port: int, secret: str, brand: str, context_rate: float, draft_rate: float, seconds: float) -> None:
    streams = {
        "context": Stream("127.0.0.1", port, _request("GET", "/v1/context", secret), context_rate),
        "draft": Stream("127.0.0.1", port, _request("POST", f"/v1/brands/{brand}/content-items", secret,
                                                     DRAFT_BODY), draft_rate),
    }
    started = time.perf_counter()
    await asyncio.gather(*(s.run(seconds) for s in streams.values()))
    elapsed = time.perf_counter() - started
    print(json.dumps({name: s.summary(elapsed) for name, s in streams.items()}), flush=True)


# --- the driver ------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def env_for(home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=home, SOCIALPUB_RATE_LIMIT="0/60", PYTHONPATH=str(ROOT))
    return env


def wait_ready(base: str, proc: subprocess.Popen, secret: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"socialpub serve exited with {proc.returncode}")
        try:
            req = urllib.request.Request(f"{base}/v1/context", headers={"Authorization": f"Bearer {secret}"})
            with urllib.request.urlopen(req, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("socialpub serve did not answer within 60 s")


def wrk_peak(base: str, path: str, secret: str, seconds: int, body: str | None, scratch: Path) -> float:
    script = scratch / f"wrk_{'post' if body else 'get'}.lua"
    lines = [f'wrk.headers["Authorization"] = "Bearer {secret}"']
    if body is not None:
        lines += ['wrk.method = "POST"', f"wrk.body = {json.dumps(body)}",
                  'wrk.headers["Content-Type"] = "application/json"']
    script.write_text("\n".join(lines) + "\n")
    out = subprocess.run(["wrk", "-t1", "-c16", f"-d{seconds}s", "--timeout", "10s", "-s", str(script), base + path],
                         capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"wrk saw errors at peak:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if rate is None:
        raise SystemExit(f"wrk printed no request rate:\n{out}")
    return float(rate.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--warmup-seconds", type=float, default=60.0)
    parser.add_argument("--peak-seconds", type=int, default=10)
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--load-fraction", type=float, default=0.8)
    parser.add_argument("--load", nargs=6, metavar=("PORT", "SECRET", "BRAND", "CTX_RATE", "DRAFT_RATE", "SECONDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        port, secret, brand, ctx, draft, seconds = args.load
        asyncio.run(load(int(port), secret, brand, float(ctx), float(draft), float(seconds)))
        return
    if shutil.which("wrk") is None:
        sys.exit("soak: needs wrk (apt-get install wrk) to measure the peak")

    seconds = args.minutes * 60
    warmup = min(args.warmup_seconds, seconds / 3)
    with tempfile.TemporaryDirectory(prefix="socialpub-soak-") as home:
        env = env_for(home)
        seeded = json.loads(subprocess.run([CLI, "init", "--demo", "--json"], env=env, capture_output=True,
                                           text=True, check=True).stdout)
        secret, brand = seeded["api_key"]["secret"], seeded["brands"][0]["id"]
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([CLI, "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level",
                                   "WARNING"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_ready(base, server, secret)
            peak_ctx = wrk_peak(base, "/v1/context", secret, args.peak_seconds, None, Path(home))
            peak_draft = wrk_peak(base, f"/v1/brands/{brand}/content-items", secret, args.peak_seconds,
                                  DRAFT_BODY, Path(home))
            ctx_rate = args.load_fraction * peak_ctx / 2
            draft_rate = args.load_fraction * peak_draft / 2
            print(f"peak (wrk -t1 -c16, {args.peak_seconds} s): GET /v1/context {peak_ctx:.1f} req/s, "
                  f"draft creation {peak_draft:.1f} req/s", flush=True)
            print(f"soak: {seconds:.0f} s at {args.load_fraction:.0%} of peak, split evenly: context "
                  f"{ctx_rate:.1f} req/s + drafts {draft_rate:.1f} req/s; RSS every {args.sample_seconds:.0f} s, "
                  f"warm-up {warmup:.0f} s", flush=True)
            loader = subprocess.Popen([sys.executable, __file__, "--load", str(port), secret, brand, str(ctx_rate),
                                       str(draft_rate), str(seconds)], stdout=subprocess.PIPE, text=True,
                                      env=env)
            samples: list[tuple[float, int]] = []
            started = time.monotonic()
            while loader.poll() is None:
                samples.append((time.monotonic() - started, rss_kib(server.pid)))
                time.sleep(args.sample_seconds)
            assert loader.stdout is not None  # PIPE
            report = json.loads(loader.stdout.read().strip().splitlines()[-1])
            samples.append((time.monotonic() - started, rss_kib(server.pid)))
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    window = min(60.0, (seconds - warmup) / 2)
    early = [kib for t, kib in samples if warmup <= t < warmup + window]
    late = [kib for t, kib in samples if t >= seconds - window]
    base_kib, end_kib = statistics.median(early), statistics.median(late)
    growth = 100 * (end_kib - base_kib) / base_kib
    errors = sum(s["errors"] for s in report.values())
    for name, s in report.items():
        print(f"{name:8s} target {s['target_rate']:7.1f} req/s  achieved {s['achieved_rate']:7.1f} req/s  "
              f"sent {s['sent']}  errors {s['errors']}  p50 {s['p50_ms']:.1f} ms  p99 {s['p99_ms']:.1f} ms"
              + (f"  first errors: {s['first_errors']}" if s["first_errors"] else ""))
    print("RSS MiB over time: " + " ".join(f"{t:.0f}s={kib / 1024:.1f}" for t, kib in samples[:: max(1, len(samples) // 20)]))
    print(f"RSS after warm-up {base_kib / 1024:.1f} MiB, at the end {end_kib / 1024:.1f} MiB, "
          f"max {max(k for _, k in samples) / 1024:.1f} MiB")
    achieved = sum(s["achieved_rate"] for s in report.values()) / sum(s["target_rate"] for s in report.values())
    print(f"soak: errors {errors}; achieved {achieved:.3f} of the target rate ({args.load_fraction:.0%} of the "
          f"measured peak); RSS growth after warm-up {growth:+.1f} % (limit 10 %)")


if __name__ == "__main__":
    main()
