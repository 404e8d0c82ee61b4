"""REST server CPU per request against a bare Starlette route, with load from `wrk` in another process.

Two servers run side by side, each a process of its own with the same uvicorn settings as `socialpub serve`
(h11 with its head buffer, the default loop, INFO logging to a discarded stderr):

- `socialpub serve --no-worker` on a scratch SOCIALPUB_HOME holding the demo workspace (`socialpub init --demo`),
  its demo key, 20 content items in the first brand and a per-key rate limit too large to trip (the limiter
  still runs);
- a bare Starlette app with one route per scenario that does no work (the POST route parses its JSON body).

`wrk -t1 -c16` (Debian: `apt-get install -y wrk`) drives each scenario for `--duration` seconds per round.
The figure is each server's CPU time per request (utime + stime from /proc/<pid>/stat over the timed run,
divided by the requests wrk completed), which neither the load generator nor a busy machine inflates; req/s,
p50 and p99 are printed beside it. Best (lowest CPU) of `--rounds`. Floors (issue 18): context <= 3x,
list of 20 items and create <= 5x. The last line holds the worst ratio against its floor. Asserts nothing.

    python bench/rest_cpu.py [--duration 5] [--rounds 2] [--scenarios context,list,create]
    python bench/rest_cpu.py --database-url postgresql+asyncpg://postgres@127.0.0.1:5432/bench_NAME
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.inprocess import init_demo  # noqa: E402

CONNECTIONS = 16
CREATE_BODY = {"name": "Bench draft", "single_copy": {"caption": "Hello from the bench", "hashtags": ["bench"]}}
# scenario -> (method, path template, floor ratio)
SCENARIOS = {
    "context": ("GET", "/v1/context", 3.0),
    "list": ("GET", "/v1/brands/{brand_id}/content-items?limit=20", 5.0),
    "create": ("POST", "/v1/brands/{brand_id}/content-items", 5.0),
}
WRK_POST = """wrk.method = "POST"
wrk.body = {body}
wrk.headers["Content-Type"] = "application/json"
"""


def bare_app():
    """The floor: uvicorn + Starlette with no work behind the route."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def read(request: Request) -> JSONResponse:
        return JSONResponse({"success": True, "data": {"ok": True}, "meta": {"request_id": "req_bare"}})

    async def create(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse({"success": True, "data": {"name": body.get("name")}, "meta": {"request_id": "req_bare"}},
                            status_code=201)

    return Starlette(routes=[Route("/v1/context", read, methods=["GET"]),
                             Route("/v1/brands/{brand_id}/content-items", read, methods=["GET"]),
                             Route("/v1/brands/{brand_id}/content-items", create, methods=["POST"])])


def serve_bare(port: int) -> None:
    import uvicorn

    from server import logs
    from server.rest import UVICORN_HEAD_OPTIONS

    # The same call as server/commands/serve.py makes, with the logging `socialpub` sets up by default.
    logs.configure("INFO", "text")
    uvicorn.run(bare_app(), host="127.0.0.1", port=port, log_level="info", lifespan="on", log_config=None,
                **UVICORN_HEAD_OPTIONS)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_up(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server on port {port} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"server on port {port} did not start")


def http(port: int, method: str, path: str, key: str, body: dict | None = None) -> tuple[int, dict]:
    import httpx

    resp = httpx.request(method, f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {key}"},
                         json=body, timeout=30)
    return resp.status_code, resp.json()


def parse_wrk(text: str) -> dict[str, float]:
    """Requests, req/s, p50 and p99 (ms) from `wrk --latency` output; refuses runs with errors."""
    def found(pattern: str, flags: int = 0) -> str:
        match = re.search(pattern, text, flags)
        if match is None:
            raise SystemExit(f"wrk output without {pattern!r}:\n{text}")
        return match.group(1)

    def ms(value: str) -> float:
        match = re.fullmatch(r"([\d.]+)(us|ms|s)", value)
        if match is None:
            raise SystemExit(f"wrk latency {value!r} not understood")
        number, unit = match.groups()
        return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]

    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text) or re.search(r"Socket errors: .*", text)
    if bad:
        raise SystemExit(f"wrk saw errors:\n{text}")
    return {"requests": int(found(r"(\d+) requests in")),
            "rate": float(found(r"Requests/sec:\s+([\d.]+)")),
            "p50": ms(found(r"^\s+50%\s+(\S+)", re.M)),
            "p99": ms(found(r"^\s+99%\s+(\S+)", re.M))}


def run_wrk(pid: int, url: str, key: str, duration: int, script: str | None) -> dict[str, float]:
    def wrk(seconds: int) -> str:
        cmd = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "30s", "--latency", "-H", f"Authorization: Bearer {key}"]
        done = subprocess.run([*cmd, *(["-s", script] if script else []), url], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"wrk failed: {done.stderr or done.stdout}")
        return done.stdout

    wrk(1)  # warm-up: connections, caches, the database's pages
    before = cpu_seconds(pid)
    out = wrk(duration)
    result = parse_wrk(out)
    result["cpu_ms"] = (cpu_seconds(pid) - before) * 1000 / result["requests"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=int, default=5, help="seconds of load per scenario and round")
    parser.add_argument("--rounds", type=int, default=2, help="best (lowest CPU) of this many rounds")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated: context,list,create")
    parser.add_argument("--database-url", help="default: SQLite in the scratch SOCIALPUB_HOME")
    parser.add_argument("--serve-bare", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bare:
        serve_bare(args.serve_bare)
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: `apt-get install -y wrk` (Debian/Ubuntu), then run this again.")
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]

    home = tempfile.mkdtemp(prefix="socialpub-bench-")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOCIALPUB_HOME": home, "SOCIALPUB_RATE_LIMIT": "1000000000/60",
           "SOCIALPUB_WORKER": "off"}
    if args.database_url:
        env["SOCIALPUB_DATABASE_URL"] = args.database_url
    key, brand_id = init_demo(env)
    procs: dict[str, tuple[subprocess.Popen, int]] = {}
    script_dir = tempfile.mkdtemp(prefix="socialpub-wrk-")
    post_script = Path(script_dir) / "post.lua"
    post_script.write_text(WRK_POST.format(body=json.dumps(json.dumps(CREATE_BODY))))
    try:
        for kind in ("bare", "service"):
            port = free_port()
            cmd = ([sys.executable, __file__, "--serve-bare", str(port)] if kind == "bare" else
                   [sys.executable, "-m", "server.cli", "serve", "--no-worker", "--port", str(port)])
            procs[kind] = (subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL), port)
        for proc, port in procs.values():
            wait_up(port, proc)
        service_port = procs["service"][1]
        for n in range(20):  # the list scenario reads a full page of 20 items
            status, body = http(service_port, "POST", f"/v1/brands/{brand_id}/content-items", key,
                                {**CREATE_BODY, "name": f"Seeded {n}"})
            assert status == 201, body
        status, body = http(service_port, "GET", f"/v1/brands/{brand_id}/content-items?limit=20", key)
        assert status == 200 and len(body["data"]["items"]) == 20, body

        best: dict[tuple[str, str], dict[str, float]] = {}
        for _ in range(args.rounds):
            for scenario in scenarios:
                method, template, _floor = SCENARIOS[scenario]
                path = template.format(brand_id=brand_id)
                for kind, (proc, port) in procs.items():
                    result = run_wrk(proc.pid, f"http://127.0.0.1:{port}{path}", key, args.duration,
                                     str(post_script) if method == "POST" else None)
                    if (scenario, kind) not in best or result["cpu_ms"] < best[scenario, kind]["cpu_ms"]:
                        best[scenario, kind] = result
    finally:
        for proc, _ in procs.values():
            proc.terminate()
            proc.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(script_dir, ignore_errors=True)

    database = "PostgreSQL" if args.database_url and args.database_url.startswith("postgres") else "SQLite"
    print(f"wrk -t1 -c{CONNECTIONS}, {args.duration} s x {args.rounds} rounds (lowest CPU), database {database}")
    print(f"{'scenario':<10}{'server':<9}{'CPU ms/req':>11}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}")
    worst = 0.0
    summary = []
    for scenario in scenarios:
        for kind in ("bare", "service"):
            r = best[scenario, kind]
            print(f"{scenario:<10}{kind:<9}{r['cpu_ms']:11.3f}{r['rate']:10.0f}{r['p50']:9.2f}{r['p99']:9.2f}")
        ratio = best[scenario, "service"]["cpu_ms"] / best[scenario, "bare"]["cpu_ms"]
        floor = SCENARIOS[scenario][2]
        worst = max(worst, ratio / floor)
        summary.append(f"{scenario} {ratio:.2f}x (floor {floor:g}x)")
    print(f"server CPU per request, service/bare: {', '.join(summary)}; worst share of floor {worst:.2f}")


if __name__ == "__main__":
    main()
