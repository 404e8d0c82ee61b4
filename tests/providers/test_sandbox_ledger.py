"""The sandbox ledger shared by every process on one home (providers/sandbox.py)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from providers.base import PostResult
from providers.sandbox import SandboxLedger


def test_a_new_ledger_opens_while_another_process_holds_its_lock(tmp_path: Path) -> None:
    # Two workers starting on a new home: one has created the ledger (not yet in WAL) and holds its write lock when
    # the other opens it. SQLite refuses the WAL switch at once in that state; the ledger must wait, not fail the
    # publish (bench/publishing.py --workers 2 lost a target to this).
    path = tmp_path / "sandbox.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE early (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO early VALUES (1)")
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    try:
        ledger = SandboxLedger(path)
        post = ledger.record("int_1", "tok", PostResult("p1", None))
    finally:
        release.join()
        other.close()
    assert post.publish_id == "p1" and ledger.publishes() == {("int_1", "tok"): 1}
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
