"""Running the MCP server on its own: stdio (one key, from SOCIALPUB_API_KEY) or an HTTP app with only the
MCP transports (the single-user local setup, or a multi-user MCP-only server)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Literal

import anyio

from server.mcp_server.app import McpApp
from server.mcp_server.selection import PAGE_SIZE, Selection
from server.mcp_server.stdio import stdio_streams
from storage.migrate import check_current

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from tools.runtime import Runtime


# The in-process worker of a stdio server starts this long after the session: its jobs and ticks are the areas'
# (the whole catalogue), whose import takes about as long as the rest of the start and would hold the event loop
# while an MCP host, which lists tools right after spawning the server, waits for its first tools/list.
WORKER_START_DELAY = 2.0


async def _worker_after(rt: Runtime, delay: float) -> None:
    await anyio.sleep(delay)
    from server.worker import Worker

    await Worker(rt).run_forever()


async def run_stdio(rt: Runtime, selection: Selection, key: str | None, page_size: int = PAGE_SIZE) -> None:
    """Serve one MCP connection on stdin/stdout until the client closes it. stdout carries only protocol: the
    transport diverts file descriptor 1 to stderr while it serves (server/mcp_server/stdio.py), and logging
    goes to stderr."""
    try:
        await check_current(rt.db)
        app = McpApp(rt, selection=selection, key=key, page_size=page_size, stdio=True)
        options = app.server.create_initialization_options()
        await app.fixed_identity()  # the key is checked before initialize: a bad one is said in its instructions
        if app.key_problem:
            options = options.model_copy(update={"instructions": f"{app.key_problem}\n\n{options.instructions}"})
        async with stdio_streams() as (read_stream, write_stream), anyio.create_task_group() as tg:
            if rt.settings.worker_enabled:
                tg.start_soon(_worker_after, rt, WORKER_START_DELAY)
            await app.server.run(read_stream, write_stream, options)
            tg.cancel_scope.cancel()
    finally:
        await rt.close()


def http_app(rt: Runtime, *, transport: Literal["http", "sse"], selection: Selection,
             default_key: str | None = None, allowed_hosts: Sequence[str] = (),
             run_worker: bool | None = None, page_size: int = PAGE_SIZE) -> Starlette:
    """An ASGI app serving one MCP transport (streamable HTTP at /mcp, or SSE at /sse + /messages/)."""
    # Imported here: stdio (run_stdio) starts without the HTTP transports and the REST module.
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    from server.mcp_server.http import McpHttp
    from server.rest import CatchAll
    from server.worker import Worker

    http = McpHttp(McpApp(rt, selection=selection, page_size=page_size), allowed_hosts=allowed_hosts, default_key=default_key,
                   streamable=transport == "http", sse=transport == "sse")
    worker_on = rt.settings.worker_enabled if run_worker is None else run_worker

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await check_current(rt.db)
        async with http.run(), anyio.create_task_group() as tg:
            if worker_on:
                tg.start_soon(Worker(rt).run_forever)
            yield
            tg.cancel_scope.cancel()

    app = Starlette(routes=http.routes(), middleware=[Middleware(CatchAll)], lifespan=lifespan)
    app.state.mcp_http = http
    return app
