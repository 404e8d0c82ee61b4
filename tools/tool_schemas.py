"""JSON Schemas derived from the catalogue: tool input (flat), success payload, success envelope, errors.

MCP tools, OpenAPI, docs/tools.md, the manifest and response validation all read these; nothing else
builds a schema by hand.
"""

from __future__ import annotations

import copy
import json
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


@cache
def float_free(model: type[BaseModel]) -> bool:
    """Whether `model.model_dump(mode="json")` can never hold a float: no `number` anywhere in its serialization
    schema and no value of an open type (`Any`, a dict of anything). Such a dump is encoded by orjson with the
    same bytes as the standard library's encoder, which differs from it only on floats (server/rest.py)."""
    schema = model.model_json_schema(mode="serialization")
    defs = schema.get("$defs", {})
    seen: set[str] = set()

    def free(node: Any) -> bool:
        if not isinstance(node, dict):
            return node is not True
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen:
                return True
            seen.add(name)
            return free(defs[name])
        for key in ("anyOf", "oneOf", "allOf"):
            if key in node:
                return all(free(n) for n in node[key])
        if "const" in node or "enum" in node:
            values = node["enum"] if "enum" in node else [node["const"]]
            return not any(isinstance(v, float) for v in values)
        kinds = node.get("type")
        if kinds is None:
            return False  # any value at all
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if "number" in kinds:
            return False
        if "array" in kinds and not free(node.get("items", {})):
            return False
        if "object" in kinds:
            if not all(free(n) for n in node.get("properties", {}).values()):
                return False
            extra = node.get("additionalProperties", "properties" not in node)
            if extra is not False and not free(extra):
                return False
        return True

    return free(schema)


# -- lean listings (MCP `tools/list`) ---------------------------------------------------------------------
# The full schemas above stay the REST contract (OpenAPI, response validation). An MCP client loads every
# listed schema into its agent's context, so a tool lists a lean view (issue 17):
# - input: top-level fields with their types, allowed values, descriptions and which are required; an object
#   field names its keys (with allowed values); a platform's settings name their keys once, in the first tool
#   that takes them, and the rules live in the settings-schema resource;
# - output: the envelope's `data` with its type (issue 33: its keys' names went, see listed_output_schema).
# Each lean schema only loosens the full one (a value valid against the full schema is valid against the lean
# one); the dispatcher still validates every argument with the request model and every result with the full
# envelope schema, so nothing the server enforces is lost: a violation comes back as an `issues[]` entry naming
# the exact field and rule.

SETTINGS_SUFFIX = "_settings"
SETTINGS_SCHEMA_URI = "socialpub://platforms/{platform}/settings-schema"
_TYPE_OF = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


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
        found = [_TYPE_OF.get(type(v)) for v in values]
        return None if None in found else list(dict.fromkeys(found))  # pyright: ignore[reportReturnType]  # checked just before: no None left in found
    return None


# Every listed sub-schema carries a single string `type`, or `anyOf` branches with one each (a nullable field):
# MCP Inspector's schema-portability lint warns on a `type` array and on a schema with no constraining keyword,
# and clients that read `type` as one string drop such a field's constraint or send an object as a string
# (issue 33 item 8; tests/mcp/test_portability.py runs the lint over the full tools/list).
ANY_TYPE = ("object", "array", "string", "number", "boolean", "null")


def _typed(types_: list[str] | None) -> dict[str, Any]:
    """One `type` string; `X or null` is `{"type": X, "nullable": true}` (OpenAPI's spelling, which Inspector's
    forms and Gemini's function declarations read) so a client that dispatches on `type` sees an object as an
    object; several non-null types are `anyOf` branches of one type each."""
    if not types_:  # a value of any type: every type, spelled portably
        types_ = list(ANY_TYPE)
    if "integer" in types_ and "number" in types_:
        types_ = [t for t in types_ if t != "integer"]
    kinds = [t for t in types_ if t != "null"]
    if len(kinds) == 1:
        return {"type": kinds[0], "nullable": True} if "null" in types_ else {"type": kinds[0]}
    return {"anyOf": [{"type": t} for t in types_]}


def _shape(node: Any, defs: dict[str, Any], nested: bool = False) -> dict[str, Any]:
    """A node's type and, where it has them, its allowed values (`enum`/`const`, with null where it is optional).
    `nested`: a key of an object argument, listed without null (absent and null are the same below the top
    level; the per-tool cap has no room for a `nullable` on each)."""
    if not isinstance(node, dict):
        return {}
    node = _resolve(node, defs)
    found = _types(node, defs)
    if nested and found and len(found) > 1:
        found = [t for t in found if t != "null"]
    out = _typed(found)
    values = node.get("enum") or (None if "const" not in node else [node["const"]])
    branches = node.get("anyOf") or node.get("oneOf")
    if values is None and branches:
        # `X or null` (pydantic's Optional) of an enumeration: its values and null.
        found = [_resolve(b, defs) for b in branches]
        enums = [b.get("enum") or ([b["const"]] if "const" in b else None) for b in found if b.get("type") != "null"]
        if len(enums) == 1 and enums[0] is not None and len(found) == 2:
            values = [*enums[0], None]
    if values is not None:
        out["enum"] = [v for v in values if v is not None] if nested and "nullable" not in out else values
    return out


def _names(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """An object's keys, each with its type and allowed values: below the top level a listing names keys and their
    types; their other rules are the server's (and the resources')."""
    node = _resolve(node, defs)
    branches = [_resolve(b, defs) for b in node.get("anyOf") or node.get("oneOf") or [node]]
    fields = next((b["properties"] for b in branches if isinstance(b.get("properties"), dict)), None)
    if fields is None:
        return {}
    return {key: _shape(value, defs, nested=True) for key, value in fields.items()}


def has_settings(ep: Endpoint) -> bool:
    return any(name.endswith(SETTINGS_SUFFIX) for name in input_schema(ep).get("properties", {}))


def settings_keys_from(ep: Endpoint) -> Endpoint | None:
    """The tool that lists the settings keys, when `ep` takes settings but is not it: the first catalogue endpoint
    taking settings lists each platform's keys once; the others point to it (a repeated sub-schema, deduped)."""
    from tools import catalogue  # the catalogue imports the areas, which import this module

    first = next((e for e in catalogue.endpoints() if has_settings(e)), None)
    return first if first is not None and first is not ep and has_settings(ep) else None


@cache
def listed_input_schema(ep: Endpoint) -> dict[str, Any]:
    """The MCP tool input: top-level fields with types, allowed values and descriptions; an object field names its
    keys (a platform's settings: which keys exist; their rules are the settings-schema resource's)."""
    full = input_schema(ep)
    defs = full.get("$defs", {})
    props: dict[str, Any] = {}
    shared = settings_keys_from(ep) is not None
    for name, prop in full.get("properties", {}).items():
        props[name] = _shape(prop, defs)
        keys = {} if shared and name.endswith(SETTINGS_SUFFIX) else _names(prop, defs)
        shapes = {json.dumps(v, sort_keys=True) for v in keys.values()}
        if len(keys) > 3 and len(shapes) == 1:
            # Keys of one shape (platform_copy's platforms): named once, their shape once.
            props[name]["propertyNames"] = {"enum": list(keys)}
            props[name]["additionalProperties"] = next(iter(keys.values()))
        elif keys:
            props[name]["properties"] = keys
        elif "array" in (_types(prop, defs) or []):
            item = _shape(_resolve(prop, defs).get("items", {}), defs)
            if item:
                props[name]["items"] = item
        note = _resolve(prop, defs).get("description")
        # A path ID comes from a link or an earlier result; settings' rules are named by the tool description.
        if note and name not in ep.path_params and not name.endswith(SETTINGS_SUFFIX):
            props[name]["description"] = note
    if ep.idempotency != "none":  # how to use it: the server instructions, once
        props["idempotency_key"] = {"type": "string"}
    # Unknown arguments are refused by the server (400, an UNKNOWN_FIELD issue naming the key), as on REST.
    out: dict[str, Any] = {"type": "object", "properties": props}
    if full.get("required"):
        out["required"] = list(full["required"])
    return out


@cache
def listed_output_schema(ep: Endpoint) -> dict[str, Any]:
    """The MCP output schema: the envelope's `data` with its type. Every
    structuredContent the server returns validates against it, errors included: `success`,
    `meta`, `pagination` (older lists) and `error` are described once, in the server instructions, rather than
    in every tool."""
    payload = payload_schema(ep)
    # The payload's type only: its keys would each need a `type` to be portable (issue 33 item 8), which costs
    # the default listing more than its budget has; every result carries its keys, and docs/tools.md lists them.
    data = _shape(payload, payload.get("$defs", {}))
    return {"type": "object", "properties": {"data": data}}
