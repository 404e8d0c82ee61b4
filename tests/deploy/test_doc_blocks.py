"""Docs that test themselves: every fenced shell block of README.md and docs/*.md runs, in order, one shell
session per file, against a scratch SOCIALPUB_HOME (demo workspace) and a running `socialpub serve`; blocks
marked `<!-- doc-test: skip REASON -->` are reported as skipped with their reason (tests/deploy/doc_blocks.py)."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.deploy.doc_blocks import DOC_FILES, ROOT, blocks, chained, script, stray_markers
from tests.deploy.support import Deployment, demo_deployment
from tests.media.support import image_bytes, video_bytes

pytestmark = pytest.mark.slow

RUN_FILES = [p for p in DOC_FILES if any(b.skip is None for b in blocks(p))]
SKIPPED = [b for p in DOC_FILES for b in blocks(p) if b.skip is not None]
FILE_TIMEOUT = 240

SITE = b"""<!doctype html><html><head><title>Bean There</title>
<meta name="description" content="Small-batch coffee roasters in Paris: espresso, filter and beans to go.">
<meta name="theme-color" content="#6B3E26"></head><body><h1>Bean There</h1>
<p>We roast coffee every morning in our Paris cafe. Espresso, pour-over, cold brew and fresh beans.</p>
<img src="roastery.jpg" width="1200" alt="The roastery"><img src="beans.jpg" width="1200" alt="Beans">
</body></html>"""


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture
def website(tmp_path: Path) -> Iterator[str]:
    """A brand website on 127.0.0.1 (the docs' https://beanthere.example)."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_bytes(SITE)
    for name in ("roastery.jpg", "beans.jpg"):  # images the scan imports and the pipeline attaches
        (root / name).write_bytes(image_bytes(1200, 1200, "JPEG"))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # pyright: ignore[reportAttributeAccessIssue]  # an attribute the test attaches to a stdlib object
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict]]:
    """`socialpub init --demo` once for the module: each doc's session starts on a copy of this home (its database
    and vault key, nothing in them names the directory), as its own `init --demo` would leave it, without paying a
    CLI process (~1.3 s of CPU) per doc."""
    with demo_deployment("sqlite", tmp_path_factory.mktemp("demo-home")) as demo:
        yield demo.home, demo.printed


@pytest.mark.parametrize("path", RUN_FILES, ids=rel)
def test_doc_blocks_run(path: Path, tmp_path: Path, website: str, demo_home: tuple[Path, dict]) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    shutil.copytree(demo_home[0], home)
    work.mkdir()
    # The files the docs' examples name, in the directory the blocks run in.
    (work / "photo.jpg").write_bytes(image_bytes(1200, 900, "JPEG"))
    (work / "clip.mp4").write_bytes(video_bytes(320, 568, seconds=1.0))
    # The server may fetch the local website (a loopback address is refused otherwise).
    dep = Deployment(home, f"sqlite+aiosqlite:///{home / 'socialpub.db'}",
                     extra_env={"SOCIALPUB_FETCH_ALLOW_HOSTS": "127.0.0.1"})
    demo = demo_home[1]
    key, brand = demo["api_key"]["secret"], demo["brands"][0]["id"]
    base = dep.serve()
    try:
        targets = httpx.get(f"{base}/v1/brands/{brand}/targets", headers={"Authorization": f"Bearer {key}"},
                            timeout=30).json()["data"]["targets"]
        x = next(t["integration_id"] for t in targets if t["platform"] == "x")
        # The blocks run as a user runs them after the README's quick start (issue 33 item 5): `socialpub` is not
        # on PATH until the shell sources `.venv/bin/activate` in the project folder (here a link to this
        # venv), and the CLI's commands act on the scratch home.
        venv_bin = Path(sys.executable).parent
        path_var = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if Path(d) != venv_bin)
        env = dep.env(SOCIALPUB_PUBLIC_URL=base, PATH=path_var)
        env.pop("VIRTUAL_ENV", None)
        prelude = activation(work)
        values = {"key": key, "base": base, "brand": brand, "integration": x, "site": website}
        (work / "doc.sh").write_text(prelude + script(path, values))
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", str(work / "doc.sh")], cwd=work, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=FILE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            started = [line for line in err.splitlines() if line.startswith("DOC-BLOCK-START")]
            pytest.fail(f"{rel(path)}: timed out after {FILE_TIMEOUT} s in {started[-1:] or 'setup'}\n{err[-3000:]}")
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        (work / "doc.out").write_text(out)  # kept under pytest's tmp_path for a look after a failure
        (work / "doc.err").write_text(err)
        failed = [line for line in err.splitlines() if line.startswith("DOC-BLOCK-FAILED")]
        assert proc.returncode == 0 and not failed and "DOC-BLOCKS-DONE" in err, (
            f"{failed[0] if failed else rel(path) + ': the shell session failed'}\n"
            f"--- stdout (tail)\n{out[-3000:]}\n--- stderr (tail)\n{err[-3000:]}")
    finally:
        dep.stop()


def activation(work: Path) -> str:
    """The README's step for a new terminal, `. .venv/bin/activate`, in a folder whose `.venv` is this test's venv;
    outside a venv (no activate script) the interpreter's bin directory is put on PATH instead."""
    venv = Path(sys.prefix)
    if (venv / "bin" / "activate").exists():
        (work / ".venv").symlink_to(venv, target_is_directory=True)
        # `socialpub` must not be found before it: the docs rely on the activation, not on the test's PATH.
        return "! command -v socialpub >/dev/null || { echo 'socialpub on PATH before activation' >&2; exit 3; }\n" \
               ". .venv/bin/activate\n"
    return f'export PATH="{Path(sys.executable).parent}{os.pathsep}$PATH"\n'


@pytest.mark.parametrize("path", DOC_FILES, ids=rel)
def test_runnable_blocks_have_no_and_chains(path: Path) -> None:
    found = {b.where: chained(b) for b in blocks(path) if b.skip is None and chained(b)}
    assert not found, f"split these `&&` chains into lines (a failure inside one would go unnoticed): {found}"


@pytest.mark.parametrize("block", SKIPPED, ids=lambda b: b.where)
def test_doc_block_skipped(block) -> None:
    pytest.skip(f"{block.where}: {block.skip}")


@pytest.mark.parametrize("path", DOC_FILES, ids=rel)
def test_skip_markers_sit_directly_above_a_shell_block(path: Path) -> None:
    assert stray_markers(path) == [], f"{rel(path)}: a doc-test marker must be the line right above a fence"


def test_mcp_quick_start_key_reaches_the_default_tools_but_publishing() -> None:
    """docs/mcp.md's agent key: a scope missing there hides its tools without a word (they are not listed)."""
    from server.mcp_server.tools import specs
    from tools.toolsets import DEFAULT_TOOLSETS

    quick_start = blocks(ROOT / "docs" / "mcp.md")[0].code
    scopes = set(quick_start.split("--scopes ", 1)[1].split()[0].split(","))
    needed = {s for spec in specs().values() if spec.endpoint.toolset in DEFAULT_TOOLSETS
              for s in spec.endpoint.scopes}
    assert needed - scopes == {"publish:execute", "integrations:write"}, sorted(needed - scopes)


def test_runner_names_the_failing_block_and_honours_markers(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("# A doc\n\n```bash\nSEEN=first\n```\n\n<!-- doc-test: skip not here -->\n```sh\nexit 7\n```\n\n"
                   "```console\n$ echo \"$SEEN\" > seen.txt\noutput line, not a command\n$ curl -s http://127.0.0.1:9/\n"
                   "```\n\n```bash\ntouch never.txt\n```\n")
    found = blocks(doc)
    assert [(b.line, b.lang, b.skip) for b in found] == [(3, "bash", None), (8, "sh", "not here"),
                                                        (12, "console", None), (18, "bash", None)]
    run = subprocess.run(["bash", "-c", script(doc, {})], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert f"DOC-BLOCK-FAILED {doc}:12" in run.stderr  # the unreachable server, not the skipped `exit 7`
    assert (tmp_path / "seen.txt").read_text() == "first\n"  # one session: the variable survived
    assert not (tmp_path / "never.txt").exists()
