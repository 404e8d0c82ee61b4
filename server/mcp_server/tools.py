"""MCP tools derived from the catalogue: one per endpoint, with its description, schemas, annotations and a
precompiled argument validator. Nothing here is written per tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError as SchemaError
from jsonschema.exceptions import best_match

from schemas.errors import ApiError, issue
from server.dispatch import Outcome, new_request_id
from tools import catalogue
from tools.endpoint import Endpoint, field_locations
from tools.tool_schemas import envelope_schema, input_schema

META_PREFIX = "socialpub/"

# JSON Schema keyword -> the issue codes REST uses for the same problem (server/dispatch.py `_ISSUE_CODES`).
_KEYWORD_CODES = {
    "type": "INVALID_TYPE",
    "enum": "NOT_ALLOWED",
    "const": "NOT_ALLOWED",
    "maxLength": "TOO_LONG",
    "minLength": "TOO_SHORT",
    "maxItems": "TOO_MANY_ITEMS",
    "minItems": "TOO_FEW_ITEMS",
    "uniqueItems": "DUPLICATE",
    "pattern": "INVALID_FORMAT",
    "minimum": "OUT_OF_RANGE",
    "maximum": "OUT_OF_RANGE",
    "exclusiveMinimum": "OUT_OF_RANGE",
    "exclusiveMaximum": "OUT_OF_RANGE",
}
_MAX_ISSUES = 50


def endpoint_label(ep: Endpoint) -> str:
    """`METHOD /v1/path`, the value of `_meta["socialpub/endpoint"]`."""
    return f"{ep.method} {ep.path}"


def title(ep: Endpoint) -> str:
    return ep.title or ep.name.replace("_", " ").capitalize()


def authority(ep: Endpoint) -> str:
    if ep.public:
        return "Public: no API key needed."
    parts = [f"Requires scope {', '.join(ep.scopes)}." if ep.scopes else "Any valid API key; no scope needed."]
    if ep.roles:
        parts.append(f"The key's owner needs role {' or '.join(ep.roles)}.")
    return " ".join(parts)


def idempotency_note(ep: Endpoint) -> str:
    if ep.idempotency == "required":
        return ("Send a new idempotency_key (e.g. a UUID) with every distinct request and reuse it only to retry "
                "that exact request: a retry returns the stored result (meta.idempotency_replayed: true) instead "
                "of acting twice; other input under a used key is refused (409).")
    if ep.idempotency == "optional":
        return ("Send an idempotency_key to make retries safe: a retry with the same key and input returns the "
                "stored result (meta.idempotency_replayed: true); without a key, calling twice acts twice.")
    return ""


def description(ep: Endpoint) -> str:
    """What it does, what it never does and what to call next, who may call it, how to retry it."""
    parts = [ep.summary, ep.guidance]
    if ep.variant:
        parts.append(f"This is the {ep.variant} response shape of {endpoint_label(ep)}; prefer the released shape "
                     f"unless a client needs this one.")
    parts += [authority(ep), idempotency_note(ep)]
    return " ".join(p.strip() for p in parts if p and p.strip())


def idempotent(ep: Endpoint) -> bool:
    """Repeating the same arguments has no further effect: reads and write-free checks, PUT/DELETE, and routes
    that require a key. A route whose key is optional is not: without a key, calling twice acts twice.
    """
    return ep.changes_nothing or ep.method in ("PUT", "DELETE") or ep.idempotency == "required"


def annotations(ep: Endpoint) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title(ep),
        read_only_hint=ep.changes_nothing,
        destructive_hint=not ep.changes_nothing and (ep.destructive or ep.method == "DELETE"),
        idempotent_hint=idempotent(ep),
        open_world_hint=ep.open_world,
    )


def tool_meta(ep: Endpoint) -> dict[str, Any]:
    meta: dict[str, Any] = {f"{META_PREFIX}endpoint": endpoint_label(ep), f"{META_PREFIX}toolset": ep.toolset}
    if ep.variant:
        meta[f"{META_PREFIX}variant"] = ep.variant
    if not ep.public:
        meta[f"{META_PREFIX}required_scopes"] = list(ep.scopes)
    return meta


def _issue_root(field_path: str) -> str:
    return field_path.removeprefix("$.").split(".")[0].split("[")[0]


def _path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _issues(error: SchemaError) -> list[dict[str, Any]]:
    """One schema error -> the REST-style issues it stands for."""
    where = list(error.absolute_path)
    keyword = error.validator
    if keyword == "required":
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        return [issue(_path([*where, name]), "REQUIRED", "Field required")
                for name in error.validator_value if name not in instance]
    if keyword == "additionalProperties":
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        known = set((error.schema.get("properties") or {}) if isinstance(error.schema, Mapping) else ())
        return [issue(_path([*where, name]), "UNKNOWN_FIELD", "Not a parameter of this tool; remove it.")
                for name in instance if name not in known]
    if keyword in ("anyOf", "oneOf") and error.context:
        # e.g. a nullable field: report the branch whose type matched (its constraint failed), if any.
        matched = [e for e in error.context if e.validator != "type"]
        inner = best_match(matched or error.context)
        if inner is not None:
            found = _issues(inner)
            return [dict(i, field_path=_path(where)) if i["field_path"] == "$" else i for i in found]
    return [issue(_path(where), _KEYWORD_CODES.get(str(keyword), "INVALID_VALUE"), _message(error))]


def _message(error: SchemaError) -> str:
    """A message built from the schema alone: arguments are never echoed back (they may hold secrets)."""
    v = error.validator_value
    messages = {
        "type": lambda: f"must be of type {' or '.join(v) if isinstance(v, list) else v}",
        "enum": lambda: "must be one of: " + ", ".join(json.dumps(x) for x in v)[:300],
        "const": lambda: f"must be {json.dumps(v)[:100]}",
        "maxLength": lambda: f"must be at most {v} characters",
        "minLength": lambda: f"must be at least {v} characters",
        "maxItems": lambda: f"must have at most {v} items",
        "minItems": lambda: f"must have at least {v} items",
        "uniqueItems": lambda: "items must be unique",
        "pattern": lambda: "does not have the required format",
        "minimum": lambda: f"must be at least {v}",
        "maximum": lambda: f"must be at most {v}",
        "exclusiveMinimum": lambda: f"must be greater than {v}",
        "exclusiveMaximum": lambda: f"must be less than {v}",
    }
    make = messages.get(str(error.validator))
    return make() if make else f"is not valid ({error.validator})"


@dataclass(frozen=True, eq=False)
class ToolSpec:
    """One endpoint as an MCP tool, built once per process."""

    endpoint: Endpoint
    tool: types.Tool
    validator: Draft202012Validator

    @property
    def name(self) -> str:
        return self.endpoint.name

    def check(self, args: Mapping[str, Any]) -> ApiError | None:
        """Validate arguments against the input schema; the REST error for the same problem, or None."""
        errors = list(self.validator.iter_errors(args))
        if not errors:
            return None
        found: list[dict[str, Any]] = []
        for error in sorted(errors, key=lambda e: (list(map(str, e.absolute_path)), str(e.validator))):
            found.extend(_issues(error))
        found = found[: _MAX_ISSUES + 1]
        # Same classification as REST (server/dispatch.py `validation_error`): a bad identifier in the path is
        # "no such resource", a query problem is INVALID_QUERY, anything else MALFORMED_REQUEST.
        locations = field_locations(self.endpoint.request)
        roots = {_issue_root(i["field_path"]) for i in found}
        where = {locations.get(r, "body") for r in roots}
        if where == {"path"} and all(isinstance(args.get(r), str) for r in roots):
            return ApiError("NOT_FOUND", "No resource has that identifier.", issues=found)
        if where == {"query"}:
            return ApiError("INVALID_QUERY", issues=found)
        return ApiError("MALFORMED_REQUEST", issues=found)


def build_spec(ep: Endpoint) -> ToolSpec:
    schema = input_schema(ep)
    output = envelope_schema(ep)
    Draft202012Validator.check_schema(schema)
    tool = types.Tool(name=ep.name, title=title(ep), description=description(ep), input_schema=schema,
                      output_schema=output, annotations=annotations(ep), meta=tool_meta(ep))
    return ToolSpec(endpoint=ep, tool=tool, validator=Draft202012Validator(schema))


@cache
def _specs_for(endpoints: tuple[Endpoint, ...]) -> dict[str, ToolSpec]:
    return {ep.name: build_spec(ep) for ep in endpoints}


def specs() -> dict[str, ToolSpec]:
    """Every catalogue endpoint as a tool, in catalogue order (compiled once per catalogue)."""
    return _specs_for(catalogue.endpoints())


# -- results ---------------------------------------------------------------------------------------------

def _summary(ep: Endpoint, outcome: Outcome) -> str:
    body = outcome.body or {}
    if outcome.ok:
        line = f"{ep.name} succeeded ({outcome.status})."
        if outcome.replayed:
            line += " Idempotent replay: the stored result of the earlier request is returned; nothing was done again."
        return line
    error = body.get("error", {})
    line = f"{ep.name} failed: {error.get('status')} {error.get('code')}: {error.get('message')}"
    if error.get("repair_guidance"):
        line += f" {error['repair_guidance']}"
    if error.get("next_action"):
        line += f" (next_action: {error['next_action']})"
    return line


def render(ep: Endpoint, outcome: Outcome) -> types.CallToolResult:
    """structuredContent = the spec's envelope; the text block = a one-line summary and the same envelope as
    JSON, for clients that only read text (the MCP spec's advice for structured results)."""
    if outcome.body is None:  # 304 needs If-None-Match, which MCP never sends; never a body-less result
        outcome = Outcome(500, ApiError("INTERNAL_ERROR").body(new_request_id()))
    body = outcome.body or {}
    text = _summary(ep, outcome) + "\n" + json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=body,
                                is_error=not outcome.ok)
