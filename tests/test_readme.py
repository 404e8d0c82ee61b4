"""The README's two quick-start commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_exactly_two_commands() -> None:
    assert len(quick_start()) == 2


def test_ci_runs_the_readme_test_command() -> None:
    assert quick_start()[1] in (ROOT / ".ci" / "run").read_text()


def test_serve_command_installs_inits_and_serves() -> None:
    serve = quick_start()[0]
    assert "init --demo" in serve and serve.rstrip().endswith("serve")
