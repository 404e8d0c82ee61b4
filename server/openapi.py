"""`/v1/openapi.json`: an OpenAPI 3.1 document derived from the catalogue."""

from __future__ import annotations

import copy
from collections import defaultdict
from functools import cache
from typing import Any

from schemas.errors import CODES
from tools import catalogue
from tools.endpoint import Endpoint, field_locations
from tools.tool_schemas import IDEMPOTENCY_KEY_SCHEMA, envelope_schema, error_schema, input_schema
from tools.toolsets import TOOLSETS

REF_PREFIX = "#/components/schemas/"


def _rewrite_refs(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                out[k] = REF_PREFIX + v.removeprefix("#/$defs/")
            else:
                out[k] = _rewrite_refs(v)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


class _Components:
    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {}

    def absorb(self, schema: dict[str, Any]) -> dict[str, Any]:
        schema = copy.deepcopy(schema)
        for name, definition in schema.pop("$defs", {}).items():
            definition = _rewrite_refs(definition)
            if name in self.schemas and self.schemas[name] != definition:
                raise ValueError(f"two different models are both named {name}; rename one")
            self.schemas[name] = definition
        return _rewrite_refs(schema)


def _parameters(ep: Endpoint, comps: _Components) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    schema = comps.absorb(input_schema(ep))
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    locations = field_locations(ep.request)
    params, body_props, body_required = [], {}, []
    for name, prop in props.items():
        where = locations.get(name, "body")
        if name == "idempotency_key":
            params.append({"name": "Idempotency-Key", "in": "header", "required": False,
                           "schema": dict(IDEMPOTENCY_KEY_SCHEMA),
                           "description": "Alternative to the body field idempotency_key; both must match."})
            where = "body"
        if where in ("path", "query"):
            params.append({"name": name, "in": where, "required": where == "path" or name in required,
                           "schema": prop, **({"description": prop["description"]} if "description" in prop else {})})
        else:
            body_props[name] = prop
            if name in required and name != "idempotency_key":
                body_required.append(name)
    body = None
    if body_props:
        body = {"type": "object", "properties": body_props, "additionalProperties": False}
        if body_required:
            body["required"] = body_required
    return params, body


def _operation(eps: list[Endpoint], comps: _Components) -> dict[str, Any]:
    main = next((e for e in eps if e.variant is None), eps[0])
    params_by_name: dict[tuple[str, str], dict[str, Any]] = {}
    bodies, successes = [], []
    for ep in eps:
        params, body = _parameters(ep, comps)
        for p in params:
            p = dict(p)
            if ep.variant:
                p["required"] = False
                p["description"] = (p.get("description", "") + f" (variant={ep.variant} only)").strip()
            params_by_name.setdefault((p["in"], p["name"]), p)
        if body:
            bodies.append(body)
        successes.append(comps.absorb(envelope_schema(ep)))
    variants = sorted(e.variant for e in eps if e.variant)
    if variants:
        params_by_name[("query", "variant")] = {
            "name": "variant", "in": "query", "required": False, "schema": {"type": "string", "enum": variants},
            "description": "Selects the older shape of this route; omit it for the released shape."}
    op: dict[str, Any] = {
        "operationId": main.name,
        "summary": main.summary,
        "description": "\n\n".join(f"{'[' + e.variant + '] ' if e.variant else ''}{e.description}" for e in eps),
        "tags": [main.toolset],
        "parameters": list(params_by_name.values()),
        "responses": {
            str(main.status): {"description": "Success envelope.", "content": {"application/json": {
                "schema": successes[0] if len(successes) == 1 else {"oneOf": successes}}}},
            "default": {"description": "Error envelope (`error.status` equals the HTTP status).",
                        "content": {"application/json": {"schema": {"$ref": REF_PREFIX + "ErrorEnvelope"}}}},
        },
    }
    if main.idempotency != "none":
        op["responses"]["200"] = op["responses"].get("200") or {
            "description": "Idempotent replay (header Idempotency-Replayed: true).",
            "content": op["responses"][str(main.status)]["content"]}
    if bodies:
        op["requestBody"] = {"required": any(b.get("required") for b in bodies), "content": {"application/json": {
            "schema": bodies[0] if len(bodies) == 1 else {"oneOf": bodies}}}}
    if main.public:
        op["security"] = []
    else:
        op["x-required-scopes"] = list(main.scopes)
    return op


@cache
def openapi_document() -> dict[str, Any]:
    comps = _Components()
    grouped: dict[tuple[str, str], list[Endpoint]] = defaultdict(list)
    for ep in catalogue.endpoints():
        grouped[(ep.path, ep.method)].append(ep)
    paths: dict[str, dict[str, Any]] = defaultdict(dict)
    for (path, method), eps in grouped.items():
        paths[path][method.lower()] = _operation(eps, comps)
    err = comps.absorb(error_schema())
    comps.schemas["ErrorEnvelope"] = err
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "socialpub API", "version": "1",
            "description": "Multi-brand social publishing for agents. Error codes: "
                           + ", ".join(f"{c} ({s.status})" for c, s in CODES.items()),
        },
        "servers": [{"url": "/"}],
        "tags": [{"name": t.name, "description": t.description} for t in TOOLSETS],
        "paths": dict(paths),
        "components": {
            "schemas": comps.schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "API key `socialpub_live_...`"}},
        },
        "security": [{"bearer": []}],
    }
