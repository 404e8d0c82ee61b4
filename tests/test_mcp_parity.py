"""The same call over REST and over MCP gives the same `data` (or the same error code and status).

Covers the context and capabilities reads and, automatically, every GET endpoint whose only path parameter is
brand_id (as other areas add them), for a full key, a key restricted to another brand, a key without the
endpoint's scopes, and no key.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from server.mcp_server.selection import Selection
from tests.mcp_support import envelope, in_memory
from tools import catalogue
from tools.toolsets import TOOLSETS

pytestmark = pytest.mark.anyio

ALL = Selection(toolsets=tuple(t.name for t in TOOLSETS), all_tools=True)
PARITY = [ep for ep in catalogue.endpoints()
          if ep.method == "GET" and set(ep.path_params) <= {"brand_id"}]
# Required query parameters of some of those reads: parity is compared on a valid call. (A missing required
# argument is refused by the MCP adapter's schema check before the key is looked at, by REST after it.)
QUERY_ARGS: dict[str, dict[str, Any]] = {
    "list_schedules": {"from": "2026-03-01T00:00:00.000Z", "to": "2026-04-01T00:00:00.000Z"},
}


def _rest_path(ep: Any, brand_id: str) -> str:
    path = ep.path.format(brand_id=brand_id) if ep.path_params else ep.path
    return path + ("?variant=" + ep.variant if ep.variant else "")


def _comparable(body: dict[str, Any]) -> tuple[Any, ...]:
    if body.get("success"):
        return ("ok", body["data"], body.get("pagination"))
    return ("error", body["error"]["code"], body["error"]["status"])


def test_parity_covers_the_core_reads() -> None:
    names = {ep.name for ep in PARITY}
    assert {"get_context", "get_platform_capabilities", "get_brand_context", "list_brands", "get_brand"} <= names


@pytest.mark.parametrize("ep", PARITY, ids=lambda e: e.name + (f"-{e.variant}" if e.variant else ""))
@pytest.mark.parametrize("who", ["full", "other_brand", "no_scope", "no_key"])
async def test_rest_and_mcp_agree(world, ep, who) -> None:
    env = world.env
    keys = {"full": world.full_key, "other_brand": world.key_b_only, "no_key": None,
            "no_scope": await env.key(world.ws, scopes=[])}
    key = keys[who]
    brand_id = world.brand_a.id
    query = QUERY_ARGS.get(ep.name, {})
    path = _rest_path(ep, brand_id)
    if query:  # (httpx replaces a URL's own query, ?variant=, when params are given)
        path += ("&" if "?" in path else "?") + urlencode(query)
    rest = await env.rest.get(path, headers=env.auth(key))
    args = {**({"brand_id": brand_id} if ep.path_params else {}), **query}
    async with in_memory(env, key, selection=ALL) as client:
        result = await client.call_tool(ep.name, args)
    body = envelope(result)
    assert _comparable(body) == _comparable(rest.json())
    assert result.is_error is (rest.status_code >= 400)
    if not body["success"]:
        assert body["error"]["status"] == rest.status_code
