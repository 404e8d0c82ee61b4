"""`socialpub bundle` from a regular (non-editable) install, the README's `pip install .`: the project is installed
into a scratch venv (its dependencies seen from the test venv's site-packages) and the venv's
`socialpub bundle` runs as a subprocess outside the source tree. The bundle carries our packages, the
installed version in its name and manifest, the README, and the runtime dependencies without test extras."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from server import bundle, generate

pytestmark = pytest.mark.slow  # a venv, a wheel build and a vendoring pip run

ROOT = generate.ROOT


def test_bundle_builds_from_a_regular_install(tmp_path) -> None:
    # What an sdist holds (pyproject.toml, README.md, the packages), copied so the build leaves no build/ or
    # egg-info in the checkout. The build is isolated: pyproject's setuptools is newer than a venv's bundled one.
    src = tmp_path / "src"
    for name in bundle.packages():
        shutil.copytree(ROOT / name, src / name, ignore=bundle.SKIP)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    # The dependencies come from the test venv: its site-packages as plain path entries after the venv's own (a
    # venv made from a venv gets the base interpreter's site-packages from --system-site-packages, not ours, and
    # plain entries keep the test venv's editable-install hook out).
    own = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    Path(own, "test_venv.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-deps", str(src)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    where = subprocess.run([str(python), "-c", "import server; print(server.__file__)"], capture_output=True,
                           text=True, timeout=60, cwd=tmp_path, check=True).stdout
    assert str(venv) in where and "site-packages" in where  # the installed copy, not the checkout

    out = tmp_path / "dist"
    run = subprocess.run([str(venv / "bin" / "socialpub"), "bundle", "--no-validate", "--output", str(out)],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    (path,) = out.glob("*.mcpb")
    version = subprocess.run([str(python), "-c", "from importlib.metadata import version; print(version('socialpub'))"],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path, check=True).stdout.strip()
    assert path.name == f"socialpub-{version}-{sys.platform}.mcpb" and version != "0.0.0"
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
        readme = zf.read("README.md").decode()
    assert manifest["version"] == version
    for package in ("schemas", "storage", "providers", "tools", "server"):
        assert f"{package}/__init__.py" in names, package
    assert "storage/migrations/env.py" in names  # package data travels with the package
    assert readme == (ROOT / "README.md").read_text()
    assert any(n.startswith("lib/mcp/") for n in names) and not any(n.startswith("lib/pytest/") for n in names)
