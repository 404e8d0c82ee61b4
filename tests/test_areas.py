"""tools/areas.py is the one list of areas: every endpoint, job and tick a module under tools/ declares is
registered there, and nothing is registered twice."""

from __future__ import annotations

import importlib
import pkgutil

import tools
from tools import areas, catalogue


def _modules():
    for info in pkgutil.walk_packages(tools.__path__, prefix="tools."):
        yield importlib.import_module(info.name)


def test_every_declared_endpoint_job_and_tick_is_registered() -> None:
    registered = set(map(id, catalogue.endpoints()))
    jobs, ticks = areas.jobs(), areas.ticks()
    for module in _modules():
        for ep in getattr(module, "ENDPOINTS", ()):
            assert id(ep) in registered, f"{module.__name__} declares {ep.name}, which tools/areas.py does not list"
        for kind, handler in getattr(module, "JOBS", {}).items():
            assert jobs.get(kind) is handler, f"{module.__name__} declares job {kind!r}; list it in tools/areas.py"
        for tick in getattr(module, "TICKS", ()):
            assert tick in ticks, f"{module.__name__} declares tick {tick.__name__}; list it in tools/areas.py"


def test_nothing_is_registered_twice() -> None:
    names = [ep.name + (ep.variant or "") for ep in catalogue.endpoints()]
    assert len(names) == len(set(names))
    kinds = [kind for area in areas.AREAS for kind in area.jobs]
    assert len(kinds) == len(set(kinds))
    assert len(areas.ticks()) == len(set(areas.ticks()))
    assert len({a.name for a in areas.AREAS}) == len(areas.AREAS)


def test_each_area_names_a_package_or_module_under_tools() -> None:
    for area in areas.AREAS:
        assert importlib.util.find_spec(f"tools.{area.name}") is not None, area.name


FRAMEWORK = {"__init__", "areas", "catalogue", "endpoint", "links", "runtime", "tool_schemas", "toolsets"}
SHARED = {"services", "operator"}  # shared services; the operator CLI back end


def test_tools_top_level_holds_only_the_framework_and_the_areas() -> None:
    top = {info.name for info in pkgutil.iter_modules(tools.__path__)}
    stray = top - FRAMEWORK - SHARED - {area.name for area in areas.AREAS}
    assert not stray, f"tools/ holds {sorted(stray)}: put it in an area package or tools/services/"
