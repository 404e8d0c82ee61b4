"""End to end over real HTTP: the demo workspace served by uvicorn on 127.0.0.1 (ephemeral port), walked the
way the README's curl walk does, following the links the API returns rather than building paths."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
import uvicorn

from server.app import build_app
from tools.operator.demo import seed_demo

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def served(rt) -> AsyncIterator[str]:
    server = uvicorn.Server(uvicorn.Config(build_app(rt, run_worker=False), host="127.0.0.1", port=0,
                                           log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


async def test_demo_walk_context_to_dynamic_options(env) -> None:
    async with env.db.session(write=True) as s:
        demo = await seed_demo(s, env.clock.now())
    headers = {"Authorization": f"Bearer {demo['secret']}"}
    async with served(env.rt) as base, httpx.AsyncClient(base_url=base, headers=headers) as client:
        ctx = await client.get("/v1/context")
        assert ctx.status_code == 200 and ctx.headers["x-request-id"] == ctx.json()["meta"]["request_id"]
        brand = ctx.json()["data"]["brands"][0]
        assert brand["name"] == "Acme Coffee Roasters"

        voice = await client.get(f"/v1/brands/{brand['id']}/context")
        assert voice.status_code == 200
        assert voice.json()["data"]["voice"]["custom_instructions"]
        assert voice.json()["data"]["links"]["targets"] == brand["links"]["targets"]

        listed = await client.get(brand["links"]["targets"]["href"])
        assert listed.status_code == 200
        rows = listed.json()["data"]["targets"]
        # the demo connects every platform, plus an expired TikTok account: no discovery rows
        assert all(r["integration_id"] for r in rows)
        tiktoks = [r for r in rows if r["platform"] == "tiktok"]
        assert [r["connection_status"] for r in tiktoks] == ["connected", "expired"]
        live, expired = tiktoks
        assert live["schedulable"] is True and expired["schedulable"] is False
        assert expired["repair_actions"][0]["action"] == "reconnect_integration"
        assert "dynamic_options" not in expired["links"]

        options = await client.get(live["links"]["dynamic_options"]["href"])
        assert options.status_code == 200, options.text
        data = options.json()["data"]
        assert data["kind"] == "creator_privacy_levels" and data["options"]
        assert set(data["constraints"]) == {"comments_disabled", "duets_disabled", "stitches_disabled"}

        refresh = live["links"]["refresh_dynamic_options"]
        refreshed = await client.request(refresh["method"], refresh["href"], json={})
        assert refreshed.status_code == 200 and refreshed.json()["data"]["options"] == data["options"]

        pin = next(r for r in rows if r["platform"] == "pinterest")
        boards = await client.get(pin["links"]["dynamic_options"]["href"])
        assert boards.json()["data"]["kind"] == "pinterest_boards"

        # the expired account fails explicitly, with what to do next
        failed = await client.get(f"{brand['links']['targets']['href']}/{expired['integration_id']}/dynamic-options")
        assert failed.status_code == 422 and failed.json()["error"]["next_action"] == "reconnect_integration"

        caps = await client.get(ctx.json()["data"]["links"]["platform_capabilities"]["href"], headers={
            "Authorization": ""})
        assert caps.status_code == 200 and caps.headers["cache-control"] == "public, max-age=300"
        again = await client.get("/v1/platforms/capabilities", headers={"If-None-Match": caps.headers["etag"]})
        assert again.status_code == 304 and again.content == b""
        assert again.headers["etag"] == caps.headers["etag"]
