"""JSON Schemas derived from the catalogue: tool input (flat), success payload, success envelope, errors.

MCP tools, OpenAPI, docs/tools.md, the manifest and response validation all read these; nothing else
builds a schema by hand.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from pydantic import BaseModel, TypeAdapter

from schemas.envelope import OlderPagination
from schemas.errors import ErrorEnvelope
from tools.endpoint import LOCATION_KEY, Endpoint

IDEMPOTENCY_KEY_SCHEMA = {
    "type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^[\x21-\x7e]+$",
    "description": "Caller-chosen key (e.g. a UUID). Resending the same input with the same key returns the "
                   "stored result instead of acting twice; different input under a used key is refused (409).",
}


def _strip_locations(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_locations(v) for k, v in node.items() if k != LOCATION_KEY}
    if isinstance(node, list):
        return [_strip_locations(v) for v in node]
    return node


def model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(mode="validation")


@cache
def input_schema(ep: Endpoint) -> dict[str, Any]:
    """One flat object: path params, query params, body fields, plus idempotency_key where the route takes one."""
    schema = _strip_locations(model_schema(ep.request))
    schema.pop("title", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    schema["additionalProperties"] = False
    if ep.idempotency != "none":
        schema["properties"]["idempotency_key"] = dict(IDEMPOTENCY_KEY_SCHEMA)
        if ep.idempotency == "required":
            schema.setdefault("required", []).append("idempotency_key")
    if "required" in schema and not schema["required"]:
        del schema["required"]
    return schema


@cache
def payload_schema(ep: Endpoint) -> dict[str, Any]:
    """The `data` of a success: the response model, or an array of it for older lists."""
    if ep.response is None:
        return {"type": "object"}
    schema = ep.response.model_json_schema(mode="serialization")
    if ep.list_shape == "older":
        defs = schema.pop("$defs", {})
        item = schema
        out: dict[str, Any] = {"type": "array", "items": item}
        if defs:
            out["$defs"] = defs
        return out
    return schema


def _hoist_defs(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = copy.deepcopy(schema)
    defs = schema.pop("$defs", {})
    return schema, defs


@cache
def envelope_schema(ep: Endpoint) -> dict[str, Any]:
    """The success envelope `{success, data, meta}` (plus `pagination` on older lists): the MCP output schema."""
    data, defs = _hoist_defs(payload_schema(ep))
    props: dict[str, Any] = {
        "success": {"const": True},
        "data": data,
        "meta": {
            "type": "object",
            "properties": {
                "request_id": {"type": "string"},
                "idempotency_replayed": {"type": "boolean"},
            },
            "required": ["request_id"],
        },
    }
    required = ["success", "data", "meta"]
    if ep.list_shape == "older":
        props["pagination"] = TypeAdapter(OlderPagination).json_schema()
        required.append("pagination")
    out: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if defs:
        out["$defs"] = defs
    return out


@cache
def error_schema() -> dict[str, Any]:
    return ErrorEnvelope.model_json_schema()
