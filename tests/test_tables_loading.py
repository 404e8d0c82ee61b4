"""A process loads only the table modules it imports (storage/tables/__init__.py), and a flush sorts the loaded
tables by their foreign keys, which must resolve. So every table module imports, directly or through another
table module, the modules of the tables its foreign keys name: any set of table modules a process loads is then
closed under foreign keys."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from sqlmodel import SQLModel

import storage.tables

PACKAGE = Path(storage.tables.__file__).parent
ROOT = PACKAGE.parent.parent


def table_imports(module: str) -> set[str]:
    """The `storage.tables.*` modules a table module imports at its top level (AST, not by running it)."""
    tree = ast.parse((PACKAGE / f"{module.rsplit('.', 1)[1]}.py").read_text())
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "storage.tables":
            out |= {f"storage.tables.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("storage.tables."):
            out.add(node.module or "")
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("storage.tables.")}
    return out


def closure(module: str) -> set[str]:
    seen, todo = {module}, [module]
    while todo:
        for dep in table_imports(todo.pop()) - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def unresolved_by_module() -> dict[str, list[str]]:
    """Per table module: the foreign keys whose table lies outside what importing that module loads."""
    storage.tables.load_all()
    module_of = {m.local_table: m.class_.__module__ for m in SQLModel._sa_registry.mappers}
    out: dict[str, list[str]] = {}
    for mapper in SQLModel._sa_registry.mappers:
        module = mapper.class_.__module__
        loaded = closure(module)
        for fk in mapper.local_table.foreign_keys:
            if module_of[fk.column.table] not in loaded:
                out.setdefault(module, []).append(fk.target_fullname)
    return out


def test_every_table_module_loads_its_foreign_key_targets() -> None:
    assert unresolved_by_module() == {}
    assert len(SQLModel._sa_registry.mappers) > 40  # load_all() loaded them all


def test_the_check_sees_a_missing_import(monkeypatch) -> None:
    """The check can fail: without its import of `brands`, `networks` names a table it does not load."""
    real = table_imports
    monkeypatch.setattr(sys.modules[__name__], "table_imports",
                        lambda m: real(m) - {"storage.tables.brands"} if m == "storage.tables.networks" else real(m))
    assert "storage.tables.networks" in unresolved_by_module()


def test_importing_the_package_loads_no_table() -> None:
    code = ("import sys, storage.tables.accounts; "
            "print(sorted(m for m in sys.modules if m.startswith('storage.tables.')))")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['storage.tables._base', 'storage.tables.accounts']"
