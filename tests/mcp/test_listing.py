"""What `tools/list` costs a client, and that the lean listing loses no valid value.

The listed schemas (tools/tool_schemas.py `listed_*`) only loosen the full REST schemas; real results are
checked against the listed output schema by the in-memory client (legacy mode validates structuredContent) in
every MCP test, and explicitly, for every tool, in tests/mcp/test_output_schemas.py. bench/tool_list_size.py
measures the listing as a client receives it (every page over the in-process client).
"""

from __future__ import annotations

import json
import re

import pytest
from jsonschema import Draft202012Validator, validators

from server.mcp_server import tools as mcp_tools
from server.mcp_server.selection import Selection, parse_toolsets
from tools import catalogue
from tools.tool_schemas import SETTINGS_SCHEMA_URI, input_schema

ENDPOINTS = catalogue.endpoints()
# No tool may silently grow back: a listed tool (description, schemas, annotations, _meta) stays under this.
TOOL_CAP_BYTES = 6 * 1024
# issue 17's budgets for the whole listing (bench/tool_list_size.py adds the pages' few bytes of envelope).
BUDGETS = {"default": 40 * 1024, "all": 120 * 1024}


def listed_bytes(name: str) -> int:
    tool = mcp_tools.specs()[name].tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return len(json.dumps(tool, separators=(",", ":")))


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name)
def test_each_tool_is_capped(ep) -> None:
    assert listed_bytes(ep.name) <= TOOL_CAP_BYTES


def keywords(node: dict) -> set[str]:
    """The JSON Schema keywords used anywhere in a schema (property names are not keywords)."""
    found = set(node)
    for key, value in node.items():
        children = value.values() if key == "properties" else [value] if key in ("items", "additionalProperties") else []
        for child in children:
            if isinstance(child, dict):
                found |= keywords(child)
    return found


def test_the_listing_fits_its_budgets() -> None:
    endpoints = [s.endpoint for s in mcp_tools.specs().values()]
    for label, selection in (("default", Selection()), ("all", Selection(toolsets=parse_toolsets("all")))):
        total = sum(listed_bytes(ep.name) for ep in selection.listed(endpoints, None))
        assert total <= BUDGETS[label] - 1024, (label, total)  # a KB left for the pages' envelopes


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name)
def test_listed_schemas_are_valid_and_point_to_settings_rules(ep) -> None:
    tool = mcp_tools.specs()[ep.name].tool
    assert tool.output_schema is not None and tool.description is not None
    for schema in (tool.input_schema, tool.output_schema):
        Draft202012Validator.check_schema(schema)
        assert "$defs" not in schema and "$ref" not in json.dumps(schema)
        assert not {"title", "default", "$defs", "anyOf", "oneOf"} & keywords(schema)
    settings = [n for n in tool.input_schema["properties"] if n.endswith("_settings")]
    # Which platforms: every settings field of the REST body is listed, typed at the top level.
    assert settings == [n for n in input_schema(ep)["properties"] if n.endswith("_settings")]
    for name in settings:
        assert "object" in tool.input_schema["properties"][name]["type"]
    if settings:  # the rules are one resource read away, and the description says where
        assert SETTINGS_SCHEMA_URI in tool.description


def test_settings_keys_are_listed_once() -> None:
    """Which keys each platform's settings take: listed by the first tool taking settings; the others say so."""
    taking = [s for s in mcp_tools.specs().values() if any(n.endswith("_settings") for n in s.tool.input_schema["properties"])]
    first, *others = taking
    assert first.name == "create_content_item"
    tiktok = first.tool.input_schema["properties"]["tiktok_settings"]["properties"]
    assert {"privacy_level", "media_ids", "agreed_to_terms"} <= set(tiktok)
    assert tiktok["post_type"] == {"type": "string", "enum": ["VIDEO", "IMAGE", "CAROUSEL"]}
    for spec in others:
        assert "keys as in create_content_item" in (spec.tool.description or ""), spec.name
        assert "properties" not in spec.tool.input_schema["properties"]["tiktok_settings"]


def _nullable_type(validator, types, instance, schema):
    """`type` as OpenAPI-reading clients apply it: `nullable: true` beside it also admits null (issue 33: the
    listing spells `X or null` so, one `type` string per schema)."""
    if instance is None and schema.get("nullable") is True:
        return
    yield from _draft_type(validator, types, instance, schema)


_draft_type = Draft202012Validator.VALIDATORS["type"]
ListingValidator = validators.extend(Draft202012Validator, {"type": _nullable_type})


def test_lean_schemas_only_loosen() -> None:
    """A body the REST schema accepts is accepted by the listed schema (the server keeps every rule). Below the
    top level a key lists its non-null type (absent and null are the same there), so the body omits them."""
    tool = mcp_tools.specs()["create_content_item"].tool
    body = {"brand_id": "brd_x", "name": "n", "copy_mode": "single", "single_copy": {"caption": "c"},
            "tiktok_settings": {"post_type": "VIDEO"}, "x_settings": None, "thumbnail_media_id": None,
            "platform_copy": {"x": {"caption": "c"}}, "label_ids": [], "idempotency_key": "k"}
    assert not list(ListingValidator(tool.input_schema).iter_errors(body))
    # ...and its top level still refuses what no body can be
    assert list(ListingValidator(tool.input_schema).iter_errors({"brand_id": "b"}))  # name is required
    assert list(ListingValidator(tool.input_schema).iter_errors({**body, "copy_mode": "both"}))
    assert list(ListingValidator(tool.input_schema).iter_errors({**body, "name": None}))  # not nullable
    assert list(ListingValidator(tool.input_schema).iter_errors({**body, "platform_copy": {"myspace": {}}}))


# What a tool never does, said in one of these words ("Never publishes", "calls no provider", "changes nothing").
NEVER_WORDS = re.compile(r"\b(never|no|nothing|not|only|unchanged|untouched)\b", re.IGNORECASE)


@pytest.mark.parametrize("ep", ENDPOINTS, ids=lambda e: e.name)
def test_description_is_short_and_says_what_the_tool_never_does(ep) -> None:
    text = mcp_tools.specs()[ep.name].tool.description
    assert text is not None
    assert len(text) <= 600, len(text)
    assert NEVER_WORDS.search(text), text
