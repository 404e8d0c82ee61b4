"""MCP resources and prompts through the in-process legacy client."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from server.mcp_server.resources import RESOURCES
from server.mcp_server.selection import Selection
from tests.mcp.support import in_memory, text_of

pytestmark = pytest.mark.anyio


async def test_resources_and_templates_are_listed(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
    assert {r.uri for r in listed} == {"socialpub://platforms/capabilities", "socialpub://context"}
    assert [t.uri_template for t in templates] == ["socialpub://platforms/{platform}/settings-schema",
                                                   "socialpub://brands/{brand_id}/context",
                                                   "socialpub://brands/{brand_id}/schedules/{schedule_id}",
                                                   "socialpub://brands/{brand_id}/notifications",
                                                   "socialpub://brands/{brand_id}/performance"]
    assert all(r.name and r.description and r.mime_type == "application/json" for r in [*listed, *templates])


@pytest.mark.parametrize("uri,rest_path", [
    ("socialpub://platforms/capabilities", "/v1/platforms/capabilities"),
    ("socialpub://context", "/v1/context"),
    ("socialpub://brands/{a}/context", "/v1/brands/{a}/context"),
    ("socialpub://brands/{a}/performance", "/v1/brands/{a}/analytics/performance"),
])
async def test_each_resource_reads_its_endpoint_data(world, uri, rest_path) -> None:
    env = world.env
    uri, rest_path = uri.format(a=world.brand_a.id), rest_path.format(a=world.brand_a.id)
    rest = (await env.rest.get(rest_path, headers=env.auth(world.full_key))).json()
    async with in_memory(env, world.full_key) as client:
        result = await client.read_resource(uri)
    (content,) = result.contents
    assert content.uri == uri and content.mime_type == "application/json"
    assert json.loads(text_of(content)) == rest["data"]


async def test_platform_settings_schema_is_the_capabilities_entry(world) -> None:
    """The deep rules a tool listing leaves out: every platform's full settings schema, read from the registry."""
    env = world.env
    caps = (await env.rest.get("/v1/platforms/capabilities")).json()["data"]
    async with in_memory(env, world.full_key) as client:
        for platform in caps["platforms"]:
            result = await client.read_resource(f"socialpub://platforms/{platform['key']}/settings-schema")
            doc = json.loads(text_of(result.contents[0]))
            assert doc["settings_fields"] == platform["settings_fields"]
            assert doc["settings_key"] == platform["settings_key"]  # null for a platform without settings
            assert doc["required_settings"] == platform["required_settings"]
        with pytest.raises(MCPError) as info:
            await client.read_resource("socialpub://platforms/myspace/settings-schema")
    assert (info.value.data["code"], info.value.data["status"]) == ("NOT_FOUND", 404)
    assert "bluesky" in info.value.data["message"]


@pytest.mark.parametrize("case", ["other_brand", "missing_scope", "unknown_uri", "bad_key"])
async def test_read_errors_carry_the_spec_error(world, case) -> None:
    env = world.env
    key, uri, expected = world.full_key, f"socialpub://brands/{world.brand_a.id}/context", None
    if case == "other_brand":
        key, expected = world.key_b_only, ("NOT_FOUND", 404)
    elif case == "missing_scope":
        key, expected = await env.key(world.ws, scopes=["brands:read"]), ("INSUFFICIENT_SCOPE", 403)
    elif case == "unknown_uri":
        uri, expected = "socialpub://nothing/here", ("NOT_FOUND", 404)
    else:
        key, uri, expected = "socialpub_live_wrong", "socialpub://context", ("UNAUTHORIZED", 401)
    async with in_memory(env, key) as client:
        with pytest.raises(MCPError) as info:
            await client.read_resource(uri)
    data = info.value.data
    assert info.value.code == types.INVALID_PARAMS
    assert (data["code"], data["status"]) == expected
    assert data["request_id"].startswith("req_") and data["retryable"] is False and data["message"]


async def test_template_values_are_url_decoded(world) -> None:
    template = next(d for d in RESOURCES if d.uri == "socialpub://brands/{brand_id}/context")
    assert template.match("socialpub://brands/brd%5F1/context") == {"brand_id": "brd_1"}
    assert template.match("socialpub://brands/a/b/context") is None
    assert template.match("socialpub://brands//context") is None


# -- prompts -----------------------------------------------------------------------------------------------

async def test_prompts_are_listed_with_arguments(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        listed = (await client.list_prompts()).prompts
    names = {p.name for p in listed}
    assert {"draft_and_schedule_post", "review_held_schedules", "fix_blocked_preflight"} <= names
    draft = next(p for p in listed if p.name == "draft_and_schedule_post")
    assert draft.description and draft.arguments is not None
    assert [a.name for a in draft.arguments if a.required] == ["brand_id"]


async def test_prompt_walks_only_tools_this_connection_has(world) -> None:
    env = world.env
    async with in_memory(env, world.full_key, selection=Selection(toolsets=("context",))) as client:
        result = await client.get_prompt("draft_and_schedule_post", {"brand_id": world.brand_a.id,
                                                                    "brief": "spring launch"})
    text = text_of(result.messages[0].content)
    assert result.messages[0].role == "user"
    assert world.brand_a.id in text and "spring launch" in text
    assert "1. `get_context`" in text and "`get_platform_capabilities`" in text
    # get_brand_context exists but is in another toolset: named as unavailable with what enables it
    assert "`get_brand_context`" not in text
    assert "get_brand_context (toolset brands, scope posts:read)" in text
    assert "{" not in text  # every placeholder filled


async def test_prompt_argument_errors(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("draft_and_schedule_post", {})
        assert info.value.code == types.INVALID_PARAMS and "brand_id" in info.value.message
        with pytest.raises(MCPError) as info:
            await client.get_prompt("no_such_prompt", {})
        assert info.value.code == types.INVALID_PARAMS
