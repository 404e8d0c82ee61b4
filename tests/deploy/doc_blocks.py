"""The fenced shell blocks of README.md and docs/*.md, as tests/deploy/test_doc_blocks.py runs them.

Convention (docs/operations.md "Docs that test themselves"):
- ```bash, ```sh and ```console blocks are commands users copy; in ```console blocks only `$ ` lines are
  commands, the rest is output.
- `<!-- doc-test: skip REASON -->` on the line directly above a fence skips that block, showing REASON.
- The blocks of one file run in order in one shell session (later blocks use variables set by earlier ones),
  under `set -eo pipefail`, with `curl` failing on HTTP errors; the first failing command fails the file's test
  naming the block's file and line.
- Placeholders are replaced before running (`PLACEHOLDERS`).
- A runnable block writes no `a && b` chains: bash does not stop at a failure inside such a chain, so the
  test could not see it (`chained` finds them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_LANGS = ("bash", "sh", "console")
SKIP = re.compile(r"^<!--\s*doc-test:\s*skip\s+(?P<reason>.+?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_-]*)\s*$")

# What a documented placeholder stands for: literal text in a block -> the name of the value the test provides
# (substituted as text, so placeholders inside quotes work too).
PLACEHOLDERS = {
    "socialpub_live_...": "key",                     # the full-scope key `socialpub init --demo` prints
    "http://127.0.0.1:8000": "base",                 # the address `socialpub serve` listens on by default
    "brd_...": "brand",                              # a brand ID (the first demo brand)
    "int_...": "integration",                        # an integration ID (that brand's sandbox X account)
    "https://beanthere.example": "site",             # a brand's website (the test serves a small local one)
}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int          # line of the opening fence (1-based)
    lang: str
    code: str
    skip: str | None   # the reason, when marked

    @property
    def where(self) -> str:
        shown = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{shown}:{self.line}"

    def commands(self, values: dict[str, str] | None = None) -> str:
        """The block as a shell script: console prompts stripped, placeholders substituted."""
        if self.lang == "console":
            lines = [line[2:] for line in self.code.splitlines() if line.startswith("$ ")]
            code = "\n".join(lines)
        else:
            code = self.code
        for literal, name in PLACEHOLDERS.items():
            if values and name in values:
                code = code.replace(literal, values[name])
        return code


def blocks(path: Path) -> list[Block]:
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, lang = i, fence.group("lang")
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if lang in SHELL_LANGS:
            marker = SKIP.match(lines[start - 1]) if start else None
            out.append(Block(path, start + 1, lang, "\n".join(body) + "\n", marker.group("reason") if marker else None))
    return out


def chained(block: Block) -> list[str]:
    """Lines of a runnable block with `&&`, whose failures `set -e` would let pass."""
    return [line for line in block.commands().splitlines() if "&&" in line and not line.lstrip().startswith("#")]


def stray_markers(path: Path) -> list[int]:
    """Lines of skip markers that are not directly above a shell block (a typo would otherwise run nothing)."""
    lines = path.read_text().splitlines()
    return [n + 1 for n, line in enumerate(lines)
            if SKIP.match(line) and not (n + 1 < len(lines) and (m := FENCE.match(lines[n + 1]))
                                         and m.group("lang") in SHELL_LANGS)]


def script(path: Path, values: dict[str, str]) -> str:
    """One bash script running every unskipped block of the file in order; on failure it prints
    `DOC-BLOCK-FAILED <file:line>` and the command to stderr."""
    parts = [
        "set -eEo pipefail",
        'trap \'rc=$?; echo "DOC-BLOCK-FAILED $__doc_block: $BASH_COMMAND (exit $rc)" >&2; exit $rc\' ERR',
        "curl() { command curl --fail-with-body \"$@\"; }  # an HTTP error status fails the block",
    ]
    for block in blocks(path):
        if block.skip is None:
            parts += [f"__doc_block={block.where}", f'echo "DOC-BLOCK-START {block.where}" >&2',
                      block.commands(values)]
    parts.append('echo "DOC-BLOCKS-DONE" >&2')
    return "\n".join(parts) + "\n"
