"""Fixtures for the network adapters' tests: a real Bluesky PDS (session-wide) and a local media server."""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NoReturn

import pytest

from providers import addresses
from tests.networks.pds import BlueskyAccount, Pds, PdsFailed, PdsUnavailable, start_pds, stop_pds
from tests.providers.descriptions import described_requests  # noqa: F401 - autouse: every captured request checked


def _unavailable(reason: str) -> NoReturn:
    """Skip with the reason, or fail when CI demands the PDS (CI set and SOCIALPUB_REQUIRE_PDS=1)."""
    if os.environ.get("CI") and os.environ.get("SOCIALPUB_REQUIRE_PDS") == "1":
        pytest.fail(f"{reason} (SOCIALPUB_REQUIRE_PDS=1: the Bluesky tests must run in CI)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
async def loopback_allowed() -> AsyncIterator[None]:
    """The test servers (mastodon-mock, the PDS) listen on 127.0.0.1, which the address policy refuses unless
    allowed: adapter calls a test makes directly allow it, as SOCIALPUB_FETCH_ALLOW_HOSTS does for the service
    (whose own calls take it from settings). An async fixture, so the context it sets is the test's."""
    with addresses.allowing(["127.0.0.1"]):
        yield


@pytest.fixture(scope="session")
def pds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pds]:
    """The real PDS for the session; skipped (visibly) only when it is not installed."""
    try:
        server = start_pds(tmp_path_factory.mktemp("pds"))
    except PdsUnavailable as exc:
        _unavailable(str(exc))
    except PdsFailed as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        stop_pds(server)


@pytest.fixture
def bsky_account(pds: Pds) -> BlueskyAccount:
    """A fresh account with an app password on the test PDS (one per test, so records never mix)."""
    return pds.create_account()


class MediaServer:
    """Our own media URL stand-in: a loopback HTTP server answering the bytes registered under a path."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, bytes]] = {}
        files = self.files

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                found = files.get(self.path)
                if found is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", found[0])
                self.send_header("Content-Length", str(len(found[1])))
                self.end_headers()
                self.wfile.write(found[1])

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def add(self, name: str, content_type: str, data: bytes) -> str:
        self.files[f"/assets/{name}"] = (content_type, data)
        return f"{self.base}/assets/{name}"


@pytest.fixture(scope="session")
def media_server() -> Iterator[MediaServer]:
    server = MediaServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
