"""Past one machine, for real: two `socialpub serve --no-worker` replicas and two `socialpub worker` processes
on one PostgreSQL database, with rate limits in Redis and media in an S3-compatible store (moto's server).

- a media upload started on replica 1 (presigned PUT straight to the store, accepted and processed by a worker)
  downloads from replica 2 under {media_url}/assets/<opaque_id>;
- a key's budget is shared: N requests spread over both replicas pass, the (N+1)-th is 429 on either;
- 200 due Schedules are published exactly once between the two workers (the sandbox ledger counts calls);
- /readyz on a replica sees the workers' heartbeats through the database.

The replicas have separate homes (nothing on a local disk is shared); the two workers share one home only for
the sandbox provider's ledger, which stands for the social network both would publish to.
"""

from __future__ import annotations

import socket
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from cryptography.fernet import Fernet
from prometheus_client.parser import text_string_to_metric_families
from sqlmodel import col, func, select

from providers.sandbox import SandboxLedger
from schemas.time import SystemClock
from storage.db import Database
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.publishing import PublishTarget, Schedule
from tests.media.support import image_bytes, sha
from tests.operations.support import cli_env, free_port, processes, run_cli, spawn, wait_http
from tests.publishing.support import seed_post, seed_schedule

pytestmark = pytest.mark.slow
SCHEDULES = 200
BUDGET = 30


def reachable(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


async def seed_schedules(url: str, brand_id: str) -> list[str]:
    db = Database(url)
    now = SystemClock().now()
    try:
        async with db.session(write=False) as s:
            brand = await s.get(Brand, brand_id)
            account = (await s.exec(select(Integration).where(
                Integration.brand_id == brand_id, Integration.platform == "facebook",
                Integration.status == "connected"))).first()
        assert brand is not None and account is not None
        item, _ = await seed_post(db, brand, now)
        return [await seed_schedule(db, brand, item, [account.id], now, at=now - timedelta(seconds=1))
                for _ in range(SCHEDULES)]
    finally:
        await db.dispose()


async def published(url: str, ids: list[str]) -> tuple[int, int]:
    db = Database(url)
    try:
        async with db.session(write=False) as s:
            done = (await s.exec(select(func.count()).select_from(Schedule).where(
                col(Schedule.id).in_(ids), Schedule.status == "published"))).one()
            targets = (await s.exec(select(func.count()).select_from(PublishTarget).where(
                col(PublishTarget.schedule_id).in_(ids)))).one()
        return done, targets
    finally:
        await db.dispose()


def test_two_replicas_two_workers(tmp_path: Path, pg_scratch: str, s3_server) -> None:
    if not reachable("127.0.0.1", 6379):
        pytest.skip("multi-machine test needs Redis at 127.0.0.1:6379")
    bucket = s3_server.new_bucket()
    shared = {"SOCIALPUB_DATABASE_URL": pg_scratch, "SOCIALPUB_RATE_LIMIT_STORAGE": "redis://127.0.0.1:6379/0",
              "SOCIALPUB_RATE_LIMIT": f"{BUDGET}/60", "SOCIALPUB_SIGNING_SECRET": "multi-machine-test-secret",
              # Every machine opens the credentials the others sealed: one vault key ring for all of them.
              "SOCIALPUB_SECRET_KEYS": Fernet.generate_key().decode(),
              "SOCIALPUB_EXPECT_WORKER": "1", **s3_server.env(bucket)}
    worker_home = tmp_path / "workers"
    admin = cli_env(tmp_path / "admin", **shared)
    demo = run_cli(admin, "init", "--demo")
    owner, brand_id = demo["api_key"]["secret"], demo["brands"][0]["id"]
    budget_key = run_cli(admin, "keys", "create", "--name", "budget", "--scopes", "brands:read")["secret"]

    with processes() as procs:
        bases = []
        for n in (1, 2):
            port = free_port()
            env = cli_env(tmp_path / f"replica{n}", SOCIALPUB_PUBLIC_URL=f"http://127.0.0.1:{port}", **shared)
            spawn(procs, env, "serve", "--no-worker", "--port", str(port), log=tmp_path / f"replica{n}.log")
            bases.append(f"http://127.0.0.1:{port}")
        metric_ports = [free_port(), free_port()]
        for n, port in enumerate(metric_ports, 1):
            spawn(procs, cli_env(worker_home, **shared), "worker", "--metrics-port", str(port),
                  log=tmp_path / f"worker{n}.log")
        for base, proc in zip(bases, procs, strict=False):
            wait_http(f"{base}/readyz", proc, timeout=90)  # 200 only once a worker heartbeat is fresh
        one, two = (httpx.Client(base_url=b, timeout=30) for b in bases)
        auth = {"Authorization": f"Bearer {owner}"}

        # 1. Upload through replica 1, straight to the object store; download from replica 2.
        data = image_bytes(800, 600, "PNG")
        created = one.post(f"/v1/brands/{brand_id}/media/upload-sessions", headers={**auth, "Idempotency-Key": "u1"},
                           json={"filename": "pic.png", "content_type": "image/png", "size": len(data),
                                 "sha256": sha(data)})
        assert created.status_code == 201, created.text
        session = created.json()["data"]
        assert session["upload"]["url"].startswith(s3_server.endpoint_url)
        put = httpx.put(session["upload"]["url"], content=data, headers=session["upload"]["headers"])
        assert put.status_code == 200, put.text
        deadline, item = time.monotonic() + 60, {}
        while time.monotonic() < deadline:
            item = two.get(f"/v1/brands/{brand_id}/media/{session['id']}", headers=auth).json()["data"]
            if item["status"] not in ("pending_upload", "processing"):
                break
            time.sleep(0.25)
        assert item["status"] == "completed", item
        path = urlsplit(item["download_url"]).path  # each replica names itself; behind a proxy they share one
        assert path.startswith("/media/assets/") and s3_server.endpoint_url not in str(item)
        got = two.get(path)
        assert got.status_code == 200 and got.content == data

        # 2. One budget across both replicas.
        key = {"Authorization": f"Bearer {budget_key}"}
        statuses = [(one if n % 2 else two).get("/v1/context", headers=key).status_code for n in range(BUDGET)]
        assert statuses == [200] * BUDGET
        for replica in (one, two):
            refused = replica.get("/v1/context", headers=key)
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
            assert refused.json()["error"]["code"] == "RATE_LIMITED"

        # 3. 200 due Schedules, two workers, each published once.
        ids = anyio.run(seed_schedules, pg_scratch, brand_id)
        deadline, done = time.monotonic() + 300, (0, 0)
        while time.monotonic() < deadline:
            done = anyio.run(published, pg_scratch, ids)
            if done[0] == SCHEDULES:
                break
            time.sleep(0.5)
        assert done == (SCHEDULES, SCHEDULES), done
        time.sleep(2)  # a duplicate publish would land in the ledger now
        counts = SandboxLedger(worker_home / "sandbox" / "ledger.db").publishes()
        assert len(counts) == SCHEDULES and set(counts.values()) == {1}
        # The workers' own /metrics count each publish once, wherever it happened.
        outcomes = latency = 0.0
        for port in metric_ports:
            for family in text_string_to_metric_families(httpx.get(f"http://127.0.0.1:{port}/metrics").text):
                for sample in family.samples:
                    if sample.name == "socialpub_publish_outcomes_total" and sample.labels == {
                            "platform": "facebook", "outcome": "published", "error_kind": "none"}:
                        outcomes += sample.value
                    if sample.name == "socialpub_provider_call_duration_seconds_count":
                        latency += sample.value
        assert outcomes == SCHEDULES and latency == SCHEDULES
        for proc in procs:
            assert proc.poll() is None, f"{proc.args} died"
