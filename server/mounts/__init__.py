"""Extra ASGI routes served beside the REST API (MCP transports, media assets, public bio pages).

Each module listed in `modules()` may define `routes(rt, dispatcher) -> list[BaseRoute]` and
`lifespan(rt) -> async context manager` (entered while the app runs). `build_app` collects them all; a new
mount module is added to that list (no package scan).
"""

from __future__ import annotations

from types import ModuleType


def modules() -> list[ModuleType]:
    # Imported when the app is built: they import the server.
    from server.mounts import bio, claim, connect, console, mcp, media, oauth

    return [bio, claim, connect, console, mcp, media, oauth]
