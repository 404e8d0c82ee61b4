"""BlueskyProvider.publish throughput against the local PDS, as a ratio to bare putRecord calls, one run.

N text posts (a link, a hashtag) are published one after another through `BlueskyProvider.publish` (session
reuse, facet detection, a TID key from the token, `putRecord`, error classification). The floor is N bare
`putRecord` calls of the same records over one keep-alive httpx client with a ready session, interleaved
with the adapter's posts: the least a post costs on this PDS. The ratio says what the adapter adds per post. Needs the PDS that
`bash .ci/pds/install.sh` installs (the worker, database and vault are not involved: `bench/publishing.py`
measures those against the sandbox).

    python bench/bluesky_publish.py [--posts 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from providers.base import Account, PostRequest
from providers.bluesky import BlueskyProvider, connect
from providers.bluesky_text import record_key
from tests.networks.pds import PdsUnavailable, start_pds, stop_pds

TEXT = "Bench post {n}: https://example.com/bench?n={n} #bench"


async def main(posts: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            pds = start_pds(Path(tmp))
        except PdsUnavailable as exc:
            sys.exit(f"bluesky_publish: {exc}")
        try:
            who = pds.create_account("bench")
            made = await connect(who.service, who.handle, who.app_password)
            account = Account("int_bench", "bluesky", "connected", made.provider_account_id, made.credentials,
                              made.state)
            provider = BlueskyProvider()
            await provider.publish(account, PostRequest("bluesky", "BS_TEXT", "warm-up", idempotency_token="w"))

            # Interleaved, one adapter post then one bare write, so both see the same repository size and PDS
            # state (a repository that grows makes later writes slower).
            adapter_s = floor_s = 0.0
            headers = {"Authorization": f"Bearer {account.credentials['access_jwt']}"}  # pyright: ignore[reportOptionalSubscript]  # the bench's account always has credentials
            async with httpx.AsyncClient(base_url=pds.url, headers=headers, timeout=30) as client:
                for n in range(posts):
                    start = time.perf_counter()
                    await provider.publish(account, PostRequest("bluesky", "BS_TEXT", TEXT.format(n=n),
                                                                idempotency_token=f"sp_bench_{n}"))
                    adapter_s += time.perf_counter() - start
                    record = {"$type": "app.bsky.feed.post", "text": TEXT.format(n=n),
                              "createdAt": "2026-01-05T09:00:00.000Z"}
                    start = time.perf_counter()
                    answer = await client.post("/xrpc/com.atproto.repo.putRecord", json={
                        "repo": who.did, "collection": "app.bsky.feed.post",
                        "rkey": record_key(f"sp_floor_{n}"), "record": record})
                    answer.raise_for_status()
                    floor_s += time.perf_counter() - start
        finally:
            stop_pds(pds)

    print(f"posts: {posts} (text with a link and a hashtag, one after another, local PDS)")
    print(f"BlueskyProvider.publish: {adapter_s:8.3f} s  {posts / adapter_s:8.1f} posts/s")
    print(f"bare putRecord (floor):  {floor_s:8.3f} s  {posts / floor_s:8.1f} posts/s")
    print(f"ratio (adapter time per post / bare putRecord): {adapter_s / floor_s:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--posts", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.posts)
