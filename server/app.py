"""Assemble one process: runtime, dispatcher, the REST app (MCP transports mount here too), the worker."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from starlette.applications import Starlette
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from schemas.settings import Settings
from server import health, metrics, mounts
from server.dispatch import Dispatcher
from server.rest import rest_app
from server.worker import Worker
from storage.migrate import check_current
from tools.runtime import Runtime

log = logging.getLogger("socialpub")

def build_app(rt: Runtime, *, run_worker: bool | None = None, check_schema: bool = True,
              dispatcher: Dispatcher | None = None, extra_routes: list[Any] | None = None,
              extra_lifespans: list[Any] | None = None) -> Starlette:
    dispatcher = dispatcher or Dispatcher(rt)
    worker_on = rt.settings.worker_enabled if run_worker is None else run_worker

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if check_schema:
            await check_current(rt.db)
        async with contextlib.AsyncExitStack() as stack:
            for enter in [*lifespans, *(extra_lifespans or [])]:
                await stack.enter_async_context(enter(rt))
            stack.push_async_callback(dispatcher.limiter.aclose)
            async with anyio.create_task_group() as tg:
                worker = Worker(rt) if worker_on else None
                if worker is not None:
                    tg.start_soon(worker.run_forever)
                yield
                if worker is not None:  # shutdown (uvicorn got SIGTERM/SIGINT): the worker's graceful stop
                    worker.stop()
                    with anyio.move_on_after(worker.grace + 1):
                        await worker.stopped.wait()
                tg.cancel_scope.cancel()

    # Operations routes (server/health.py, server/metrics.py): outside /v1, never behind an API key.
    routes = [*health.routes(rt, in_process_worker=worker_on), *metrics.routes(rt), *(extra_routes or [])]
    lifespans = []
    for module in mounts.modules():
        if hasattr(module, "routes"):
            routes.extend(module.routes(rt, dispatcher))
        if hasattr(module, "lifespan"):
            lifespans.append(module.lifespan)
    app = rest_app(dispatcher, extra_routes=routes, lifespan=lifespan)
    # Outermost: every route and limit sees the client a trusted proxy named (the rightmost X-Forwarded-For entry
    # that is not itself a trusted proxy), or the peer when the peer is not a trusted proxy. Here rather than in
    # uvicorn's config so that `serve` and an in-process app resolve clients alike; `serve` runs uvicorn with its
    # own proxy handling off, so the headers are read once.
    app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=list(rt.settings.trusted_proxies))
    app.state.runtime = rt
    app.state.dispatcher = dispatcher
    return app


def app_from_env() -> Starlette:
    """ASGI factory for `uvicorn --factory server.app:app_from_env`."""
    return build_app(Runtime.from_settings(Settings.from_env()))
