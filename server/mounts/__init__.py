"""Extra ASGI routes served beside the REST API (MCP transports, media assets, public bio pages).

Each module here may define `routes(rt, dispatcher) -> list[BaseRoute]` and
`lifespan(rt) -> async context manager` (entered while the app runs). `build_app` collects them all.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.{m.name}") for m in sorted(pkgutil.iter_modules(__path__),
                                                                             key=lambda m: m.name)]
