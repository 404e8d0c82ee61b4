"""/healthz, /readyz (database, schema, worker heartbeat) and /metrics (Prometheus text, optional token)."""

from __future__ import annotations

import anyio
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from server import health
from server.app import build_app
from server.dispatch import Dispatcher
from server.worker import Worker
from storage.db import Database
from tests.support import previous_revision
from tools.runtime import Runtime

pytestmark = pytest.mark.anyio


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def client(rt: Runtime, **kwargs) -> httpx.AsyncClient:
    app = build_app(rt, dispatcher=Dispatcher(rt), **kwargs)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


async def test_healthz_and_readyz_without_worker(env) -> None:
    assert (await env.rest.get("/healthz")).json() == {"status": "ok"}
    resp = await env.rest.get("/readyz")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"status": "ready", "checks": {"database": "ok", "schema": "ok", "worker": "not expected"}}


async def test_readyz_needs_a_fresh_worker_heartbeat_when_one_is_expected(env) -> None:
    rt = Runtime(settings=env.rt.settings.model_copy(update={"expect_worker": True}), db=env.db, clock=env.clock)
    async with client(rt, run_worker=False) as c:
        resp = await c.get("/readyz")
        assert resp.status_code == 503 and resp.json()["checks"]["worker"].startswith("no worker heartbeat")
        # A worker loop beats on its first pass; the replica sees it through the database.
        worker = Worker(rt, owner="test-worker")
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker.run_forever, 0.05)
            with anyio.fail_after(10):
                while (await c.get("/readyz")).status_code != 200:
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        # Stopped cleanly: its row is gone, so readiness fails again at once.
        assert (await c.get("/readyz")).status_code == 503
        # A stale heartbeat (a worker that died without cleaning up) does not count.
        await health.beat(rt, "dead-worker", env.clock.now(), 1)
        assert (await c.get("/readyz")).status_code == 200
        env.clock.advance(seconds=health.FRESH_AFTER.total_seconds() + 1)
        assert (await c.get("/readyz")).status_code == 503


async def test_readyz_reports_an_unreachable_database(tmp_path, env) -> None:
    dead = Database("postgresql+asyncpg://postgres@127.0.0.1:1/nothing")
    rt = Runtime(settings=env.rt.settings, db=dead, clock=env.clock)
    async with client(rt, run_worker=False, check_schema=False) as c:
        assert (await c.get("/healthz")).status_code == 200
        resp = await c.get("/readyz")
        assert resp.status_code == 503
        assert resp.json()["checks"]["database"].startswith("unreachable")
    await dead.dispose()


async def test_readyz_reports_an_old_schema(env) -> None:
    from sqlalchemy import text

    async with env.db.session(write=True) as s:
        head = (await s.exec(text("SELECT version_num FROM alembic_version"))).one()[0]
        await s.exec(text(f"UPDATE alembic_version SET version_num = '{previous_revision()}'"))
    try:
        resp = await env.rest.get("/readyz")
        assert resp.status_code == 503 and "needs" in resp.json()["checks"]["schema"]
    finally:
        async with env.db.session(write=True) as s:
            await s.exec(text(f"UPDATE alembic_version SET version_num = '{head}'"))


async def test_metrics_count_requests_refusals_and_queue(env_factory) -> None:
    from storage import queue

    async with env_factory(rate_limit_requests=1, rate_limit_window=60) as env:
        ws = await env.workspace()
        key = await env.key(ws, name="k")
        before = samples((await env.rest.get("/metrics")).text)
        assert (await env.rest.get("/v1/context", headers=env.auth(key))).status_code == 200
        assert (await env.rest.get("/v1/context", headers=env.auth(key))).status_code == 429
        async with env.db.session(write=True) as s:
            await queue.enqueue(s, env.clock.now(), "test.kind", {}, run_at=env.clock.now())
        env.clock.advance(seconds=30)
        resp = await env.rest.get("/metrics")
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/plain")
        after = samples(resp.text)

        def delta(name: str, **labels: str) -> float:
            k = (name, tuple(sorted(labels.items())))
            return after.get(k, 0) - before.get(k, 0)

        assert delta("socialpub_requests_total", endpoint="get_context", status="200") == 1
        assert delta("socialpub_requests_total", endpoint="get_context", status="429") == 1
        assert delta("socialpub_rate_limited_total", scope="key") == 1
        assert delta("socialpub_request_duration_seconds_count", endpoint="get_context") == 2
        assert after[("socialpub_jobs_due", (("kind", "test.kind"),))] == 1
        assert after[("socialpub_jobs_lag_seconds", (("kind", "test.kind"),))] == 30


async def test_metrics_token(env) -> None:
    rt = Runtime(settings=env.rt.settings.model_copy(update={"metrics_token": "scrape-secret"}), db=env.db,
                 clock=env.clock)
    async with client(rt, run_worker=False) as c:
        assert (await c.get("/metrics")).status_code == 401
        assert (await c.get("/metrics", headers={"Authorization": "Bearer wrong"})).status_code == 401
        resp = await c.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
        assert resp.status_code == 200 and "socialpub_requests_total" in resp.text
        assert "scrape-secret" not in resp.text


async def test_metrics_count_mcp_tool_calls(world) -> None:
    from tests.mcp.support import in_memory

    env = world.env
    before = samples((await env.rest.get("/metrics")).text)
    async with in_memory(env, world.full_key) as mcp:
        await mcp.call_tool("get_brand", {"brand_id": world.brand_a.id})
        await mcp.call_tool("get_brand", {"brand_id": "brd_nope"})
    after = samples((await env.rest.get("/metrics")).text)

    def delta(name: str, **labels: str) -> float:
        k = (name, tuple(sorted(labels.items())))
        return after.get(k, 0) - before.get(k, 0)

    assert delta("socialpub_mcp_tool_calls_total", tool="get_brand", outcome="ok") == 1
    assert delta("socialpub_mcp_tool_calls_total", tool="get_brand", outcome="error") == 1
    assert delta("socialpub_requests_total", endpoint="get_brand", status="200") == 1
