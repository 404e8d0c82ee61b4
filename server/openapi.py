"""`/v1/openapi.json`: an OpenAPI 3.1 document derived from the catalogue, exact enough that a request valid
against it is one the server accepts (tests/test_fuzz.py drives the app with schemathesis to keep it so).

- One operation per endpoint. A route's older variant (selected by `?variant=older`) is its own path item,
  keyed `{path}?variant=older`, so each operation lists only the parameters and body its variant takes.
- Query parameters carry the type the REST adapter coerces them to (server/rest.py: `coerce_query`).
- Request bodies are strict (`additionalProperties: false`) with the request model's required fields. The
  idempotency key is the `Idempotency-Key` header (required where the route requires a key); the body field
  `idempotency_key` the server also takes is named in the description, not in the body schema, because a body
  key that differs from the header is refused.
- Every status an operation can answer is listed, each error status with the error envelope narrowed to
  that status and its codes (`error.status` equals the HTTP status).
"""

from __future__ import annotations

import copy
import inspect
import re
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from schemas.errors import CODES
from tools import catalogue
from tools.endpoint import Endpoint, field_locations
from tools.tool_schemas import IDEMPOTENCY_KEY_SCHEMA, envelope_schema, error_schema, input_schema
from tools.toolsets import TOOLSETS

REF_PREFIX = "#/components/schemas/"
RESPONSE_PREFIX = "#/components/responses/"
VARIANT_PARAM = "variant"  # server/rest.py selects a route's variant by this query parameter

# Statuses any route can answer: a bad argument, header or query (400), an oversized query string (414) or
# header block (431), the rate limit (429, keyless requests too), an unexpected failure (500), a busy database (503).
EVERY_ROUTE = (400, 414, 429, 431, 500, 503)
# Statuses a handler raises, found by the error codes its area's source names (see `_area_statuses`).
HANDLER_STATUSES = (404, 409, 410, 422)
# Every request string is valid Unicode without control characters (schemas/validators.py: check_text); tab,
# line feed and carriage return are allowed in text; a name refuses them too, and its schema carries
# schemas.validators.SINGLE_LINE_PATTERN beside this one.
TEXT_PATTERN = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
_QUOTED_RE = re.compile(r'"([A-Z][A-Z_]+)"')
_IMPORT_RE = re.compile(r"^\s*from (tools(?:\.\w+)+) import", re.M)
_REPLY_STATUS_RE = re.compile(r"Reply\([^)]*status=(\d{3})")


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
        self.request_refs: set[str] = set()  # components a request schema uses: they get the text rule

    def absorb(self, schema: dict[str, Any]) -> dict[str, Any]:
        schema = copy.deepcopy(schema)
        for name, definition in schema.pop("$defs", {}).items():
            definition = _rewrite_refs(definition)
            if name in self.schemas and self.schemas[name] != definition:
                raise ValueError(f"two different models are both named {name}; rename one")
            self.schemas[name] = definition
        return _rewrite_refs(schema)


def _is_free_string(node: dict[str, Any]) -> bool:
    kind = node.get("type")
    return (kind == "string" or (isinstance(kind, list) and "string" in kind)) and not (
        {"enum", "const", "format"} & set(node))


def _text_rule(node: Any, seen_refs: set[str]) -> Any:
    """Add TEXT_PATTERN to every free string of a request schema (in place), following component refs once."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            seen_refs.add(node["$ref"].removeprefix(REF_PREFIX))
        if _is_free_string(node):
            if "pattern" in node:
                node.setdefault("allOf", []).append({"pattern": TEXT_PATTERN})
            else:
                node["pattern"] = TEXT_PATTERN
        for v in node.values():
            _text_rule(v, seen_refs)
    elif isinstance(node, list):
        for v in node:
            _text_rule(v, seen_refs)
    return node


def _describe(prop: dict[str, Any]) -> dict[str, Any]:
    return {"description": prop["description"]} if "description" in prop else {}


def _parameters(ep: Endpoint, comps: _Components) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    schema = comps.absorb(input_schema(ep))
    _text_rule(schema.get("properties", {}), comps.request_refs)
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    locations = field_locations(ep.request)
    params, body_props, body_required = [], {}, []
    for name, prop in props.items():
        where = locations.get(name, "body")
        if name == "idempotency_key":
            params.append({"name": "Idempotency-Key", "in": "header", "required": ep.idempotency == "required",
                           "schema": {k: v for k, v in IDEMPOTENCY_KEY_SCHEMA.items() if k != "description"},
                           "description": IDEMPOTENCY_KEY_SCHEMA["description"] + " The body field "
                           "`idempotency_key` is also accepted; sent with the header, it must be equal."})
        elif where in ("path", "query"):
            params.append({"name": name, "in": where, "required": where == "path" or name in required,
                           "schema": prop, **_describe(prop)})
        else:
            body_props[name] = prop
            if name in required:
                body_required.append(name)
    params += [{"name": h, "in": "header", "required": False, "schema": {"type": "string", "maxLength": 1024}}
               for h in ep.headers]
    body = None
    if body_props:
        body = {"type": "object", "properties": body_props, "additionalProperties": False}
        if body_required:
            body["required"] = body_required
    return params, body


@cache
def _area_codes(module_name: str) -> frozenset[str]:
    """Error codes named in the source of a handler's area (its package, or its module for a one-module area)
    and of the `tools` modules it imports: quoted codes, `not_found(...)` (404), `raise_if_any()` (422)."""
    path = Path(inspect.getfile(sys.modules[module_name]))
    files = set(path.parent.glob("*.py")) if module_name.count(".") > 1 else {path}  # tools.<area>.<module>
    root = Path(inspect.getfile(sys.modules["tools"])).parent
    for f in list(files):
        for imported in _IMPORT_RE.findall(f.read_text(encoding="utf-8")):
            target = root.parent.joinpath(*imported.split("."))
            files |= {t for t in (target.with_suffix(".py"), target / "__init__.py") if t.exists()}
    codes: set[str] = set()
    for f in files:
        text = f.read_text(encoding="utf-8")
        codes |= {c for c in _QUOTED_RE.findall(text) if c in CODES}
        if "not_found(" in text:
            codes.add("NOT_FOUND")
        if ".raise_if_any(" in text:
            codes.add("DOMAIN_VALIDATION_FAILED")
    return frozenset(codes)


def _statuses(ep: Endpoint) -> list[int]:
    out: set[int] = set(EVERY_ROUTE)
    if not ep.public:
        out |= {401, 403}
    if ep.path_params:
        out.add(404)  # a brand not visible to the key, an unknown or malformed identifier
    if ep.idempotency != "none":
        out.add(409)  # IDEMPOTENCY_KEY_CONFLICT
    if ep.method != "GET":
        out.add(413)  # the body is read (and bounded) on every method but GET
    codes = _area_codes(ep.handler.__module__)
    out |= {CODES[c].status for c in codes if c in CODES and CODES[c].status in HANDLER_STATUSES}
    return sorted(out)


def _successes(ep: Endpoint) -> list[int]:
    out = {ep.status}
    try:
        source = inspect.getsource(ep.handler)
    except (OSError, TypeError):
        source = ""
    out |= {int(s) for s in _REPLY_STATUS_RE.findall(source)}
    if ep.idempotency != "none":
        out.add(200)  # an idempotent replay
    return sorted(out)


def _operation(ep: Endpoint, comps: _Components) -> dict[str, Any]:
    params, body = _parameters(ep, comps)
    envelope = {"application/json": {"schema": comps.absorb(envelope_schema(ep))}}
    responses: dict[str, Any] = {}
    for status in _successes(ep):
        replay = status == 200 and ep.status != 200
        responses[str(status)] = {
            "description": "Idempotent replay, or the existing result (`Idempotency-Replayed: true` on a replay)."
            if replay else "Success envelope.", "content": envelope}
    if ep.headers:
        responses["304"] = {"description": "Not modified (the `If-None-Match` tag is current)."}
    for status in _statuses(ep):
        responses[str(status)] = {"$ref": f"{RESPONSE_PREFIX}Error{status}"}
    variant = f"REST: `?{VARIANT_PARAM}={ep.variant}` selects this shape. " if ep.variant else ""
    op: dict[str, Any] = {
        "operationId": ep.name,
        "summary": ep.title or ep.summary,
        "description": variant + ep.description,
        "tags": [ep.toolset],
        "parameters": params,
        "responses": responses,
    }
    if body is not None:
        op["requestBody"] = {"required": "required" in body, "content": {"application/json": {"schema": body}}}
    if ep.public:
        op["security"] = []
    else:
        op["x-required-scopes"] = list(ep.scopes)
        if ep.roles:
            op["x-required-roles"] = list(ep.roles)
    return op


def path_key(ep: Endpoint) -> str:
    """The document's path item for an endpoint: a variant's literal query makes it a path item of its own."""
    return f"{ep.path}?{VARIANT_PARAM}={ep.variant}" if ep.variant else ep.path


def _error_responses(statuses: set[int]) -> dict[str, Any]:
    by_status: dict[int, list[str]] = defaultdict(list)
    for code, spec in CODES.items():
        by_status[spec.status].append(code)
    out = {}
    for status in sorted(statuses):
        narrowed = {"allOf": [{"$ref": REF_PREFIX + "ErrorEnvelope"}, {
            "type": "object", "required": ["success", "error"],
            "properties": {"success": {"const": False}, "error": {"type": "object", "properties": {
                "status": {"const": status}, "code": {"enum": by_status[status]}}}}}]}
        out[f"Error{status}"] = {
            "description": f"Error envelope: {', '.join(by_status[status])}.",
            "content": {"application/json": {"schema": narrowed}}}
    return out


@cache
def openapi_document() -> dict[str, Any]:
    comps = _Components()
    paths: dict[str, dict[str, Any]] = defaultdict(dict)
    statuses: set[int] = set()
    for ep in catalogue.endpoints():
        op = _operation(ep, comps)
        paths[path_key(ep)][ep.method.lower()] = op
        statuses |= {int(s) for s, r in op["responses"].items() if "$ref" in r}
    done: set[str] = set()
    while comps.request_refs - done:  # components of request schemas, and the components they use
        name = sorted(comps.request_refs - done)[0]
        done.add(name)
        _text_rule(comps.schemas[name], comps.request_refs)
    comps.schemas["ErrorEnvelope"] = comps.absorb(error_schema())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "socialpub API", "version": "1",
            "description": "Multi-brand social publishing for agents. A route's older variant is listed as the "
                           f"path item `{{path}}?{VARIANT_PARAM}=older`. Error codes: "
                           + ", ".join(f"{c} ({s.status})" for c, s in CODES.items()),
        },
        "servers": [{"url": "/"}],
        "tags": [{"name": t.name, "description": t.description} for t in TOOLSETS],
        "paths": dict(paths),
        "components": {
            "schemas": comps.schemas,
            "responses": _error_responses(statuses),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "API key `socialpub_live_...`"}},
        },
        "security": [{"bearer": []}],
    }
