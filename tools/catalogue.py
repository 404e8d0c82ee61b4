"""The registry read at call time: the endpoints of every area in tools/areas.py, in toolset order, and the
areas' content-usage probes. Areas reach other areas' declarations only through here (links by endpoint name,
tools/links.py; "is this content item in use?", tools/content/usage.py): the one late-bound lookup, so no area
imports tools/areas.py (which imports every area; tests/test_areas.py keeps area imports acyclic)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from tools.endpoint import Endpoint
from tools.toolsets import TOOLSETS

if TYPE_CHECKING:
    from tools.content.usage import UsageProbe


@cache
def endpoints() -> tuple[Endpoint, ...]:
    from tools.areas import AREAS  # the areas import modules that use this registry (links, the admin pipeline)

    found = [ep for area in AREAS for ep in area.endpoints]
    order = {t.name: i for i, t in enumerate(TOOLSETS)}
    return tuple(sorted(found, key=lambda e: order.get(e.toolset, len(order))))


def by_name() -> dict[str, Endpoint]:
    # Rebuilt when endpoints() gives another tuple, not cached bare: a test that patches endpoints() must not leave
    # its index behind. Compared by identity: hashing the tuple (a cache key) cost ~3 µs per call, and every
    # link (tools/links.py) asks.
    found = endpoints()
    last = _INDEX[0]
    if last is None or last[0] is not found:
        last = _INDEX[0] = (found, {e.name: e for e in found})
    return last[1]


_INDEX: list[tuple[tuple[Endpoint, ...], dict[str, Endpoint]] | None] = [None]


def get(name: str) -> Endpoint:
    return by_name()[name]


def usage_probes() -> tuple[UsageProbe, ...]:
    from tools.areas import usage_probes  # read at call time, as endpoints() is

    return usage_probes()
