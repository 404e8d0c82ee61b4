"""Issue 33 items 7 and 8: the tools/list a client receives passes MCP Inspector's schema-portability lint with no
finding at all (tests/mcp/schema_lint.py, ported from Inspector's `core/json/schemaLint.ts`), and the draft tool
says what preflight needs of a first draft.

Before the fix the default toolsets alone had 390 findings (342 schemas with no constraining keyword, 48 `type`
arrays); Inspector 0.15 sent such object arguments as strings and create_content_item failed."""

from __future__ import annotations

import pytest

from server.mcp_server.selection import Selection, parse_toolsets
from tests.mcp.schema_lint import lint_tool, lint_tools
from tests.mcp.support import all_tools, envelope, in_memory

pytestmark = pytest.mark.anyio


async def test_the_full_tools_list_passes_inspectors_portability_lint(world) -> None:
    selection = Selection(toolsets=parse_toolsets("all"))
    async with in_memory(world.env, world.full_key, selection=selection) as client:
        tools, _ = await all_tools(client)
    listed = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    assert len(listed) > 80
    findings = lint_tools(listed)
    assert not findings, "\n".join(map(str, findings[:40]))
    # every sub-schema carries one `type` string or anyOf branches of one type each
    for tool in listed:
        for schema in (tool["inputSchema"], tool.get("outputSchema", {})):
            for node in _nodes(schema):
                assert isinstance(node.get("type"), str) or all(isinstance(b.get("type"), str)
                                                                for b in node.get("anyOf", [None])), (tool["name"], node)


def _nodes(schema: dict):
    yield schema
    for key in ("properties",):
        for child in (schema.get(key) or {}).values():
            yield from _nodes(child)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from _nodes(schema[key])
    for branch in schema.get("anyOf", []):
        yield from _nodes(branch)


@pytest.mark.parametrize(("schema", "rule"), [
    ({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}, "type-union"),
    ({"type": "object", "properties": {"a": {}}}, "untyped-schema"),
    ({"type": "object", "properties": {"a": {"description": "anything"}}}, "untyped-schema"),
    ({"type": "object", "properties": {"a": True}}, "boolean-schema"),
    ({"type": "string"}, "non-object-root"),
    ({"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}}, "remote-ref"),
])
def test_the_lint_flags_each_rule(schema, rule) -> None:
    """The check can fail: each of Inspector's rules fires on the construct it names."""
    assert [f.rule for f in lint_tool({"name": "t", "inputSchema": schema})] == [rule]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
    {"type": "object", "properties": {"a": {"type": "string", "nullable": True}, "b": {"enum": ["x"]}},
     "additionalProperties": False},
])
def test_the_lint_accepts_the_portable_spellings(schema) -> None:
    assert lint_tool({"name": "t", "inputSchema": schema}) == []


async def test_create_content_item_says_settings_are_needed_and_types_single_copy(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        tools, _ = await all_tools(client)
    tool = next(t for t in tools if t.name == "create_content_item")
    assert tool.description is not None
    assert "SETTINGS_MISSING" in tool.description and "<platform>_settings" in tool.description
    single = tool.input_schema["properties"]["single_copy"]
    assert single["type"] == "object" and single["properties"]
    for key, sub in single["properties"].items():
        assert isinstance(sub.get("type"), str) or sub.get("anyOf"), (key, sub)
    assert single["properties"]["caption"] == {"type": "string"} and single["properties"]["hashtags"]["type"] == "array"


async def test_a_nullable_argument_still_takes_null_on_the_server(world) -> None:
    """The listing spells `X or null` as `nullable: true`; the server validates as REST does and takes null."""
    async with in_memory(world.env, world.full_key) as client:
        result = await client.call_tool("get_context", {"scope_disclosure": None})
    assert envelope(result)["success"] is True
