"""A 200 MB upload through the real PUT route keeps the server's memory flat: the body is streamed to disk."""

from __future__ import annotations

import gc
import hashlib
import tracemalloc
from pathlib import Path

import pytest

from tests.media.support import local

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SIZE = 200 * 1024 * 1024
CHUNK = 1024 * 1024


def chunk(i: int) -> bytes:
    return bytes([i % 251]) * CHUNK


def peak_rss_reset() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux)
        return True
    except OSError:
        return False


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


async def test_200_mb_upload_is_streamed(sqlite_env) -> None:
    env = sqlite_env
    ws = await env.workspace()
    brand = await env.brand(ws)
    secret = await env.key(ws)
    digest = hashlib.sha256()
    for i in range(SIZE // CHUNK):
        digest.update(chunk(i))
    resp = await env.rest.post(f"/v1/brands/{brand.id}/media/upload-sessions",
                               headers=env.auth(secret, Idempotency_Key="big"),
                               json={"filename": "big.mp4", "content_type": "video/mp4", "size": SIZE,
                                     "sha256": digest.hexdigest()})
    session = resp.json()["data"]

    async def body():
        for i in range(SIZE // CHUNK):
            yield chunk(i)

    gc.collect()
    can_rss = peak_rss_reset()
    rss_before = status_kib("VmRSS")
    tracemalloc.start()
    try:
        resp = await env.rest.put(local(session["upload"]["url"]), content=body(),
                                  headers=session["upload"]["headers"])
        _, traced_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = (status_kib("VmHWM") - rss_before) * 1024 if can_rss else None
    assert resp.status_code == 200, resp.json()
    assert resp.json()["data"]["size"] == SIZE
    print(f"\n200 MB upload: traced Python allocation peak {traced_peak / 2**20:.1f} MiB"
          + (f", peak RSS growth {rss_growth / 2**20:.1f} MiB" if rss_growth is not None else ""))
    # Streamed: a few chunks in flight (client chunk, ASGI message, 1 MiB write buffer), never the file.
    assert traced_peak < 16 * 2**20
    if rss_growth is not None:
        assert rss_growth < 64 * 2**20
    stored = [p for p in (Path(env.rt.settings.home) / "media" / "blobs").rglob("*") if p.is_file()]
    assert [p.stat().st_size for p in stored] == [SIZE]
