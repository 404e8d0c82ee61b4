"""MCP adapter overhead: median per-call latency of `get_context` through the in-process legacy client and over
a stdio subprocess, each as a ratio to an empty tool on the same SDK and transport in the same run; and the
`tools/list` size in bytes for the default toolsets and for every tool.

    python bench/mcp_overhead.py [--calls 200]

The empty tool is a bare `mcp.server.Server` with one tool that returns nothing: the floor the SDK and the
transport cost. The ratio is what socialpub adds on top (argument validation, dispatch: key lookup, one
database read, envelope, output-schema validation by the client).

Besides wall times (inflated when other processes take the cores) it prints CPU time per call, which load
distorts far less: in memory this process's (client and server together); over stdio, on Linux, the server
process's (from /proc) plus this process's. The stdio floor serves the SDK's own `stdio_server`; socialpub
serves its transport (server/mcp_server/stdio.py), since that is part of what a client gets.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server import Server

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schemas.settings import Settings  # noqa: E402
from server.mcp_server.app import McpApp  # noqa: E402
from server.mcp_server.selection import Selection  # noqa: E402
from storage.migrate import upgrade  # noqa: E402
from tools.operator import demo  # noqa: E402
from tools.runtime import Runtime  # noqa: E402
from tools.toolsets import TOOLSETS  # noqa: E402

EMPTY_TOOL = types.Tool(name="noop", description="Does nothing.", input_schema={"type": "object"})


def empty_server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[EMPTY_TOOL])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[])

    return Server("empty", version="0", on_list_tools=list_tools, on_call_tool=call_tool)


def _child_cpu() -> float | None:
    """CPU seconds of this process's one child (the stdio server), or None where /proc cannot tell."""
    try:
        tasks = Path(f"/proc/{os.getpid()}/task")
        children = [c for t in tasks.iterdir() for c in (t / "children").read_text().split()]
        if len(children) != 1:
            return None
        fields = Path(f"/proc/{children[0]}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


async def timed_calls(client: Client, name: str, calls: int,
                      server_cpu: Callable[[], float | None] = lambda: 0.0) -> tuple[float, float | None]:
    """Median wall time of one call, and the CPU time per call of this process plus what `server_cpu` counts
    (for in-memory connections this process is client and server together: unlike wall time, CPU time is not
    inflated when other processes take the cores). None when `server_cpu` cannot tell."""
    await client.list_tools()  # the client caches output schemas here, as real clients do
    for _ in range(min(20, calls)):  # warm-up
        await client.call_tool(name, {})
    samples = []
    server_before, cpu = server_cpu(), time.process_time()
    for _ in range(calls):
        start = time.perf_counter()
        result = await client.call_tool(name, {})
        samples.append(time.perf_counter() - start)
        assert not result.is_error, result
    cpu, server_after = time.process_time() - cpu, server_cpu()
    if server_before is None or server_after is None:
        return statistics.median(samples), None
    return statistics.median(samples), (cpu + server_after - server_before) / calls


async def list_size(app: McpApp) -> tuple[int, int]:
    """Bytes of every tools/list page as JSON, and the number of tools."""
    size, count, cursor = 0, 0, None
    async with Client(app.server, mode="legacy") as client:
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            size += len(json.dumps(page.model_dump(by_alias=True, exclude_none=True, mode="json"),
                                   separators=(",", ":")).encode())
            count += len(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return size, count


def stdio(args: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT),
                                 env={**env, "PYTHONPATH": str(ROOT)})


async def main(calls: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="socialpub-bench-"))
    settings = Settings(home=home, worker_enabled=False, rate_limit_requests=0)
    rt = Runtime.from_settings(settings)
    await upgrade(rt.db)
    async with rt.db.session(write=True) as session:
        key = (await demo.seed_demo(session, rt.clock.now()))["secret"]

    # in-process, legacy mode
    async with Client(empty_server(), mode="legacy") as client:
        floor_mem, floor_cpu = await timed_calls(client, "noop", calls)
    async with Client(McpApp(rt, key=key).server, mode="legacy") as client:
        ctx_mem, ctx_cpu = await timed_calls(client, "get_context", calls)
    assert ctx_cpu is not None and floor_cpu is not None  # in process: this process's CPU is all of it

    # stdio subprocesses
    env = {"SOCIALPUB_HOME": str(home), "SOCIALPUB_API_KEY": key, "SOCIALPUB_RATE_LIMIT": "0",
           "SOCIALPUB_WORKER": "off", "PATH": os.environ.get("PATH", "")}
    empty = stdio(["-c", "import anyio, sys; sys.path.insert(0, 'bench'); from mcp_overhead import serve_empty; "
                         "anyio.run(serve_empty)"], env)
    async with Client(empty, mode="legacy") as client:
        floor_stdio, floor_stdio_cpu = await timed_calls(client, "noop", calls, _child_cpu)
    async with Client(stdio(["-m", "server.cli", "--log-level", "WARNING", "mcp", "--transport", "stdio"], env),
                      mode="legacy") as client:
        ctx_stdio, ctx_stdio_cpu = await timed_calls(client, "get_context", calls, _child_cpu)

    default_size, default_count = await list_size(McpApp(rt, key=key))
    all_size, all_count = await list_size(McpApp(rt, key=key, selection=Selection(
        toolsets=tuple(t.name for t in TOOLSETS), all_tools=True)))
    await rt.close()

    print(f"get_context median over {calls} calls (database: SQLite)")
    print(f"  in-memory (legacy): {ctx_mem * 1e3:7.3f} ms  empty tool {floor_mem * 1e3:7.3f} ms  "
          f"ratio {ctx_mem / floor_mem:5.1f}x")
    print(f"  in-memory CPU/call: {ctx_cpu * 1e3:7.3f} ms  empty tool {floor_cpu * 1e3:7.3f} ms  "
          f"ratio {ctx_cpu / floor_cpu:5.1f}x (floor 2.5x)")
    print(f"  stdio:              {ctx_stdio * 1e3:7.3f} ms  empty tool {floor_stdio * 1e3:7.3f} ms  "
          f"ratio {ctx_stdio / floor_stdio:5.1f}x (floor 1.5x)")
    stdio_cpu = ""
    if ctx_stdio_cpu is not None and floor_stdio_cpu is not None:
        print(f"  stdio CPU/call:     {ctx_stdio_cpu * 1e3:7.3f} ms  empty tool {floor_stdio_cpu * 1e3:7.3f} ms  "
              f"ratio {ctx_stdio_cpu / floor_stdio_cpu:5.1f}x (server and client processes)")
        stdio_cpu = f", stdio CPU {ctx_stdio_cpu / floor_stdio_cpu:.2f}x"
    print("tools/list size")
    print(f"  default toolsets: {default_size:8d} bytes ({default_count} tools)")
    print(f"  all tools:        {all_size:8d} bytes ({all_count} tools)")
    print(f"get_context / empty tool: in-memory CPU {ctx_cpu / floor_cpu:.2f}x (floor 2.5x), "
          f"in-memory wall {ctx_mem / floor_mem:.2f}x (floor 2.5x), stdio {ctx_stdio / floor_stdio:.2f}x (floor 1.5x)"
          f"{stdio_cpu}")


async def serve_empty() -> None:
    from mcp.server.stdio import stdio_server

    server = empty_server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    anyio.run(main, parser.parse_args().calls)
