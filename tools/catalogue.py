"""The registry: the endpoints of every area in tools/areas.py, in toolset order."""

from __future__ import annotations

from functools import cache

from tools.endpoint import Endpoint
from tools.toolsets import TOOLSETS


@cache
def endpoints() -> tuple[Endpoint, ...]:
    from tools.areas import AREAS  # the areas import modules that use this registry (links, the admin pipeline)

    found = [ep for area in AREAS for ep in area.endpoints]
    order = {t.name: i for i, t in enumerate(TOOLSETS)}
    return tuple(sorted(found, key=lambda e: order.get(e.toolset, len(order))))


def by_name() -> dict[str, Endpoint]:
    return _index(endpoints())


@cache
def _index(found: tuple[Endpoint, ...]) -> dict[str, Endpoint]:
    # keyed by the tuple, not cached bare: a test that patches endpoints() must not leave its index behind
    return {e.name: e for e in found}


def get(name: str) -> Endpoint:
    return by_name()[name]
