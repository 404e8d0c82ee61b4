"""Upload throughput through the real PUT route, as a ratio to a plain file copy measured in the same run.

    python bench/media_upload.py [--mb 200] [--runs 3]

Starts the service (uvicorn on 127.0.0.1, an ephemeral port, SQLite in a scratch home), creates an upload
session per run and streams a file from disk to the signed upload URL over loopback HTTP with httpx.
The floor is `shutil.copyfile` of the same file to the same disk; the HTTP server's own ceiling (a route that
reads and discards the body, on the same server) is printed beside it. Also prints the server process's peak
RSS growth during the uploads (the body is streamed, so it stays flat whatever the file size).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from schemas.settings import Settings
from server.app import build_app
from storage.migrate import upgrade
from tools.operator import actions as operator
from tools.runtime import Runtime

CHUNK = 1024 * 1024


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def make_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    block = os.urandom(CHUNK)
    with open(path, "wb") as fh:
        for i in range(size // CHUNK):
            data = bytes([i % 256]) + block[1:]
            digest.update(data)
            fh.write(data)
    return digest.hexdigest()


def read_chunks(path: Path):
    with open(path, "rb") as fh:
        while data := fh.read(CHUNK):
            yield data


def send(client: httpx.Client, how: str, url: str, source: Path, headers: dict[str, str]) -> float:
    start = time.perf_counter()
    if how == "curl":
        flags = [a for k, v in headers.items() for a in ("-H", f"{k}: {v}")]
        ok = subprocess.run(["curl", "-sS", "-f", "-o", os.devnull, "-T", str(source), *flags, url],
                            check=False).returncode == 0
    else:
        ok = client.put(url, content=read_chunks(source), headers=headers).is_success
    if not ok:
        raise SystemExit(f"PUT {url} failed")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--client", choices=["curl", "httpx"], default="curl" if shutil.which("curl") else "httpx",
                        help="curl (a separate process, default when installed) or httpx in this process")
    args = parser.parse_args()
    size = args.mb * CHUNK

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        settings = Settings(home=home, worker_enabled=False, rate_limit_requests=0)
        rt = Runtime.from_settings(settings)

        async def seed() -> tuple[str, str]:
            await upgrade(rt.db)
            async with rt.db.session(write=True) as s:
                now = rt.clock.now()
                ws = await operator.create_workspace(s, now, "bench")
                brand = await operator.create_brand(s, now, ws, "bench")
                _, secret = await operator.create_key(s, now, ws, "bench", ("media:write", "media:read"))
            return brand.id, secret

        brand_id, secret = asyncio.run(seed())
        async def drain(request: Request) -> Response:
            async for _ in request.stream():
                pass
            return Response(status_code=204)

        # /bench/drain: the HTTP server's own ceiling (reads and discards the body), measured beside the route.
        app = build_app(Runtime.from_settings(settings), run_worker=False,
                        extra_routes=[Route("/bench/drain", drain, methods=["PUT"])])
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                               lifespan="on", h11_max_incomplete_event_size=None))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}"

        source = Path(tmp) / "source.bin"
        sha = make_file(source, size)
        copy_times, upload_times, drain_times = [], [], []
        rss_before = status_kib("VmRSS")
        try:
            with httpx.Client(base_url=base, timeout=120) as client:
                for run in range(args.runs):
                    start = time.perf_counter()
                    shutil.copyfile(source, Path(tmp) / "copy.bin")
                    copy_times.append(time.perf_counter() - start)
                    (Path(tmp) / "copy.bin").unlink()

                    resp = client.post(f"/v1/brands/{brand_id}/media/upload-sessions",
                                       headers={"Authorization": f"Bearer {secret}", "Idempotency-Key": f"b{run}"},
                                       json={"filename": "bench.mp4", "content_type": "video/mp4", "size": size,
                                             "sha256": sha})
                    resp.raise_for_status()
                    upload = resp.json()["data"]["upload"]
                    path = upload["url"].split("://", 1)[1].split("/", 1)[1]
                    upload_times.append(send(client, args.client, f"{base}/{path}", source, upload["headers"]))
                    drain_times.append(send(client, args.client, f"{base}/bench/drain", source, upload["headers"]))
        finally:
            server.should_exit = True
            thread.join(timeout=10)
        rss_peak_growth = (status_kib("VmHWM") - rss_before) / 1024

    mb = size / CHUNK
    copy_best, upload_best, drain_best = min(copy_times), min(upload_times), min(drain_times)
    print(f"file: {mb:.0f} MiB, runs: {args.runs}")
    print(f"plain file copy (floor): {mb / copy_best:8.1f} MiB/s  (best of {args.runs}: {copy_best:.3f} s)")
    print(f"upload via PUT route:    {mb / upload_best:8.1f} MiB/s  (best of {args.runs}: {upload_best:.3f} s; "
          f"client {args.client}, loopback HTTP, SHA-256 verified, fsync)")
    print(f"HTTP server ceiling:     {mb / drain_best:8.1f} MiB/s  (same server, a route that discards the body)")
    print(f"ratio upload/copy throughput: {copy_best / upload_best:.2f}")
    print(f"ratio upload/HTTP ceiling:    {drain_best / upload_best:.2f}")
    print(f"peak RSS growth of the process during the run: {rss_peak_growth:.1f} MiB")


if __name__ == "__main__":
    main()
