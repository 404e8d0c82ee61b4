"""The shared contract suite of the OAuth network adapters (issue 15): no local server exists for these networks,
so each adapter is tested at the request level with respx, its requests asserted against the network's official
reference. Every adapter plugs in one `Case` (tests/networks/cases/<network>.py) that knows its network's routes
and request shapes; tests/networks/test_contract.py runs the same checks against every case:

- publish text / media / thread (where the network supports them): method, path, headers, query and body;
- async media processing: success after polling, and a final failure → `rejected` with a specific safe reason;
- exactly-once: after a simulated crash the adapter finds the earlier post (`find_post` / `find_post_matching`)
  and the worker does not post twice;
- classification of 400/401/403/429/5xx and timeouts into the error kinds;
- token refresh success (rotated refresh token stored) and failure (→ account `expired` + `integration_refresh`).

A new network adds a case module and appends it to CASES; nothing else here changes.
"""

from __future__ import annotations

from typing import Any, Protocol

import httpx
import respx

from providers.base import Account, PostRequest, Provider

MEDIA_BASE = "https://media.test"
PNG = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde\x00\x00"
       b"\x00\x0cIDATx\x9cc\xf8\xcf\xc0\x00\x00\x03\x01\x01\x00\xc9\xfe\x92\xef\x00\x00\x00\x00IEND\xaeB`\x82")
MP4 = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64


def image(name: str = "a.png") -> dict[str, Any]:
    return {"url": f"{MEDIA_BASE}/assets/{name}", "content_type": "image/png", "width": 1, "height": 1,
            "duration": None}


def video(name: str = "v.mp4") -> dict[str, Any]:
    return {"url": f"{MEDIA_BASE}/assets/{name}", "content_type": "video/mp4", "width": 1080, "height": 1920,
            "duration": 5.0}


def serve_media(router: respx.MockRouter) -> None:
    """Our own media URLs (what the worker hands adapters), answered by respx."""
    router.get(f"{MEDIA_BASE}/assets/a.png").mock(return_value=httpx.Response(200, content=PNG,
                                                                            headers={"content-type": "image/png"}))
    router.get(f"{MEDIA_BASE}/assets/v.mp4").mock(return_value=httpx.Response(200, content=MP4,
                                                                            headers={"content-type": "video/mp4"}))


class Case(Protocol):
    """What one network plugs into the suite."""

    platform: str  # the spec platform and integration.platform
    provider_name: str  # the key in default_providers()
    supports: set[str]  # of "text", "media", "thread", "async_media"
    secrets: list[str]  # credential values that must never appear in an error message or reason

    def provider(self) -> Provider: ...
    def account(self) -> Account: ...
    def post(self, kind: str) -> PostRequest: ...
    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        """Routes for publishing a `kind` post ("text", "media", "thread", "async_media"); `processing`
        ("ok" | "failed" | "stuck") for networks whose media is processed asynchronously."""
    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        """Assert the requests made against the network's official reference (and the result)."""
    def first_write(self) -> str:
        """The route name of the first request that creates something (used for the error classification)."""
        ...
    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        """The account's recent posts, with (present) or without the post an earlier attempt made."""
    def recovered_id(self) -> str: ...
    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None: ...
    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None: ...
    def processing_failure_words(self) -> str: ...
