"""The import direction of DESIGN.md: schemas <- storage <- tools <- server, schemas <- providers <- tools.
Nothing below `server` imports Starlette, MCP, uvicorn or the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
ALLOWED = {
    "schemas": {"schemas"},
    "storage": {"schemas", "storage"},
    "providers": {"schemas", "providers"},
    "tools": {"schemas", "storage", "providers", "tools"},
    "server": {"schemas", "storage", "providers", "tools", "server"},
}
ADAPTER_LIBS = {"starlette", "mcp", "mcp_types", "uvicorn", "sse_starlette"}


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_import_direction(package: str) -> None:
    project = set(ALLOWED)
    for path in (ROOT / package).rglob("*.py"):
        if "migrations" in path.parts:
            continue
        used = imports(path)
        wrong = (used & project) - ALLOWED[package]
        assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"
        if package != "server":
            assert not used & ADAPTER_LIBS, f"{path.relative_to(ROOT)} imports {sorted(used & ADAPTER_LIBS)}"


def test_docs_name_only_files_that_exist() -> None:
    """Docs point readers at tests, benches and modules by path; a move must carry the docs along."""
    import re

    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {(page.name, ref) for page in pages
             for ref in re.findall(r"\b((?:tests|bench|tools|server|storage|providers|schemas)/[\w/.-]+\.py)\b",
                                   page.read_text())}
    missing = sorted(f"{page}: {ref}" for page, ref in named if not (ROOT / ref).exists())
    assert not missing, "docs name files that do not exist:\n" + "\n".join(missing)
