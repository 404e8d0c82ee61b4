"""A worker stopped with SIGTERM mid-batch hands back the Schedules it has not started at once, so another worker
publishes them within seconds, exactly once; the worker itself exits within its grace period."""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import anyio
import pytest

from server.worker import GRACE_SECONDS
from storage.tables.publishing import Schedule
from tests.publishing.support import seed_post, seed_schedule
from tests.publishing.test_worker_cli import CLI, cli_env, ledger, read, run_cli, runtime
from tools.operator import actions as operator
from tools.publishing.worker import CONCURRENCY

pytestmark = pytest.mark.slow


async def seed(home: Path) -> tuple[list[str], list[str]]:
    """CONCURRENCY Schedules whose provider call hangs (they fill the batch's slots), then as many that would
    publish at once but wait for a slot."""
    rt = runtime(home)
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        ws = await operator.create_workspace(s, now, "Stop", "agency")
        brand = await operator.create_brand(s, now, ws, "Stop brand")
        hanging = await operator.connect_integration(s, now, brand, "instagram",
                                                     provider_state={"faults": {"publish": "hang"}})
        fine = await operator.connect_integration(s, now, brand, "facebook")
    item, _ = await seed_post(rt.db, brand, now)
    stuck = [await seed_schedule(rt.db, brand, item, [hanging.id], now, at=now - timedelta(minutes=2))
             for _ in range(CONCURRENCY)]
    waiting = [await seed_schedule(rt.db, brand, item, [fine.id], now, at=now - timedelta(minutes=1))
               for _ in range(CONCURRENCY)]
    await rt.close()
    return stuck, waiting


async def statuses(home: Path, ids: list[str]) -> list[tuple[str, str | None]]:
    rt = runtime(home)
    async with rt.db.session(write=False) as s:
        rows = [await s.get(Schedule, i) for i in ids]
    await rt.close()
    return [(r.status, r.lease_owner) if r is not None else ("missing", None) for r in rows]


def test_sigterm_mid_batch_hands_back_unstarted_schedules(tmp_path, initialized) -> None:
    stuck, waiting = anyio.run(partial(seed, tmp_path))
    proc = subprocess.Popen([CLI, "worker"], env=cli_env(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:  # mid-batch: the first Schedules' provider calls hang, the rest wait for a slot
            states = [anyio.run(read, tmp_path, i)[1] for i in stuck]
            if all(t and t[0].state == "attempting" for t in states):
                break
            assert proc.poll() is None and time.monotonic() < deadline, "the worker never started its batch"
            time.sleep(0.2)
        assert all(owner is not None for _, owner in anyio.run(statuses, tmp_path, waiting))  # claimed by it
        proc.send_signal(signal.SIGTERM)
        stopped_at = time.monotonic()
        while any(owner is not None for _, owner in anyio.run(statuses, tmp_path, waiting)):
            assert time.monotonic() - stopped_at < 5, "the unstarted claims were not handed back at once"
            time.sleep(0.1)
        # another worker publishes them now, long before any lease would expire
        assert f"{len(waiting)} item(s) processed" in run_cli(tmp_path, "worker", "--once")
        _out, err = proc.communicate(timeout=GRACE_SECONDS + 30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - stopped_at < GRACE_SECONDS + 15
    assert "Traceback" not in err, err[-3000:]
    assert [s for s, _ in anyio.run(statuses, tmp_path, waiting)] == ["published"] * len(waiting)
    published = ledger(tmp_path)
    assert len(published) == len(waiting) and set(published.values()) == {1}  # exactly once; none of the hung
