"""`socialpub serve` serves MCP beside REST on the same port: streamable HTTP at /mcp, SSE at /sse + /messages/.

Every request needs `Authorization: Bearer <API key>` (no single-user default key here: this is the
multi-user server). DNS rebinding protection allows loopback names plus `SOCIALPUB_ALLOWED_HOSTS`.
Clients choose toolsets per connection with the URL: `/mcp?toolsets=all`, `&read_only=true`.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import AsyncIterator

from starlette.routing import BaseRoute

from server.console import oauth
from server.dispatch import Dispatcher
from server.mcp_server.app import McpApp
from server.mcp_server.http import McpHttp
from tools.runtime import Runtime

# `routes` and `lifespan` are called separately by `server.app.build_app`; the transports they share are
# found again by runtime (the entry dies with its runtime).
_by_runtime: dict[int, tuple[weakref.ref[Runtime], McpHttp]] = {}


def routes(rt: Runtime, dispatcher: Dispatcher) -> list[BaseRoute]:
    http = McpHttp(McpApp(rt, dispatcher), allowed_hosts=rt.settings.allowed_hosts,
                   resource_metadata=oauth.resource_metadata_url(rt) if oauth.enabled(rt) else None)
    key = id(rt)
    _by_runtime[key] = (weakref.ref(rt), http)
    weakref.finalize(rt, _by_runtime.pop, key, None)
    return http.routes()


@contextlib.asynccontextmanager
async def lifespan(rt: Runtime) -> AsyncIterator[None]:
    ref, http = _by_runtime.get(id(rt), (None, None))
    if http is None or ref is None or ref() is not rt:
        yield  # this app was built without the MCP routes
        return
    async with http.run():
        yield
