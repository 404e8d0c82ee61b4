"""What the hot REST routes ask of the database, in process: per request, the statements executed, the
transactions begun and ended, and the driver's thread hand-offs, beside the CPU per request.

The counts are what load does not move (the CPU is what it does): statements and transaction ends come from
SQLAlchemy's documented engine events (`before_cursor_execute`, `begin`, `commit`, `rollback`); a hand-off is
one wake-up of the event loop from another thread (`loop.call_soon_threadsafe`, which aiosqlite calls once per
driver call it runs on its thread; counted on this script's own loop). It makes a scratch SOCIALPUB_HOME with the
demo workspace (`socialpub init --demo`), seeds 20 content items as bench/rest_cpu.py does, and calls the built
ASGI app directly (no server, no load generator) for each scenario: `GET /v1/context`, a list of 20 content
items, a draft creation, and the older shapes of the list and the create.

    python bench/hot_calls.py [--requests 300] [--scenarios context,list,create,list_older,create_older]
    python bench/hot_calls.py --database-url postgresql+asyncpg://postgres@127.0.0.1:5432/bench_NAME
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.inprocess import asgi_call, init_demo, run_in_lifespan  # noqa: E402

CREATE_BODY = {"name": "Bench draft", "single_copy": {"caption": "Hello from the bench", "hashtags": ["bench"]}}
OLDER_BODY = {"name": "Bench draft", "copy_mode": "single", "single_copy": {"caption": "Hello", "hashtags": ["bench"]}}
# scenario -> (method, path template, query, body)
SCENARIOS = {
    "context": ("GET", "/v1/context", b"", None),
    "list": ("GET", "/v1/brands/{brand}/content-items", b"limit=20", None),
    "create": ("POST", "/v1/brands/{brand}/content-items", b"", CREATE_BODY),
    "list_older": ("GET", "/v1/brands/{brand}/content-items", b"variant=older&limit=20", None),
    "create_older": ("POST", "/v1/brands/{brand}/content-items", b"variant=older", OLDER_BODY),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="timed requests per scenario")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--database-url", help="default: SQLite in the scratch SOCIALPUB_HOME")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="socialpub-hot-")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOCIALPUB_HOME": home}
    if args.database_url:
        env["SOCIALPUB_DATABASE_URL"] = args.database_url
    key, brand = init_demo(env)
    os.environ.update({"SOCIALPUB_HOME": home, "SOCIALPUB_RATE_LIMIT": "1000000000/60", "SOCIALPUB_WORKER": "off"})
    if args.database_url:
        os.environ["SOCIALPUB_DATABASE_URL"] = args.database_url
    sys.path.insert(0, str(ROOT))
    from sqlalchemy import event

    from schemas.settings import Settings
    from server import logs
    from server.app import build_app
    from tools.runtime import Runtime

    logs.configure("INFO", "text")
    stdout, sys.stderr = sys.stdout, open(os.devnull, "w")  # noqa: SIM115 (the access log, formatted, dropped)
    rt = Runtime.from_settings(Settings.from_env())
    app = build_app(rt)
    counts: Counter[str] = Counter()
    # (getattr: the same script measures trees from before the statement engine, for before/after.)
    engines = {e.sync_engine for e in (rt.db.read_engine, rt.db.write_engine, getattr(rt.db, "statement_engine", None))
               if e is not None}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", lambda *a, **k: counts.update(["statements"]))
        event.listen(engine, "begin", lambda *a: counts.update(["begin"]))
        event.listen(engine, "commit", lambda *a: counts.update(["commit"]))
        event.listen(engine, "rollback", lambda *a: counts.update(["rollback"]))
    async def call(method: str, path: str, query: bytes, body: bytes) -> list[Any]:
        return await asgi_call(app, key, method, path, query, body)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        wake = loop.call_soon_threadsafe

        def counted(*a, **k):
            counts["handoffs"] += 1
            return wake(*a, **k)

        loop.call_soon_threadsafe = counted  # pyright: ignore[reportAttributeAccessIssue]  # this script's own loop: counts every wake-up from another thread
        items = f"/v1/brands/{brand}/content-items"
        for n in range(20):
            out = await call("POST", items, b"", json.dumps({**CREATE_BODY, "name": f"Seeded {n}"}).encode())
            assert out[0]["status"] == 201, out
        stdout.write(f"{'scenario':<13}{'CPU us/req':>11}{'statements':>11}{'begin':>7}{'commit':>7}"
                     f"{'rollback':>9}{'hand-offs':>10}\n")
        for name in [s.strip() for s in args.scenarios.split(",") if s.strip()]:
            method, template, query, body = SCENARIOS[name]
            path = template.format(brand=brand)
            data = json.dumps(body).encode() if body else b""
            out = await call(method, path, query, data)
            for _ in range(30):  # warm: statement caches, pages
                out = await call(method, path, query, data)
            assert out[0]["status"] in (200, 201), out
            counts.clear()
            started = time.process_time()
            for _ in range(args.requests):
                await call(method, path, query, data)
            spent = time.process_time() - started
            per = {k: counts[k] / args.requests for k in ("statements", "begin", "commit", "rollback", "handoffs")}
            stdout.write(f"{name:<13}{spent / args.requests * 1e6:>11.0f}{per['statements']:>11.2f}"
                         f"{per['begin']:>7.2f}{per['commit']:>7.2f}{per['rollback']:>9.2f}"
                         f"{per['handoffs']:>10.2f}\n")

    run_in_lifespan(app, run)


if __name__ == "__main__":
    main()
