"""The registry: every `ENDPOINTS` list of the modules in this package, in toolset order."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import tools
from tools.endpoint import Endpoint
from tools.toolsets import TOOLSETS


@cache
def endpoints() -> tuple[Endpoint, ...]:
    found: list[Endpoint] = []
    for module in sorted(pkgutil.iter_modules(tools.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"tools.{module.name}")
        found.extend(getattr(mod, "ENDPOINTS", ()))
    order = {t.name: i for i, t in enumerate(TOOLSETS)}
    return tuple(sorted(found, key=lambda e: order.get(e.toolset, len(order))))


@cache
def by_name() -> dict[str, Endpoint]:
    return {e.name: e for e in endpoints()}


def get(name: str) -> Endpoint:
    return by_name()[name]
