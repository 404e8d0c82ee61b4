"""`socialpub worker --once` as a real subprocess against a SQLite file: it publishes a due approved Schedule,
leaves a held one alone, never publishes twice across processes, and recovers a run whose worker died
(in-process crash, or a subprocess killed with SIGKILL mid-call) without publishing again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from functools import partial
from pathlib import Path

import anyio
import pytest
from sqlmodel import select

from providers.sandbox import SandboxLedger
from schemas.settings import Settings
from schemas.time import SystemClock
from storage.tables.integrations import Integration
from storage.tables.publishing import PublishTarget, Schedule
from tests.publishing.support import seed_post, seed_schedule
from tools.operator import actions as operator
from tools.publishing import worker as publishing
from tools.runtime import Runtime

pytestmark = pytest.mark.slow
CLI = str(Path(sys.executable).parent / "socialpub")


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env["SOCIALPUB_HOME"] = str(home)
    return env


def run_cli(home: Path, *args: str) -> str:
    done = subprocess.run([CLI, *args], env=cli_env(home), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def runtime(home: Path) -> Runtime:
    return Runtime.from_settings(Settings(home=home), clock=SystemClock())


async def seed(home: Path, *, platforms=("instagram", "facebook"), provider_state=None) -> dict[str, str]:
    rt = runtime(home)
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        ws = await operator.create_workspace(s, now, "Worker CLI", "agency")
        brand = await operator.create_brand(s, now, ws, "CLI brand")
        accounts = {p: await operator.connect_integration(s, now, brand, p, provider_state=provider_state)
                    for p in platforms}
        await operator.create_key(s, now, ws, "k", ("posts:read",))
    item, _ = await seed_post(rt.db, brand, now)
    ids = sorted(a.id for a in accounts.values())
    due = await seed_schedule(rt.db, brand, item, ids, now, at=now - timedelta(minutes=1))
    held = await seed_schedule(rt.db, brand, item, ids, now, at=now - timedelta(minutes=1),
                               approval_status="pending_review")
    await rt.close()
    return {"due": due, "held": held}


async def read(home: Path, schedule_id: str) -> tuple[Schedule, list[PublishTarget]]:
    rt = runtime(home)
    async with rt.db.session(write=False) as s:
        schedule = await s.get(Schedule, schedule_id)
        assert schedule is not None
        targets = list((await s.exec(select(PublishTarget).where(PublishTarget.schedule_id == schedule_id))).all())
    await rt.close()
    return schedule, targets


def ledger(home: Path) -> dict:
    return SandboxLedger(home / "sandbox" / "ledger.db").publishes()


def test_worker_once_publishes_due_schedule_in_a_subprocess(tmp_path, initialized) -> None:
    ids = anyio.run(seed, tmp_path)
    assert "1 item(s) processed" in run_cli(tmp_path, "worker", "--once")
    schedule, targets = anyio.run(read, tmp_path, ids["due"])
    assert schedule.status == "published" and {t.state for t in targets} == {"published"}
    counts = ledger(tmp_path)
    assert set(counts) == {(t.integration_id, t.idempotency_token) for t in targets}
    assert set(counts.values()) == {1}
    held, held_targets = anyio.run(read, tmp_path, ids["held"])
    assert held.status == "action_required" and held_targets == []

    assert "0 item(s) processed" in run_cli(tmp_path, "worker", "--once")  # nothing twice
    assert ledger(tmp_path) == counts


class Crash(BaseException):
    pass


async def crash_after_publish(home: Path) -> None:
    """A worker in this process claims the run, publishes one target, and dies before settling it."""
    rt = runtime(home)
    sandbox = rt.providers["sandbox"]
    real = sandbox.publish

    async def die(account, post):
        await real(account, post)
        raise Crash

    sandbox.publish = die
    with pytest.RaisesGroup(Crash):
        await publishing.publish_due(rt, "dead-worker")
    await rt.close()


async def expire_lease(home: Path, schedule_id: str, *, clear_faults: bool = False) -> None:
    rt = runtime(home)
    async with rt.db.session(write=True) as s:
        schedule = await s.get(Schedule, schedule_id)
        assert schedule is not None
        schedule.lease_expires_at = rt.clock.now() - timedelta(seconds=1)
        if clear_faults:
            for integration in (await s.exec(select(Integration))).all():
                integration.provider_state = None
    await rt.close()


def test_recovery_in_another_process_does_not_publish_again(tmp_path, initialized) -> None:
    ids = anyio.run(seed, tmp_path)
    anyio.run(crash_after_publish, tmp_path)
    schedule, targets = anyio.run(read, tmp_path, ids["due"])
    assert schedule.lease_owner == "dead-worker" and [t.state for t in targets].count("attempting") == 1
    assert list(ledger(tmp_path).values()) == [1]  # the post exists, unsettled

    assert "0 item(s) processed" in run_cli(tmp_path, "worker", "--once")  # lease still held: hands off
    anyio.run(expire_lease, tmp_path, ids["due"])
    assert "1 item(s) processed" in run_cli(tmp_path, "worker", "--once")
    schedule, targets = anyio.run(read, tmp_path, ids["due"])
    assert schedule.status == "published" and {t.state for t in targets} == {"published"}
    assert sorted(t.attempts for t in targets) == [1, 2]  # the recovered target was looked up, not re-sent
    assert set(ledger(tmp_path).values()) == {1} and len(ledger(tmp_path)) == 2


def test_worker_killed_mid_call_is_recovered_once(tmp_path, initialized) -> None:
    ids = anyio.run(partial(seed, tmp_path, platforms=("instagram",), provider_state={"faults": {"publish": "hang"}}))
    proc = subprocess.Popen([CLI, "worker", "--once"], env=cli_env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:  # wait until the attempt is committed and the provider call hangs
            _, targets = anyio.run(read, tmp_path, ids["due"])
            if targets and targets[0].state == "attempting":
                break
            assert proc.poll() is None and time.monotonic() < deadline, "the worker never recorded the attempt"
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert ledger(tmp_path) == {}
    anyio.run(partial(expire_lease, tmp_path, ids["due"], clear_faults=True))
    assert "1 item(s) processed" in run_cli(tmp_path, "worker", "--once")
    schedule, targets = anyio.run(read, tmp_path, ids["due"])
    assert schedule.status == "published" and targets[0].attempts == 2
    assert ledger(tmp_path) == {(targets[0].integration_id, targets[0].idempotency_token): 1}


def test_a_worker_process_freezes_its_startup_heap(tmp_path, initialized) -> None:
    """`socialpub worker` moves its start-up heap out of the collector's generations before its first pass
    (server/worker.py `freeze_startup_heap`), so full collections during passes do not scan it again."""
    code = ("import gc, sys; from server.cli import main; rc = main(['worker', '--once']); "
            "print('frozen', gc.get_freeze_count()); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], env=cli_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    frozen = int(done.stdout.split("frozen")[-1])
    assert frozen > 100_000  # the modules, classes and schemas of a started worker
