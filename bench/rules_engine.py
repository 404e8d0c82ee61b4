"""Rules engine speed: evaluate 20 targets (every platform, media attached, one shared 2,000-character
caption with emoji and links) and print the time per call as a ratio to a floor measured in the same run:
validating the same content item into engine facts (`ContentFacts.from_content_item`), the step any caller
pays anyway. Run: .venv/bin/python bench/rules_engine.py
"""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.platforms import PLATFORMS
from schemas.preflight import ContentFacts, IntegrationFacts, MediaFacts, PreflightFacts
from schemas.textcount import graphemes, threads_length, x_weighted_length
from tools.schedules.rules_engine import evaluate

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
CAPTION = ("Launch day 🚀 — read more at https://example.com/launch and www.example.org/faq. 中文 👨‍👩‍👧 " * 25)[:2000]


def build() -> tuple[dict, PreflightFacts]:
    media = {}
    item: dict = {"id": "ci_1", "copy_mode": "single", "single_copy": {"caption": CAPTION, "hashtags": ["a", "b"]}}
    integrations = {}
    ids = []
    for n in range(20):
        p = PLATFORMS[n % len(PLATFORMS)]
        iid = f"int_01J{n:023d}"
        ids.append(iid)
        integrations[iid] = IntegrationFacts(id=iid, platform=p.key, status="connected")
        if p.settings_key:
            mid = f"med_01J{n:023d}"
            media[mid] = MediaFacts(id=mid, status="completed", kind="image", content_type="image/jpeg", width=1000,
                                    height=2000, size=500_000, sha256="ab" * 32)
            item[p.settings_key] = {"media_ids": [mid]}
    facts = PreflightFacts(content=ContentFacts.from_content_item(item), integration_ids=tuple(ids),
                           integrations=integrations, media=media, now=NOW, scheduled_at="2026-12-01T10:00:00Z",
                           approval_status="pending_review")
    return item, facts


def timeit(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def main() -> None:
    item, facts = build()
    evaluate(facts)  # warm the compiled per-platform structures
    floor = timeit(lambda: ContentFacts.from_content_item(item), 300)
    warm = timeit(lambda: evaluate(facts), 300)

    def cold() -> None:  # counting caches cleared: every call counts the caption again
        for f in (graphemes, x_weighted_length, threads_length):
            f.cache_clear()
        evaluate(facts)
    cold_t = timeit(cold, 100)
    issues = len(evaluate(facts).issues)
    print(f"floor  (validate content item into facts): {floor * 1e3:8.3f} ms")
    print(f"engine (20 targets, {issues} issues, warm caches): {warm * 1e3:8.3f} ms  ratio {warm / floor:6.2f}x")
    print(f"engine (20 targets, counting caches cleared): {cold_t * 1e3:8.3f} ms  ratio {cold_t / floor:6.2f}x")


if __name__ == "__main__":
    main()
