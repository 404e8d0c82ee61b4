"""One call, one answer: for EVERY catalogue endpoint, the same call over REST and over MCP gives the same
envelope (success or error, issues included), the same status and the same is_error, apart from the request ID.

Both surfaces run the same dispatch (authenticate -> brand visibility -> scopes -> role -> validate ->
idempotency -> handler), so each endpoint is called as:
- no key, with an unknown argument: 401 on both (400 for public endpoints: validation);
- a key with no scopes, with an unknown argument: 403 on both for scoped endpoints;
- a key restricted to another brand, on a brand path: 404 on both;
- a full key with an unknown argument: the same 400 and issues;
- a full key with only the path (and required query) arguments: reads and writes on absent resources answer
  alike (a write whose only path parameter is the brand would change state, so it is not repeated).
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from server.mcp_server import tools as mcp_tools
from server.mcp_server.selection import Selection
from tests.mcp.support import envelope, in_memory
from tools import catalogue
from tools.endpoint import fields_at
from tools.toolsets import TOOLSETS

pytestmark = pytest.mark.anyio

ALL = Selection(toolsets=tuple(t.name for t in TOOLSETS), all_tools=True)
ENDPOINTS = catalogue.endpoints()
BOGUS = {"bogus_argument": "1"}
# Required query parameters of some reads, so the bare call is a valid one.
QUERY_ARGS: dict[str, dict[str, Any]] = {
    "list_schedules": {"from": "2026-03-01T00:00:00.000Z", "to": "2026-04-01T00:00:00.000Z"},
}


def _without_request_id(body: dict[str, Any]) -> dict[str, Any]:
    out = dict(body)
    if "meta" in out:
        out["meta"] = {k: v for k, v in out["meta"].items() if k != "request_id"}
    if "error" in out:
        out["error"] = {k: v for k, v in out["error"].items() if k != "request_id"}
    return out


def _path_args(ep: Any, brand_id: str) -> dict[str, str]:
    return {p: brand_id if p == "brand_id" else f"{p.removesuffix('_id')}_absent" for p in ep.path_params}


async def _both(world: Any, ep: Any, key: str | None, args: dict[str, Any]) -> int:
    env = world.env
    path = ep.path.format(**{p: args[p] for p in ep.path_params})
    rest_args = {k: v for k, v in args.items() if k not in ep.path_params}
    query_names = set(fields_at(ep.request, "query"))
    if ep.method == "GET":
        query, body = rest_args, None
    else:
        query = {k: v for k, v in rest_args.items() if k in query_names}
        body = {k: v for k, v in rest_args.items() if k not in query_names}
    if ep.variant:
        query = {**query, "variant": ep.variant}
    rest = await env.rest.request(ep.method, path, params=query or None, json=body if body else None,
                                  headers=env.auth(key))
    async with in_memory(env, key, selection=ALL) as client:
        result = await client.call_tool(ep.name, args)
    mcp = envelope(result)
    if not result.is_error:  # a success validates against the lean schema the tool lists
        listed = mcp_tools.specs()[ep.name].tool.output_schema
        assert listed is not None, ep.name
        assert not [e.message for e in Draft202012Validator(listed).iter_errors(mcp)], ep.name
    assert _without_request_id(mcp) == _without_request_id(rest.json()), (ep.name, key and "key", args)
    assert result.is_error is (rest.status_code >= 400)
    if not mcp["success"]:
        assert mcp["error"]["status"] == rest.status_code
    return rest.status_code


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name + (f"-{e.variant}" if e.variant else ""))
async def test_rest_and_mcp_agree(world, ep) -> None:
    base = _path_args(ep, world.brand_a.id)

    status = await _both(world, ep, None, {**base, **BOGUS})
    assert status == (400 if ep.public else 401), "a keyless bad request is 401 on both surfaces"

    if ep.scopes:
        assert await _both(world, ep, await world.env.key(world.ws, scopes=[]), {**base, **BOGUS}) == 403
    if "brand_id" in ep.path_params:
        assert await _both(world, ep, world.key_b_only, {**base, **BOGUS}) == 404

    assert await _both(world, ep, world.full_key, {**base, **BOGUS}) == 400

    if ep.method == "GET" or set(ep.path_params) - {"brand_id"}:
        await _both(world, ep, world.full_key, {**base, **QUERY_ARGS.get(ep.name, {})})


def test_parity_covers_every_endpoint() -> None:
    assert len(ENDPOINTS) >= 90 and {e.name for e in ENDPOINTS} == set(catalogue.by_name())
