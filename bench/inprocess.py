"""What the benchmarks that drive the service in process share: a demo home made by the real CLI, and the ASGI
app run inside its lifespan. Imports nothing of the project: the benchmarks set SOCIALPUB_* before that."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def init_demo(env: dict[str, str]) -> tuple[str, str]:
    """`socialpub init --demo` in a subprocess with `env`: the demo key's secret and its first brand's ID."""
    out = subprocess.run([sys.executable, "-m", "server.cli", "--log-level", "WARNING", "init", "--demo", "--json"],
                         env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    demo = json.loads(out)
    return demo["api_key"]["secret"], demo["brands"][0]["id"]


async def asgi_call(app: Callable[..., Coroutine[Any, Any, Any]], key: str, method: str, path: str,
                    query: bytes = b"", body: bytes = b"") -> list[Any]:
    """One HTTP request to the ASGI app as a server would make it, with the key as bearer: the messages it sent."""
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {key}".encode()),
               (b"content-type", b"application/json")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query, "root_path": "",
             "headers": headers, "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000), "state": {}}
    sent, out = False, []

    async def receive() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)  # a client that stays connected
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        out.append(message)

    await app(scope, receive, send)
    return out


def run_in_lifespan(app: Callable[..., Coroutine[Any, Any, Any]], run: Callable[[], Awaitable[None]]) -> None:
    """Start the ASGI app's lifespan, await `run()`, shut the lifespan down (as a server would)."""

    async def with_lifespan() -> None:
        inbox: asyncio.Queue = asyncio.Queue()
        outbox: asyncio.Queue = asyncio.Queue()
        await inbox.put({"type": "lifespan.startup"})
        task = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                                       inbox.get, outbox.put))
        assert (await outbox.get())["type"] == "lifespan.startup.complete"
        try:
            await run()
        finally:
            await inbox.put({"type": "lifespan.shutdown"})
            await task

    asyncio.run(with_lifespan())
