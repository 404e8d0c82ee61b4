"""What `tools/list` costs an agent's context: bytes and estimated tokens per tool (largest first), the total
for the default toolsets and for every toolset (admin key, `--toolsets all`), and each total's ratio to its
budget (issue 17: 40 KB default, 120 KB all). Fails nothing; the last line is the figure.

    python bench/tool_list_size.py [--top 15]

Tools are listed page by page through the in-process MCP client against a demo database, as a client sees
them. Tokens are estimated at 4 bytes per token (JSON of English text and identifiers).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schemas.settings import Settings  # noqa: E402
from server.mcp_server.app import McpApp  # noqa: E402
from server.mcp_server.selection import Selection  # noqa: E402
from storage.migrate import upgrade  # noqa: E402
from tools.operator import demo  # noqa: E402
from tools.runtime import Runtime  # noqa: E402
from tools.toolsets import TOOLSETS  # noqa: E402

BUDGETS = {"default": 40 * 1024, "all": 120 * 1024}
BYTES_PER_TOKEN = 4


def compact(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


async def listed(app: McpApp) -> tuple[int, list[tuple[str, int]]]:
    """Bytes of every tools/list page (result JSON) and each tool's own bytes."""
    total, tools, cursor = 0, [], None
    async with Client(app.server, mode="legacy") as client:
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            total += compact(page.model_dump(by_alias=True, exclude_none=True, mode="json"))
            tools += [(t.name, compact(t.model_dump(by_alias=True, exclude_none=True, mode="json")))
                      for t in page.tools]
            cursor = page.next_cursor
            if cursor is None:
                return total, tools


async def main(top: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="socialpub-bench-"))
    rt = Runtime.from_settings(Settings(home=home, worker_enabled=False, rate_limit_requests=0))
    await upgrade(rt.db)
    async with rt.db.session(write=True) as session:
        key = (await demo.seed_demo(session, rt.clock.now()))["secret"]
    default = await listed(McpApp(rt, key=key))
    every = await listed(McpApp(rt, key=key, selection=Selection(toolsets=tuple(t.name for t in TOOLSETS),
                                                                  all_tools=True)))
    await rt.close()

    print(f"largest tools ({top} of {len(every[1])}), every toolset:")
    for name, size in sorted(every[1], key=lambda t: -t[1])[:top]:
        print(f"  {name:40s} {size:7,d} bytes  ~{size // BYTES_PER_TOKEN:6,d} tokens")
    figures = []
    for label, (total, tools) in (("default", default), ("all", every)):
        ratio = total / BUDGETS[label]
        figures.append(f"{label} {total / 1024:.1f} KB ({ratio:.2f}x budget)")
        print(f"{label:8s} {len(tools):3d} tools {total:9,d} bytes  ~{total // BYTES_PER_TOKEN:7,d} tokens  "
              f"budget {BUDGETS[label]:,d}  ratio {ratio:.2f}x")
    print("tools/list: " + "; ".join(figures))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--top", type=int, default=15)
    anyio.run(main, parser.parse_args().top)
