"""MCP tools derived from the catalogue: one per endpoint, with its description, schemas and annotations.
Nothing here is written per tool. The input schema is advertised for clients; the server's verdict on the
arguments comes from the dispatcher (server/dispatch.py), the same code as REST.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator

from schemas.errors import ApiError
from server.dispatch import Outcome, new_request_id
from tools import catalogue
from tools.endpoint import Endpoint
from tools.tool_schemas import listed_input_schema, listed_output_schema

META_PREFIX = "socialpub/"



def endpoint_label(ep: Endpoint) -> str:
    """`METHOD /v1/path`, the value of `_meta["socialpub/endpoint"]`."""
    return f"{ep.method} {ep.path}"


def title(ep: Endpoint) -> str:
    return ep.title or ep.name.replace("_", " ").capitalize()


def authority(ep: Endpoint) -> str:
    if ep.public:
        return "Public: no API key needed."
    parts = [f"Scope {', '.join(ep.scopes)}." if ep.scopes else "Any valid key."]
    if ep.roles:
        parts.append(f"Role {' or '.join(ep.roles)}.")
    return " ".join(parts)


def idempotency_note(ep: Endpoint) -> str:
    if ep.idempotency == "required":
        return "New idempotency_key per request; reuse it only to retry (replays the stored result)."
    if ep.idempotency == "optional":
        return "Send an idempotency_key to make retries safe; without one, calling twice acts twice."
    return ""


def description(ep: Endpoint) -> str:
    """What it does, what it never does and what to call next, who may call it, how to retry it."""
    parts = [ep.summary, ep.guidance]
    if ep.changes_nothing and "never" not in f"{ep.summary} {ep.guidance}".lower():
        parts.append("Read-only: never changes anything.")
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
    return types.ToolAnnotations(  # the title is the tool's own `title`, not repeated here
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


@dataclass(frozen=True, eq=False)
class ToolSpec:
    """One endpoint as an MCP tool, built once per process."""

    endpoint: Endpoint
    tool: types.Tool

    @property
    def name(self) -> str:
        return self.endpoint.name


def build_spec(ep: Endpoint) -> ToolSpec:
    schema = listed_input_schema(ep)
    output = listed_output_schema(ep)
    Draft202012Validator.check_schema(schema)
    tool = types.Tool(name=ep.name, title=title(ep), description=description(ep), input_schema=schema,
                      output_schema=output, annotations=annotations(ep), meta=tool_meta(ep))
    return ToolSpec(endpoint=ep, tool=tool)


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
