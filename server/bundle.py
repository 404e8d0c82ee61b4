"""Build an MCP Bundle (`.mcpb`) for this machine's platform: our packages, the generated manifest, and every
runtime dependency vendored into `lib/` by pip (compiled wheels for this platform and Python), zipped.

What goes in is read from pyproject.toml in a source tree (an editable checkout), and on a regular install from
the distribution's metadata setuptools wrote from it (`importlib.metadata`: top_level.txt, `Requires-Dist`
without extras, the long description as README.md), so the bundle never carries a second list. `npx -y
@anthropic-ai/mcpb validate` checks the manifest when Node is there.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

from server import generate

ROOT = generate.ROOT
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")
MCPB_PACKAGE = "@anthropic-ai/mcpb"


def _source() -> dict | None:
    """pyproject.toml when running from the source tree (an editable install, or none), else None."""
    path = ROOT / "pyproject.toml"
    if path.is_file():
        project = tomllib.loads(path.read_text())
        if project.get("project", {}).get("name") == "socialpub":
            return project
    return None


def _dist() -> metadata.Distribution:
    try:
        return metadata.distribution("socialpub")
    except metadata.PackageNotFoundError:
        raise RuntimeError("socialpub is neither installed nor run from its source tree: `pip install .` first") \
            from None


def packages() -> list[str]:
    """Top-level packages setuptools ships (`[tool.setuptools.packages.find] include`, or the installed
    distribution's top_level.txt written from it)."""
    if (project := _source()) is not None:
        include = project["tool"]["setuptools"]["packages"]["find"]["include"]
        return sorted({pattern.rstrip("*").rstrip(".") for pattern in include})
    top_level = _dist().read_text("top_level.txt") or ""
    return sorted({line.strip() for line in top_level.splitlines() if line.strip()})


def requirements() -> list[str]:
    """The runtime dependencies (`[project] dependencies`, or Requires-Dist without the optional extras)."""
    if (project := _source()) is not None:
        return list(project["project"]["dependencies"])
    return [r for r in _dist().requires or () if "extra ==" not in r.partition(";")[2].replace('"', "")]


def readme() -> str:
    """README.md (installed: the distribution's long description, which setuptools takes from it)."""
    if _source() is not None:
        return (ROOT / "README.md").read_text()
    found = _dist().metadata.json.get("description")  # str (a list only for multiple-use fields)
    return found if isinstance(found, str) else ""


def bundle_name() -> str:
    return f"socialpub-{generate.package_version()}-{sys.platform}.mcpb"


def stage(target: Path, python: str = sys.executable) -> Path:
    """Lay the bundle's files out in `target` (the directory `mcpb pack` would zip)."""
    for name in packages():
        shutil.copytree(ROOT / name, target / name, ignore=SKIP)
    # pip picks the wheels for the interpreter that runs it: the bundle is for this platform and Python.
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
                    "--target", str(target / "lib"), *requirements()], check=True)
    (target / "manifest.json").write_text(json.dumps(generate.manifest(), indent=2, ensure_ascii=False) + "\n")
    (target / "README.md").write_text(readme())
    return target


def validate(manifest: Path) -> str | None:
    """`mcpb validate` on a manifest; None when it passes, else its output. Needs `npx` (Node 18+)."""
    npx = shutil.which("npx")
    if npx is None:
        return "npx not found: install Node 18+ to validate with " + MCPB_PACKAGE
    run = subprocess.run([npx, "-y", MCPB_PACKAGE, "validate", str(manifest)], capture_output=True, text=True,
                         timeout=600)
    return None if run.returncode == 0 else (run.stdout + run.stderr)[-2000:]


def build(out_dir: Path, *, python: str = sys.executable, check: bool = True) -> Path:
    """Stage, optionally validate, and zip to `out_dir/socialpub-<version>-<platform>.mcpb`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="socialpub-bundle-") as tmp:
        staged = stage(Path(tmp) / "bundle", python)
        if check:
            problem = validate(staged / "manifest.json")
            if problem:
                raise RuntimeError(f"{MCPB_PACKAGE} validate failed: {problem}")
        out = out_dir / bundle_name()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(staged.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(staged).as_posix())
    return out
