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


# -- lean listings (MCP `tools/list`) ---------------------------------------------------------------------
# The full schemas above stay the REST contract (OpenAPI, response validation). An MCP client loads every
# listed schema into its agent's context, so a tool lists a lean view: the top-level shape with types and
# keys, and nothing deeper. Each lean schema only loosens the full one (a value valid against the full
# schema is valid against the lean one); the dispatcher still validates every argument with the request
# model and every result with the full envelope schema, so nothing the server enforces is lost.

SETTINGS_SUFFIX = "_settings"
SETTINGS_SCHEMA_URI = "socialpub://platforms/{platform}/settings-schema"
# Bounds, patterns and defaults are enforced (and named in error issues) by the server; a listing keeps the
# facts an agent chooses by: types, enumerations, descriptions, which fields are required.
_KEEP = ("type", "enum", "const")
LISTED_IDEMPOTENCY_NOTE = "Retry key (e.g. a UUID): the same key and input return the stored result."


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while "$ref" in node and seen < 32:
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = {**defs[node["$ref"].rsplit("/", 1)[-1]], **extra}
        seen += 1
    return node


def _types(node: dict[str, Any], defs: dict[str, Any]) -> list[str] | None:
    """The JSON types a node admits, or None when that is not a plain list (then the lean node admits anything)."""
    node = _resolve(node, defs)
    if "type" in node:
        return node["type"] if isinstance(node["type"], list) else [node["type"]]
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        out: list[str] = []
        for branch in branches:
            found = _types(branch, defs)
            if found is None:
                return None
            out += [t for t in found if t not in out]
        return out
    values = node.get("enum") or ([node["const"]] if "const" in node else None)
    if values:
        names = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
        found = [names.get(type(v)) for v in values]
        return None if None in found else list(dict.fromkeys(found))  # type: ignore[arg-type]
    return None


def _lean(node: Any, defs: dict[str, Any], depth: int, keys_to: int, notes_to: int) -> dict[str, Any]:
    """Keep property names down to depth `keys_to` and descriptions down to `notes_to`; below, only types."""
    if not isinstance(node, dict):
        return {}
    node = _resolve(node, defs)
    keep = _KEEP if depth <= notes_to else ("type", "enum", "const") if depth <= keys_to else ("type",)
    out: dict[str, Any] = {k: node[k] for k in keep if k in node}
    if depth <= notes_to and node.get("description"):
        out["description"] = node["description"]
    if depth > keys_to:
        if "type" not in out:
            found = _types(node, defs)
            if found:
                out["type"] = found[0] if len(found) == 1 else found
        return out
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        # oneOf becomes anyOf: loosened branches may overlap, which oneOf would reject.
        leaned = [_lean(b, defs, depth, keys_to, notes_to) for b in branches]
        simple = [b for b in leaned if set(b) <= {"type"}]
        if len(simple) == len(leaned):
            types_ = [t for b in leaned for t in (b["type"] if isinstance(b["type"], list) else [b["type"]])]
            out["type"] = types_[0] if len(types_) == 1 else list(dict.fromkeys(types_))
        elif len(leaned) == 2 and {"type": "null"} in leaned:
            # `X or null`, pydantic's Optional: X's shape with "null" added to its type.
            other = dict(next(b for b in leaned if b != {"type": "null"}))
            kind = other.get("type")
            if kind is None:
                out["anyOf"] = leaned
            else:
                other["type"] = (kind if isinstance(kind, list) else [kind]) + ["null"]
                for key in ("enum", "const"):
                    other.pop(key, None)
                out = {**other, **{k: v for k, v in out.items() if k != "type"}}
        else:
            out["anyOf"] = leaned
        return out
    if "properties" in node:
        out["properties"] = {k: _lean(v, defs, depth + 1, keys_to, notes_to) for k, v in node["properties"].items()}
        if node.get("required") and (notes_to >= 0 or depth == 0):
            out["required"] = list(node["required"])
    if node.get("additionalProperties") is False and notes_to >= 0:
        out["additionalProperties"] = False
    elif isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _lean(node["additionalProperties"], defs, depth + 1, keys_to, notes_to)
    if isinstance(node.get("items"), dict) and depth <= max(notes_to, 1):
        # An array's items sit at the array's own level: a list result still shows its items' keys.
        out["items"] = _lean(node["items"], defs, depth, keys_to, notes_to)
    if "type" not in out:
        found = _types(node, defs)
        if found:
            out["type"] = found[0] if len(found) == 1 else found
    return out


def _settings_note(name: str) -> str | None:
    if not name.endswith(SETTINGS_SUFFIX):
        return None
    return SETTINGS_SCHEMA_URI.replace("{platform}", name[: -len(SETTINGS_SUFFIX)])


@cache
def listed_input_schema(ep: Endpoint) -> dict[str, Any]:
    """The MCP tool input: top-level fields with their descriptions, the keys (with types) of object fields."""
    full = input_schema(ep)
    defs = full.get("$defs", {})
    out = _lean({k: v for k, v in full.items() if k not in ("$defs", "properties")}, defs, 0, 1, 1)
    out["properties"] = {}
    for name, prop in full.get("properties", {}).items():
        uri = _settings_note(name)
        # A platform's settings list their keys and types; the rules live in the settings-schema resource.
        out["properties"][name] = _lean(prop, defs, 1, 2 if uri else 1, 1)
        if uri:
            out["properties"][name]["description"] = f"Rules: {uri}"
    if "idempotency_key" in out["properties"]:
        out["properties"]["idempotency_key"]["description"] = LISTED_IDEMPOTENCY_NOTE
    if full.get("required"):
        out["required"] = list(full["required"])
    out["type"] = "object"
    out["additionalProperties"] = False
    return out


@cache
def listed_output_schema(ep: Endpoint) -> dict[str, Any]:
    """The MCP output schema: the envelope and the payload's top-level keys with their types."""
    full = envelope_schema(ep)
    defs = full.get("$defs", {})
    out = _lean({k: v for k, v in full.items() if k != "$defs"}, defs, 0, keys_to=1, notes_to=-1)
    out["properties"]["success"] = {"const": True}
    out["properties"]["meta"] = {"type": "object"}
    out["type"] = "object"
    return out
