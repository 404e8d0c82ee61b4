"""Start-up: wall time of `socialpub --help`, of ordinary commands as the test suite's and the docs' CLI
processes run them (`socialpub workspaces list`, `keys create`, `init` on a current database), and of `socialpub mcp --transport stdio` from spawn to its first
`tools/list` answer, each against floors measured in the same run: `python -c pass` (the interpreter) and, for
stdio, a bare `mcp.server.Server` with one tool answering the same three messages (the SDK and the transport).

    python bench/startup.py [--runs 10]

Medians of --runs spawns each, in wall time and (on Linux) in the process's CPU time, which a busy machine
distorts far less. The stdio server runs on a migrated SQLite file seeded with `socialpub init
--demo` (done once before timing), with the worker off, as an MCP host starts it. Goals (issue 18): --help
<= 0.3 s, stdio to the first tools/list <= 1.0 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EMPTY_SERVER = """
import anyio, mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
TOOL = types.Tool(name="noop", description="Does nothing.", input_schema={"type": "object"})
async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[TOOL])
async def main():
    server = Server("empty", version="0", on_list_tools=list_tools)
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())
anyio.run(main)
"""

MESSAGES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process (Linux /proc); NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    before = os.times()
    subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return time.perf_counter() - start, cpu


def first_tools_list(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Spawn an MCP stdio server, send initialize + initialized + tools/list at once, and time until the
    tools/list answer arrives."""
    payload = "".join(json.dumps(m) + "\n" for m in MESSAGES).encode()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(payload)
        proc.stdin.flush()
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == 2:
                elapsed, cpu = time.perf_counter() - start, cpu_seconds(proc.pid)
                if "result" not in message or not message["result"].get("tools"):
                    raise SystemExit(f"tools/list failed: {line[:300]!r}")
                return elapsed, cpu
        raise SystemExit("the server closed stdout before answering tools/list")
    finally:
        proc.kill()
        proc.wait()


def median(fn, runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time of `runs` calls, after one warm-up call."""
    fn()  # warm the page cache and the bytecode caches
    samples = [fn() for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    py = sys.executable
    base = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    base["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory(prefix="socialpub-bench-startup-") as tmp:
        env = {**base, "SOCIALPUB_HOME": tmp, "SOCIALPUB_DATABASE_URL": f"sqlite+aiosqlite:///{tmp}/bench.db",
               "SOCIALPUB_RATE_LIMIT": "0"}
        init = subprocess.run([py, "-m", "server.cli", "init", "--demo", "--json"], env=env, cwd=ROOT,
                              capture_output=True, text=True, check=True)
        env["SOCIALPUB_API_KEY"] = json.loads(init.stdout)["api_key"]["secret"]

        floor = median(lambda: timed_run([py, "-c", "pass"], base), args.runs)
        helped = median(lambda: timed_run([py, "-m", "server.cli", "--help"], env), args.runs)
        listed = median(lambda: timed_run([py, "-m", "server.cli", "workspaces", "list"], env), args.runs)
        keyed = median(lambda: timed_run([py, "-m", "server.cli", "keys", "create", "--name", "bench", "--scopes",
                                          "posts:read"], env), args.runs)
        inited = median(lambda: timed_run([py, "-m", "server.cli", "init"], env), args.runs)
        empty = median(lambda: first_tools_list([py, "-c", EMPTY_SERVER], base), args.runs)
        stdio = median(lambda: first_tools_list([py, "-m", "server.cli", "--log-level", "WARNING", "mcp",
                                                 "--transport", "stdio", "--no-worker"], env), args.runs)
    def row(name: str, got: tuple[float, float], floor: tuple[float, float] | None = None, goal: str = "") -> None:
        ratio = f"  {got[0] / floor[0]:5.2f}x the floor (cpu {got[1] / floor[1]:5.2f}x){goal}" if floor else ""
        print(f"{name:<44} wall {got[0] * 1000:7.0f} ms  cpu {got[1] * 1000:6.0f} ms{ratio}")

    row("floor: python -c pass", floor)
    row("socialpub --help", helped, floor, "; goal <= 300 ms")
    row("socialpub workspaces list", listed, floor)
    row("socialpub keys create", keyed, floor)
    row("socialpub init (database current)", inited, floor)
    row("floor: bare MCP server to first tools/list", empty)
    row("socialpub mcp stdio to first tools/list", stdio, empty, "; goal <= 1000 ms")
    print(f"startup: --help {helped[0]:.2f} s wall, {helped[1]:.2f} s cpu ({helped[0] / floor[0]:.1f}x python -c pass); "
          f"mcp stdio first tools/list {stdio[0]:.2f} s wall, {stdio[1]:.2f} s cpu "
          f"({stdio[0] / empty[0]:.2f}x a bare MCP server)")


if __name__ == "__main__":
    main()
