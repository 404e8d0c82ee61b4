"""A `socialpub worker` process killed with SIGKILL between the state change and the webhook's delivery (its
request reached the receiver, no answer yet): after a restart the message is delivered, with the same webhook-id.
Also the `webhooks` commands as subprocesses: the secret is printed once, never listed, and `test` delivers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from sqlmodel import select

from schemas.settings import Settings
from schemas.time import SystemClock
from storage.tables.events import WebhookMessage
from storage.tables.publishing import Schedule
from tests.events.receiver import Receiver
from tests.publishing.support import seed_post, seed_schedule
from tests.publishing.test_worker_cli import CLI, cli_env, run_cli
from tools.events import webhooks
from tools.operator import actions as operator
from tools.runtime import Runtime

pytestmark = pytest.mark.slow


def runtime(home: Path) -> Runtime:
    return Runtime.from_settings(Settings(home=home, fetch_allow_hosts=("127.0.0.1",)), clock=SystemClock())


def worker_env(home: Path) -> dict[str, str]:
    return {**cli_env(home), "SOCIALPUB_FETCH_ALLOW_HOSTS": "127.0.0.1"}


async def seed(home: Path, url: str) -> tuple[str, str]:
    rt = runtime(home)
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        ws = await operator.create_workspace(s, now, "Hooks", "agency")
        brand = await operator.create_brand(s, now, ws, "Hooks brand")
        account = await operator.connect_integration(s, now, brand, "facebook")
        _, secret = await webhooks.create(s, now, rt.settings, ws.id, url, ["schedule.published"])
    item, _ = await seed_post(rt.db, brand, now)
    sid = await seed_schedule(rt.db, brand, item, [account.id], now, at=now - timedelta(minutes=1))
    await rt.close()
    return sid, secret


async def state(home: Path, schedule_id: str) -> tuple[str, list[WebhookMessage]]:
    rt = runtime(home)
    async with rt.db.session(write=False) as s:
        schedule = await s.get(Schedule, schedule_id)
        assert schedule is not None
        messages = list((await s.exec(select(WebhookMessage))).all())
    await rt.close()
    return schedule.status, messages


async def expire_leases(home: Path) -> None:
    rt = runtime(home)
    async with rt.db.session(write=True) as s:
        for m in (await s.exec(select(WebhookMessage))).all():
            m.lease_expires_at = rt.clock.now() - timedelta(seconds=1)
    await rt.close()


def test_killed_worker_delivers_after_restart(initialized) -> None:
    home = initialized
    receiver = Receiver(hold=threading.Event()).start()
    try:
        sid, secret = anyio.run(seed, home, receiver.url)
        worker = subprocess.Popen([CLI, "worker"], env=worker_env(home), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            assert receiver.arrived.wait(120), "the worker never sent the webhook"
        finally:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(30)
        status, [message] = anyio.run(state, home, sid)
        assert status == "published" and message.status == "sending"  # state committed, delivery unsettled
        anyio.run(expire_leases, home)  # the dead worker's lease runs out
        run_cli_env = worker_env(home)
        done = subprocess.run([CLI, "worker", "--once"], env=run_cli_env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
        _, [message] = anyio.run(state, home, sid)
        assert message.status == "delivered" and message.attempts == 2
        first, second = receiver.received
        assert first.id == second.id == message.id
        assert second.verify(secret)["data"]["schedule_id"] == sid
    finally:
        receiver.stop()


def test_webhook_commands(initialized) -> None:
    home = initialized
    receiver = Receiver().start()
    try:
        env = worker_env(home)

        def cli(*args: str) -> subprocess.CompletedProcess:
            return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=300)

        ws = json.loads(run_cli(home, "workspaces", "create", "--name", "Hooks", "--json"))["id"]
        made = cli("webhooks", "create", "--workspace", ws, "--url", receiver.url, "--events", "all", "--json")
        assert made.returncode == 0, made.stderr
        created = json.loads(made.stdout)
        secret, endpoint = created["secret"], created["id"]
        assert secret.startswith("whsec_")
        listed = cli("webhooks", "list", "--json")
        assert endpoint in listed.stdout and secret not in listed.stdout
        tested = cli("webhooks", "test", endpoint)
        assert tested.returncode == 0 and "delivered (HTTP 200)" in tested.stdout, tested.stdout + tested.stderr
        [got] = receiver.received
        assert got.verify(secret)["type"] == "webhook.test"
        log = cli("webhooks", "log", endpoint)
        assert "webhook.test" in log.stdout and "200" in log.stdout and secret not in log.stdout
        rotated = cli("webhooks", "rotate-secret", endpoint)
        assert "whsec_" in rotated.stdout and secret not in rotated.stdout
        refused = cli("webhooks", "create", "--workspace", ws, "--url", "http://10.20.30.40/x", "--events", "all")
        assert refused.returncode != 0 and "refused" in refused.stdout + refused.stderr
        assert cli("webhooks", "delete", endpoint).returncode == 0
        assert "No webhook endpoints." in cli("webhooks", "list").stdout
    finally:
        receiver.stop()
