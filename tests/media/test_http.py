"""Upload, process and serve over real HTTP: uvicorn on 127.0.0.1 (ephemeral port), the signed upload URL
streamed by an HTTP client, the asset read back with a range."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
import uvicorn

from tests.media.support import process, video_bytes

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def served(app) -> AsyncIterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        finally:
            server.should_exit = True


def path_of(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


async def test_upload_over_http(sqlite_env) -> None:
    env = sqlite_env
    ws = await env.workspace()
    brand = await env.brand(ws)
    secret = await env.key(ws)
    data = video_bytes(320, 180, seconds=2.0)
    async with served(env.app) as base, httpx.AsyncClient(base_url=base) as client:
        resp = await client.post(f"/v1/brands/{brand.id}/media/upload-sessions",
                                 headers={"Authorization": f"Bearer {secret}", "Idempotency-Key": "h1"},
                                 json={"filename": "v.mp4", "content_type": "video/mp4", "size": len(data),
                                       "sha256": hashlib.sha256(data).hexdigest()})
        session = resp.json()["data"]

        async def body():
            for i in range(0, len(data), 4096):
                yield data[i:i + 4096]

        put = await client.put(path_of(session["upload"]["url"]), content=body(),
                               headers={**session["upload"]["headers"], "Expect": "100-continue"})
        assert put.status_code == 200, put.text
        await process(env)
        item = (await client.get(f"/v1/brands/{brand.id}/media/{session['id']}",
                                 headers={"Authorization": f"Bearer {secret}"})).json()["data"]
        assert item["status"] == "completed" and item["duration"] == pytest.approx(2.0, abs=0.05)
        got = await client.get(path_of(item["download_url"]), headers={"Range": "bytes=100-199"})
        assert got.status_code == 206 and got.content == data[100:200]
        full = await client.get(path_of(item["download_url"]))
        assert full.content == data
        # a forged link is refused before the body is read
        bad = await client.put(path_of(session["upload"]["url"]).replace("signature=", "signature=x"),
                               content=data, headers=session["upload"]["headers"])
        assert bad.status_code == 404
