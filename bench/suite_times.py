"""Where the test suite's time goes, per file and per directory: reads pytest's `--durations=0` report (setup,
call and teardown of every test) from standard input and prints the largest totals.

    .venv/bin/pytest --durations=0 -q > suite.log; .venv/bin/python bench/suite_times.py < suite.log

With xdist the durations are each worker's own, so the totals add up to the workers' time, not the run's wall
time; on a shared machine compare shares, not seconds (docs/operations.md, "Test suite").
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+?)::")
TOP = 40


def _largest(totals: dict[str, float]) -> list[tuple[str, float]]:
    return sorted(totals.items(), key=lambda kv: -kv[1])


def main() -> None:
    files: defaultdict[str, float] = defaultdict(float)
    dirs: defaultdict[str, float] = defaultdict(float)
    phases: defaultdict[str, float] = defaultdict(float)
    for line in sys.stdin:
        found = LINE.match(line)
        if found:
            seconds, phase, path = float(found[1]), found[2], found[3]
            files[path] += seconds
            dirs[path.rsplit("/", 1)[0] if path.count("/") > 1 else path] += seconds
            phases[phase] += seconds
    total = sum(phases.values()) or 1.0
    print(f"total {total:.0f} s: " + ", ".join(f"{p} {s:.0f} s" for p, s in _largest(phases)))
    for title, counts in (("directories", dirs), ("files", files)):
        print(f"\n{title}:")
        for name, seconds in _largest(counts)[:TOP]:
            print(f"{seconds:8.1f} s {100 * seconds / total:5.1f} %  {name}")


if __name__ == "__main__":
    main()
