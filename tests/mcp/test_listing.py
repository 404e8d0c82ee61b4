"""What `tools/list` costs a client, and that the lean listing loses no valid value.

The listed schemas (tools/tool_schemas.py `listed_*`) only loosen the full REST schemas; real results are
checked against the listed output schema by the in-memory client (legacy mode validates structuredContent) in
every MCP test, and explicitly in tests/mcp/test_parity.py.
"""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator

from server.mcp_server import tools as mcp_tools
from tools import catalogue

ENDPOINTS = catalogue.endpoints()
# No tool may silently grow back: a listed tool (description, schemas, annotations, _meta) stays under this.
TOOL_CAP_BYTES = 9_216


def listed_bytes(name: str) -> int:
    tool = mcp_tools.specs()[name].tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return len(json.dumps(tool, separators=(",", ":")))


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name)
def test_each_tool_is_capped(ep) -> None:
    assert listed_bytes(ep.name) <= TOOL_CAP_BYTES


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name)
def test_listed_schemas_are_valid_and_point_to_settings_rules(ep) -> None:
    tool = mcp_tools.specs()[ep.name].tool
    for schema in (tool.input_schema, tool.output_schema):
        Draft202012Validator.check_schema(schema)
        assert "$defs" not in schema and "$ref" not in json.dumps(schema)
    for name, prop in tool.input_schema["properties"].items():
        if name.endswith("_settings"):
            platform = name.removesuffix("_settings")
            assert prop["description"] == f"Rules: socialpub://platforms/{platform}/settings-schema"
            assert prop["properties"], "the platform's keys are listed"


# What a tool never does, said in one of these words ("Never publishes", "calls no provider", "changes nothing").
NEVER_WORDS = re.compile(r"\b(never|no|nothing|not|only|unchanged|untouched)\b", re.IGNORECASE)


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name)
def test_description_is_short_and_says_what_the_tool_never_does(ep) -> None:
    text = mcp_tools.specs()[ep.name].tool.description
    assert len(text) <= 600, len(text)
    assert NEVER_WORDS.search(text), text
