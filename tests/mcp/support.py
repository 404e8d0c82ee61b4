"""Helpers for the MCP tests: in-process and HTTP clients, a loopback uvicorn, a tools/list walker, and a
probe endpoint with a required idempotency key (no such endpoint exists on main yet)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import uvicorn
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from server.mcp_server.app import McpApp
from server.mcp_server.selection import Selection
from tests.test_idempotency import PROBE
from tools import catalogue

ROOT = Path(__file__).parents[2]


def install_probe(monkeypatch: Any) -> None:
    """Add the idempotency probe endpoint (POST /v1/probe, required key, scope brands:read) to the catalogue."""
    real = catalogue.endpoints()
    if PROBE not in real:
        monkeypatch.setattr(catalogue, "endpoints", lambda: (*real, PROBE))


def envelope(result: types.CallToolResult) -> dict[str, Any]:
    assert isinstance(result.structured_content, dict), result
    return result.structured_content


def text_of(block: object) -> str:
    """The text of a content block a test knows is text: a tool result's or prompt message's content, or a
    resource's contents (each is a union that also admits images, audio, blobs and links)."""
    assert isinstance(block, types.TextContent | types.TextResourceContents), block
    return block.text


async def all_tools(client: Client) -> tuple[list[types.Tool], int]:
    """Walk tools/list to the end; returns the tools and the number of pages."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        pages += 1
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools, pages
        assert pages < 100, "tools/list never ends"


@contextlib.asynccontextmanager
async def in_memory(env: Any, key: str | None, **kwargs: Any) -> AsyncIterator[Client]:
    """The in-process client in legacy mode against an McpApp on the test env's runtime and dispatcher."""
    selection = kwargs.pop("selection", None) or Selection(toolsets=tuple(t for t in _all_toolsets()))
    app = McpApp(env.rt, env.dispatcher, selection=selection, key=key, **kwargs)
    async with Client(app.server, mode="legacy") as client:
        yield client


def _all_toolsets() -> tuple[str, ...]:
    from tools.toolsets import TOOLSETS

    return tuple(t.name for t in TOOLSETS)


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1 and an ephemeral port; yields the base URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    # Keep the test runner's signal handlers: uvicorn would swap SIGINT/SIGTERM while it serves.
    server.capture_signals = contextlib.nullcontext  # pyright: ignore[reportAttributeAccessIssue]  # the test replaces it for this run
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


@contextlib.asynccontextmanager
async def http_client(url: str, key: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20.0)) as h, \
            Client(streamable_http_client(url, http_client=h), mode="legacy") as client:
        yield client


@contextlib.asynccontextmanager
async def sse_mcp_client(url: str, key: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with Client(sse_client(url, headers=headers), mode="legacy") as client:
        yield client


def stdio_params(database_url: str, home: Path, key: str | None, *args: str,
                 module: str = "server.cli") -> StdioServerParameters:
    """`python -m server.cli mcp --transport stdio ...` (the `socialpub` console script's entry point)."""
    env = {"SOCIALPUB_HOME": str(home), "SOCIALPUB_DATABASE_URL": database_url, "PYTHONPATH": str(ROOT),
           "SOCIALPUB_RATE_LIMIT": "0"}
    if key:
        env["SOCIALPUB_API_KEY"] = key
    for name in ("PATH", "HOME", "LANG"):
        if name in os.environ:
            env.setdefault(name, os.environ[name])
    return StdioServerParameters(command=sys.executable, args=["-m", module, "mcp", "--transport", "stdio", *args],
                                 env=env, cwd=str(ROOT))
