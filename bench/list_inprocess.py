"""The content list in process: CPU per `GET /v1/brands/{id}/content-items?limit=20` through the built ASGI app,
without a server or a load generator (for A/B of the list's own work: `time.process_time`, cProfile or
`valgrind --tool=callgrind`, which load does not move).

It makes a scratch SOCIALPUB_HOME with the demo workspace (`socialpub init --demo`), seeds 20 content items as
bench/rest_cpu.py does, and calls the app directly with INFO access logging formatted (written to the null
device). `--dump` prints three pages and their next pages (request IDs masked) to compare two versions byte
for byte: give both the same `--home` (made and seeded on first use).

    python bench/list_inprocess.py [--requests 2000] [--profile | --dump] [--home DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.inprocess import asgi_call, run_in_lifespan  # noqa: E402

CREATE_BODY = {"name": "Bench draft", "single_copy": {"caption": "Hello from the bench", "hashtags": ["bench"]}}


def init_demo(home: str) -> tuple[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOCIALPUB_HOME": home}
    out = subprocess.run([sys.executable, "-m", "server.cli", "--log-level", "WARNING", "init", "--demo", "--json"],
                         env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    demo = json.loads(out)
    return demo["api_key"]["secret"], demo["brands"][0]["id"]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--profile", action="store_true", help="cProfile of the timed requests")
    parser.add_argument("--dump", action="store_true", help="print pages, request IDs masked")
    parser.add_argument("--home", help="a SOCIALPUB_HOME to make once and reuse (default: a new scratch one)")
    args = parser.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="socialpub-list-")
    made = Path(home, "list_inprocess.json")
    seed = not made.exists()
    if seed:
        Path(home).mkdir(parents=True, exist_ok=True)
        made.write_text(json.dumps(init_demo(home)))
    key, brand = json.loads(made.read_text())
    os.environ.update({"SOCIALPUB_HOME": home, "SOCIALPUB_RATE_LIMIT": "1000000000/60", "SOCIALPUB_WORKER": "off"})
    sys.path.insert(0, str(ROOT))
    from server import logs
    from server.app import app_from_env

    logs.configure("INFO", "text")
    stdout, sys.stderr = sys.stdout, open(os.devnull, "w")  # noqa: SIM115 (the access log, formatted, dropped)
    app = app_from_env()
    path = f"/v1/brands/{brand}/content-items"

    async def call(method: str, query: bytes = b"", body: bytes = b"") -> list[dict]:
        return await asgi_call(app, key, method, path, query, body)

    async def run() -> None:
        for n in range(20 if seed else 0):
            out = await call("POST", body=json.dumps({**CREATE_BODY, "name": f"Seeded {n}"}).encode())
            assert out[0]["status"] == 201, out
        out: list[dict] = []
        for _ in range(50):
            out = await call("GET", b"limit=20")
        assert out[0]["status"] == 200, out
        if args.dump:
            mask = re.compile(rb"req_[0-9A-Z]{26}")
            for query in (b"limit=20", b"limit=7", b"limit=7&order_direction=asc"):
                out = await call("GET", query)
                stdout.write(mask.sub(b"REQ", out[1]["body"]).decode() + "\n")
                page = json.loads(out[1]["body"])["data"]
                if page["next_cursor"]:
                    out = await call("GET", query + b"&cursor=" + page["next_cursor"].encode())
                    stdout.write(mask.sub(b"REQ", out[1]["body"]).decode() + "\n")
            return
        profile = None
        if args.profile:
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        started = time.process_time()
        for _ in range(args.requests):
            await call("GET", b"limit=20")
        spent = time.process_time() - started
        if profile is not None:
            import pstats

            profile.disable()
            pstats.Stats(profile, stream=stdout).sort_stats("tottime").print_stats(40)
        stdout.write(f"list, in process: {spent / max(args.requests, 1) * 1e6:.1f} us CPU per request "
                     f"({args.requests} requests)\n")

    run_in_lifespan(app, run)


if __name__ == "__main__":
    main()
