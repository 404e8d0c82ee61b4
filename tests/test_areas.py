"""tools/areas.py is the one list of areas: every endpoint, job and tick a module under tools/ declares is
registered there, and nothing is registered twice. Each endpoint is declared in its toolset's package or module,
and areas import each other without a cycle."""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
from collections.abc import Iterator, Mapping
from pathlib import Path

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


def test_every_endpoint_is_declared_in_its_toolsets_package_or_module() -> None:
    # Knowing a toolset's name is enough to find an endpoint's declaration (docs/architecture.md).
    for module in _modules():
        for ep in getattr(module, "ENDPOINTS", ()):
            home = module.__name__.split(".")[1]
            assert home == ep.toolset, f"{module.__name__} declares {ep.name} of toolset {ep.toolset}: move it to tools/{ep.toolset}"


# -- imports between areas: no cycle ----------------------------------------------------------------------------

TOOLS = Path(tools.__file__).parent
# The registry: `tools.areas` imports every area and `tools.catalogue` reads it at call time, so an area reaches
# another's declarations by name (links, usage probes) without importing it. Only these may import `tools.areas`.
REGISTRY_READERS = {"tools.catalogue", "tools.operator.demo"}


def _module_names() -> dict[str, Path]:
    found = {}
    for path in TOOLS.rglob("*.py"):
        parts = ("tools", *path.relative_to(TOOLS).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(tree: ast.Module) -> Iterator[tuple[str, tuple[str, ...]]]:
    """(module, names) of every absolute import, at any depth (a function's import is a dependency too), except
    under `if TYPE_CHECKING:` (annotations only)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            yield from ((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, tuple(alias.name for alias in node.names)
        stack.extend(ast.iter_child_nodes(node))


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules under tools/ it imports."""
    modules = _module_names()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, names in _imports(ast.parse(path.read_text(), str(path))):
            if not target.startswith("tools"):
                continue
            found = {f"{target}.{n}" for n in names if f"{target}.{n}" in modules} or {resolve(target)}
            graph[module].update(t for t in found if t and t != module)
    return graph


def _area_of(module: str) -> str | None:
    """The area package or module (or `services`, `operator`) a module belongs to; None for the framework."""
    parts = module.split(".")
    return None if len(parts) < 2 or parts[1] in FRAMEWORK else parts[1]


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def area_cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Cycles among the modules of areas (framework modules left out), then among areas as wholes."""
    modules = {m: {t for t in ts if _area_of(t)} for m, ts in graph.items() if _area_of(m)}
    areas_graph: dict[str, set[str]] = {}
    for m, ts in modules.items():
        own = _area_of(m)
        assert own is not None  # `modules` holds area modules only
        areas_graph.setdefault(own, set()).update(a for t in ts if (a := _area_of(t)) is not None and a != own)
    return cycles(modules) + cycles(areas_graph)


def test_areas_import_each_other_without_a_cycle() -> None:
    found = area_cycles(import_graph())
    assert not found, f"import cycles among areas (call a service function of the other area instead): {found}"


def test_only_the_registry_readers_import_the_list_of_areas() -> None:
    importers = {m for m, ts in import_graph().items() if "tools.areas" in ts}
    assert importers <= REGISTRY_READERS, f"{sorted(importers - REGISTRY_READERS)} import tools.areas: read it through tools.catalogue"


def test_the_cycle_check_finds_a_planted_cycle() -> None:
    graph = import_graph()
    assert "tools.schedules.rows" in graph["tools.publishing.runs"]
    planted = {**graph, "tools.schedules.rows": graph["tools.schedules.rows"] | {"tools.publishing.runs"}}
    assert area_cycles(planted), "a module cycle went unseen"
    planted = {**graph, "tools.context.plans": graph["tools.context.plans"] | {"tools.schedules.rules_engine"}}
    assert any("context" in c and "schedules" in c for c in area_cycles(planted)), "an area cycle went unseen"
