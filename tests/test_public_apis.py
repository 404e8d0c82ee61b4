"""Public APIs only (issue 29, item 1): no project module imports a `_`-prefixed module or name of another package,
or reads a `_`-prefixed attribute that is not the project's own.

The rules, checked on the AST of every project .py (`PROJECT_DIRS`):

- imports: `import a._b`, `from a._b import c` and `from a import _b` are refused when `a` is a third-party
  package (neither the project's nor the standard library's);
- attributes: `x._name` (and `getattr(x, "_name")` with a literal name) is refused when `x` is a name bound to an
  import from a third-party package, whatever `_name` is; otherwise it is refused when `_name` is defined nowhere in
  the project (a `self._name =` or `cls._name =` assignment, a class attribute or method, a `__slots__` entry, a
  module-level name, a keyword argument of a project call) — such an attribute can only be another package's.
  Dunders (`__dict__`) are public protocol; a few documented APIs are spelled with an underscore
  (`PUBLIC_UNDERSCORE_NAMES`).

The standard library is outside the rule, as issue 29 words it ("a third-party package"): its private names move
only with the interpreter the project pins, not with an unbounded dependency. The one the project uses is argparse's
`_SubParsersAction` (the lazy CLI subclasses it, server/cli.py; typeshed names it as `add_subparsers`' return type).

A project attribute of the same name as a dependency's private one (both call it `_conn`) would pass the second
rule; the first still catches it through a module, and review catches the rest. `ALLOWED` lists what is knowingly
left, each with its reason; an entry that no longer matches fails, so the list only shrinks.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROJECT_DIRS = ("server", "tools", "storage", "providers", "schemas", "bench")
PROJECT_PACKAGES = frozenset({*PROJECT_DIRS, "tests"})
STDLIB = frozenset(sys.stdlib_module_names)

# Underscore names that are documented public API.
PUBLIC_UNDERSCORE_NAMES = frozenset({
    # collections.namedtuple's documented methods and attributes ("To prevent conflicts with field names, the
    # method and attribute names start with an underscore").
    "_asdict", "_replace", "_fields", "_field_defaults", "_make",
})

# (path, rendered violation) -> reason. Knowingly left; every entry must still match.
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _third_party(module: str | None, level: int) -> bool:
    return level == 0 and module is not None and module.split(".")[0] not in PROJECT_PACKAGES | STDLIB


def _stdlib(module: str | None, level: int) -> bool:
    return level == 0 and module is not None and module.split(".")[0] in STDLIB


def project_names(trees: list[ast.Module]) -> set[str]:
    """Every `_`-prefixed name the project defines: attributes it assigns (`self._x = ...`, `obj._x = ...` in its
    own code), class attributes and methods, `__slots__` entries, module-level names, keyword arguments."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if isinstance(node, ast.ClassDef):
                    for stmt in node.body:
                        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                            [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                        for target in targets:
                            if isinstance(target, ast.Name):
                                names.add(target.id)
                                if (target.id == "__slots__" and isinstance(stmt, ast.Assign)
                                        and isinstance(stmt.value, (ast.Tuple, ast.List))):
                                    names.update(e.value for e in stmt.value.elts
                                                 if isinstance(e, ast.Constant) and isinstance(e.value, str))
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    return {n for n in names if _private(n)}


def _imported_names(tree: ast.Module, outside: Callable[[str | None, int], bool]) -> set[str]:
    """Names this module binds to something imported from the modules `outside` selects."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if outside(alias.name, 0):
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and outside(node.module, node.level):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def check_tree(tree: ast.Module, path: str, own: set[str]) -> list[Violation]:
    """The violations in one module, given the private names the project defines (`project_names`)."""
    found: list[Violation] = []
    imported, stdlib = _imported_names(tree, _third_party), _imported_names(tree, _stdlib)

    def attribute(node: ast.expr, base: ast.expr, name: str) -> None:
        if not _private(name) or name in PUBLIC_UNDERSCORE_NAMES:
            return
        text = f"{ast.unparse(base)}.{name}"
        if isinstance(base, ast.Name) and base.id in stdlib:
            return  # the standard library's (see above)
        if isinstance(base, ast.Name) and base.id in imported:
            found.append(Violation(path, node.lineno, f"private attribute of another package: {text}"))
        elif name not in own:
            found.append(Violation(path, node.lineno, f"private attribute the project does not define: {text}"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _third_party(alias.name, 0) and any(_private(part) for part in alias.name.split(".")):
                    found.append(Violation(path, node.lineno, f"import of a private module: import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and _third_party(node.module, node.level):
            assert node.module is not None
            if any(_private(part) for part in node.module.split(".")):
                found.append(Violation(path, node.lineno, f"import from a private module: from {node.module}"))
            for alias in node.names:
                if _private(alias.name):
                    found.append(Violation(path, node.lineno,
                                           f"import of a private name: from {node.module} import {alias.name}"))
        elif isinstance(node, ast.Attribute):
            attribute(node, node.value, node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2 \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            attribute(node, node.args[0], node.args[1].value)
    return found


def project_files() -> list[Path]:
    return sorted(p for d in PROJECT_DIRS for p in (ROOT / d).rglob("*.py") if "migrations/versions" not in str(p))


def check_project() -> list[Violation]:
    files = project_files()
    trees = {f.relative_to(ROOT).as_posix(): ast.parse(f.read_text(), str(f)) for f in files}
    own = project_names(list(trees.values()))
    return [v for path, tree in trees.items() for v in check_tree(tree, path, own)]


def check_snippet(source: str, project_source: str = "") -> list[str]:
    """The violations in `source`, as if it were a project module beside one holding `project_source`."""
    tree, other = ast.parse(source), ast.parse(project_source)
    return [v.text for v in check_tree(tree, "snippet.py", project_names([tree, other]))]


def test_no_private_apis_of_other_packages() -> None:
    found = check_project()
    left = [v for v in found if (v.path, v.text) not in ALLOWED]
    assert not left, "private internals of other packages:\n" + "\n".join(map(str, left))
    stale = set(ALLOWED) - {(v.path, v.text) for v in found}
    assert not stale, f"allow-list entries that no longer match (remove them): {sorted(stale)}"


def test_the_walk_covers_the_project() -> None:
    paths = {f.relative_to(ROOT).as_posix() for f in project_files()}
    assert {"server/dispatch.py", "storage/db.py", "tools/endpoint.py", "bench/rest_cpu.py"} <= paths


def test_the_lists_name_their_reasons() -> None:
    assert all(reason.strip() for reason in ALLOWED.values())


def test_planted_private_imports_are_refused() -> None:
    assert check_snippet("import starlette._utils") == ["import of a private module: import starlette._utils"]
    assert check_snippet("from mcp.shared._context_streams import create_context_streams") == [
        "import from a private module: from mcp.shared._context_streams"]
    assert check_snippet("from starlette import _utils") == ["import of a private name: from starlette import _utils"]
    assert check_snippet("from sqlalchemy.orm import _private_helper") == [
        "import of a private name: from sqlalchemy.orm import _private_helper"]
    # The project's own private modules and names are its business.
    assert check_snippet("from storage.tables._base import Stamped\nfrom tools.media.routes import _get") == []
    assert check_snippet("from . import _local") == []
    # The standard library is outside the rule.
    assert check_snippet("import argparse\nclass Sub(argparse._SubParsersAction):\n    pass\nimport _thread") == []


def test_planted_private_attributes_are_refused() -> None:
    # Another package's private attribute, on whatever object: the project never defines the name.
    assert check_snippet("def f(compiled):\n    return compiled._bind_processors") == [
        "private attribute the project does not define: compiled._bind_processors"]
    assert check_snippet("def f(session):\n    session.sync_session._autoflush()") == [
        "private attribute the project does not define: session.sync_session._autoflush"]
    assert check_snippet("def f(c):\n    return getattr(c, '_conn')") == [
        "private attribute the project does not define: c._conn"]
    # Through a module imported from outside: refused even when the project has a name like it.
    assert check_snippet("import sqlalchemy\nx = sqlalchemy._private", "class A:\n    _private = 1") == [
        "private attribute of another package: sqlalchemy._private"]
    # On `self` too, when the class reads a base class's private state.
    assert check_snippet("from starlette.routing import Router\nclass R(Router):\n    def f(self):\n"
                         "        return self._base_app") == [
        "private attribute the project does not define: self._base_app"]


def test_the_projects_own_private_names_pass() -> None:
    source = """
class Box:
    __slots__ = ("_held",)
    _limit = 3

    def __init__(self):
        self._held = []

    def _grow(self):
        return len(self._held) < self._limit

def merge(a, b):
    return a._held + b._held if a._grow() else None

_CACHE = {}
x = Box()._grow
"""
    assert check_snippet(source) == []
    assert check_snippet("from collections import namedtuple\nP = namedtuple('P', 'a')\nq = P(1)._replace(a=2)") == []
    assert check_snippet("class A:\n    pass\nd = A().__dict__") == []
