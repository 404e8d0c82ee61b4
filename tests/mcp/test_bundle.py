"""The desktop bundle as a host installs it: `socialpub bundle` builds the .mcpb (validated with
@anthropic-ai/mcpb when npx is there), it is unpacked into a scratch folder, and a clean Python (a fresh venv
with no packages) runs the manifest's own command with only the bundle on PYTHONPATH and lists tools."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from server import generate

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

ROOT = generate.ROOT


def _fill(value: str, bundle: Path, user: dict[str, str]) -> str:
    """The host's substitutions: ${__dirname}, ${/}, ${user_config.x} (left as is when the user set nothing)."""
    value = value.replace("${__dirname}", str(bundle)).replace("${/}", os.sep)
    return re.sub(r"\$\{user_config\.([a-z_]+)\}", lambda m: user.get(m.group(1), m.group(0)), value)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    npx = shutil.which("npx") is not None
    run = subprocess.run([sys.executable, "-m", "server.cli", "bundle", "--output", str(out),
                          *([] if npx else ["--no-validate"])], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    (path,) = out.glob("*.mcpb")
    assert path.name == f"socialpub-{generate.package_version()}-{sys.platform}.mcpb"
    assert run.stdout.strip() == str(path)
    return path


async def test_unpacked_bundle_runs_its_manifest_command_with_a_clean_python(built, tmp_path) -> None:
    bundle = tmp_path / "bundle"
    with zipfile.ZipFile(built) as zf:
        zf.extractall(bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest == generate.manifest()
    assert (bundle / manifest["server"]["entry_point"]).is_file()

    # A clean Python: a fresh venv without pip or site packages; nothing of ours or of the test's venv.
    clean = tmp_path / "python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clean)], check=True)
    clean_bin = clean / ("Scripts" if os.name == "nt" else "bin")
    home = tmp_path / "home"
    config = manifest["server"]["mcp_config"]
    base_env = {"PATH": f"{clean_bin}{os.pathsep}/usr/bin:/bin", "HOME": str(tmp_path)}
    user = {"data_dir": str(home)}
    env = {**base_env, **{k: _fill(v, bundle, user) for k, v in config["env"].items()}}
    assert env["PYTHONPATH"] == f"{bundle}:{bundle}/lib"
    command = shutil.which(config["command"], path=base_env["PATH"])
    assert command and Path(command).parent == clean_bin
    probe = subprocess.run([command, "-c", "import pydantic, mcp, server.cli; print(server.cli.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.strip().startswith(str(bundle))  # our code comes from the bundle, not the checkout

    # A database and a key, made by the bundle's own CLI.
    # (the CLI outside `mcp` is not started by the host: it gets only the import path and the data directory)
    init_env = {**base_env, "PYTHONPATH": env["PYTHONPATH"], "SOCIALPUB_HOME": str(home)}
    init = subprocess.run([command, "-m", "server.cli", "init", "--demo", "--json"], env=init_env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr[-2000:]
    user["api_key"] = json.loads(init.stdout)["api_key"]["secret"]
    env = {**base_env, **{k: _fill(v, bundle, user) for k, v in config["env"].items()}}

    params = StdioServerParameters(command=command, args=config["args"], env=env, cwd=str(tmp_path))
    async with Client(params, mode="legacy") as client:
        names = set()
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names |= {t.name for t in page.tools}
            cursor = page.next_cursor
            if cursor is None:
                break
        context = await client.call_tool("get_context", {})
    assert {"get_context", "create_content_item", "preflight_content", "create_schedule"} <= names
    assert not context.is_error and context.structured_content["success"] is True
