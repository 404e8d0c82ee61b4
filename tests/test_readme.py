"""The README's two quick-start commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def blocks() -> list[list[str]]:
    """The commands of the Quick start section's first two bash blocks (the third on walks the API)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"```bash\n(.*?)```", section, re.S)[:2]
    return [[line for line in block.splitlines() if line.strip() and not line.startswith("#")] for block in found]


def quick_start() -> list[str]:
    return [command for block in blocks() for command in block]


def test_exactly_two_commands() -> None:
    assert len(quick_start()) == 2


def test_each_command_is_a_block_of_its_own() -> None:
    """Pasting the serve block must not queue the test command behind it (Ctrl-C would start the suite)."""
    assert [len(block) for block in blocks()] == [1, 1]


def test_ci_runs_the_readme_test_command() -> None:
    assert quick_start()[1] in (ROOT / ".ci" / "run").read_text()


def test_serve_command_installs_inits_and_serves() -> None:
    serve = quick_start()[0]
    assert "init --demo" in serve and serve.rstrip().endswith("serve")


def test_the_quick_start_activates_the_venv_the_docs_commands_need() -> None:
    """Issue 33 item 5: the docs write a bare `socialpub`; the quick start leaves it on PATH (the venv active) and
    says to activate it in a new terminal, and tests/deploy/test_doc_blocks.py runs the docs that way."""
    serve = quick_start()[0]
    assert ". .venv/bin/activate" in serve
    after = serve.split(". .venv/bin/activate", 1)[1]
    assert "socialpub init --demo" in after and ".venv/bin/" not in after
    text = (ROOT / "README.md").read_text()
    assert "In a new terminal, first run `. .venv/bin/activate`" in text
