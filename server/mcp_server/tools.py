"""MCP tools derived from the catalogue: one per endpoint, with its description, schemas and annotations.
Nothing here is written per tool. The input schema is advertised for clients; the server's verdict on the
arguments comes from the dispatcher (server/dispatch.py), the same code as REST.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import mcp_types as types
import orjson

from schemas.errors import ApiError
from server.dispatch import Outcome, new_request_id
from tools import catalogue
from tools.endpoint import Endpoint
from tools.tool_schemas import (
    SETTINGS_SCHEMA_URI,
    has_settings,
    listed_input_schema,
    listed_output_schema,
    settings_keys_from,
)

META_PREFIX = "socialpub/"



def endpoint_label(ep: Endpoint) -> str:
    """`METHOD /v1/path`, the value of `_meta["socialpub/endpoint"]`."""
    return f"{ep.method} {ep.path}"


_FILLER = {"a", "an", "the", "of"}


def title(ep: Endpoint) -> str | None:
    """The display title, listed only where it says more than the name (clients show the name otherwise)."""
    if not ep.title:
        return None
    words = [w for w in ep.title.lower().replace("-", " ").split() if w not in _FILLER]
    return None if words == ep.name.split("_") else ep.title


def authority(ep: Endpoint) -> str:
    if ep.public:
        return "Public: no API key needed."
    parts = [f"Scope {', '.join(ep.scopes)}." if ep.scopes else "Any valid key."]
    if ep.roles:
        parts.append(f"Role {' or '.join(ep.roles)}.")
    return " ".join(parts)


def _released(ep: Endpoint) -> str:
    """The tool of the released shape of a variant's route."""
    for other in catalogue.endpoints():
        if other.variant is None and (other.method, other.path) == (ep.method, ep.path):
            return other.name
    return endpoint_label(ep)


# Words by which a description already says that the tool changes nothing.
_SAYS_READ_ONLY = ("never", "changes nothing", "read-only", "write-free", "creates nothing")


@cache
def settings_needed() -> str:
    """What preflight refuses when a platform's settings object is missing, from its rule (issue 33 item 7: a first
    draft without one was blocked with no word of it in the tool)."""
    from tools.schedules.rules_engine import ACTIONS

    code = "SETTINGS_MISSING"
    assert code in ACTIONS  # the rule the sentence describes
    return f"Each intended platform needs its <platform>_settings ({{}}: defaults) or preflight blocks it ({code})."


def description(ep: Endpoint) -> str:
    """What it does, what it never does and what to call next, and where the settings rules are. Who may call it
    is the listing's job (a key sees the tools its scopes allow; a refusal names the scopes), how to retry is
    the idempotency_key's own description, and the annotations say the rest."""
    parts = [ep.summary, ep.guidance]
    if ep.changes_nothing and not any(w in f"{ep.summary} {ep.guidance}".lower() for w in _SAYS_READ_ONLY):
        parts.append("Changes nothing.")
    if has_settings(ep):
        shared = settings_keys_from(ep)
        keys = f"keys as in {shared.name}; " if shared else ""
        parts.append(f"{settings_needed()} <platform>_settings: {keys}rules in {SETTINGS_SCHEMA_URI}.")
    if ep.variant:
        parts.append(f"The {ep.variant} response shape; prefer {_released(ep)}.")
    if ep.roles:
        parts.append(f"Role {' or '.join(ep.roles)}.")
    return " ".join(p.strip() for p in parts if p and p.strip())


def idempotent(ep: Endpoint) -> bool:
    """Repeating the same arguments has no further effect: reads and write-free checks, PUT/DELETE, and routes
    that require a key. A route whose key is optional is not: without a key, calling twice acts twice.
    """
    return ep.changes_nothing or ep.method in ("PUT", "DELETE") or ep.idempotency == "required"


# The spec's defaults for absent hints (readOnly false, destructive true, idempotent false, openWorld true):
# a hint is listed only where it differs, and destructive/idempotent only for tools that change something.
_HINT_DEFAULTS = {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False,
                  "open_world_hint": True}


def hints(ep: Endpoint) -> dict[str, bool]:
    """Every hint's value for the endpoint (what a client concludes from the listed annotations)."""
    return {
        "read_only_hint": ep.changes_nothing,
        "destructive_hint": not ep.changes_nothing and (ep.destructive or ep.method == "DELETE"),
        "idempotent_hint": idempotent(ep),
        "open_world_hint": ep.open_world,
    }


def tool_annotations(ep: Endpoint) -> types.ToolAnnotations:
    """The hints that differ from the spec's defaults (the title is the tool's own `title`, not repeated)."""
    values = hints(ep)
    listed = {k: v for k, v in values.items() if v != _HINT_DEFAULTS[k]}
    if ep.changes_nothing:  # destructive and idempotent mean nothing for a read-only tool
        listed.pop("destructive_hint", None)
        listed.pop("idempotent_hint", None)
    return types.ToolAnnotations.model_validate(listed)


def tool_meta(ep: Endpoint) -> dict[str, Any]:
    """The route a tool serves (links name routes, so an agent maps a link to its tool) and its variant.
    Scopes are in the description; the toolset is docs/tools.md's."""
    meta: dict[str, Any] = {f"{META_PREFIX}endpoint": endpoint_label(ep)}
    if ep.variant:
        meta[f"{META_PREFIX}variant"] = ep.variant
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
    from jsonschema import Draft202012Validator  # here: a stdio server lists tools without it (listing.py)

    schema = listed_input_schema(ep)
    output = listed_output_schema(ep)
    Draft202012Validator.check_schema(schema)
    tool = types.Tool(name=ep.name, title=title(ep), description=description(ep), input_schema=schema,
                      output_schema=output, annotations=tool_annotations(ep), _meta=tool_meta(ep))
    return ToolSpec(endpoint=ep, tool=tool)


@cache
def _specs_for(endpoints: tuple[Endpoint, ...]) -> dict[str, ToolSpec]:
    return {ep.name: build_spec(ep) for ep in endpoints}


def specs() -> dict[str, ToolSpec]:
    """Every catalogue endpoint as a tool, in catalogue order (compiled once per catalogue). The last catalogue's
    table is found by identity: `_specs_for`'s cache key hashes the ~150 endpoints on every call (every tool call
    asks), as tools/catalogue.py's `by_name` avoids for the same reason."""
    found = catalogue.endpoints()
    last = _LAST[0]
    if last is None or last[0] is not found:
        last = _LAST[0] = (found, _specs_for(found))
    return last[1]


_LAST: list[tuple[tuple[Endpoint, ...], dict[str, ToolSpec]] | None] = [None]


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


# Where orjson spells a float differently from `json`: 1e-06 as 1e-6 (a one-digit negative exponent) and 2.5e-05
# as 0.000025. A hit, in a float or harmlessly inside a string, sends the envelope through `json`, so the text is
# always `json.dumps`'s. (A substring test and a regex with a literal prefix: both a few microseconds on 4 kB.)
_SHORT_EXPONENT = re.compile(rb"e-\d(?!\d)")
_LONG_FRACTION = b"0.0000"


def envelope_json(body: dict[str, Any]) -> str:
    """The envelope as compact JSON, byte for byte what `json.dumps(body, ensure_ascii=False, separators=(",",
    ":"))` writes, ~10x faster on a 4 kB envelope: orjson, and `json` for what orjson refuses (integers beyond
    64 bits) or spells differently. (NaN is the one exception, orjson writing null; no response carries it,
    since REST's encoder refuses it.)"""
    try:
        raw: bytes | None = orjson.dumps(body)
    except TypeError:
        raw = None
    if raw is None or _LONG_FRACTION in raw or _SHORT_EXPONENT.search(raw):
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return raw.decode()


def render(ep: Endpoint, outcome: Outcome) -> dict[str, Any]:
    """structuredContent = the spec's envelope; the text block = a one-line summary and the same envelope as
    JSON, for clients that only read text (the MCP spec's advice for structured results).

    Returned in its wire form, equal to `CallToolResult.model_dump(by_alias=True, mode="json", exclude_none=True)`
    (tests/mcp/test_render.py): the SDK validates and shapes every result for the connection's protocol version
    anyway, so building the model only to dump it again cost a second walk of the envelope per call."""
    if outcome.body is None:  # 304 needs If-None-Match, which MCP never sends; never a body-less result
        outcome = Outcome(500, ApiError("INTERNAL_ERROR").body(new_request_id()))
    body = outcome.body or {}
    text = _summary(ep, outcome) + "\n" + envelope_json(body)
    return {"content": [{"type": "text", "text": text}], "structuredContent": body, "isError": not outcome.ok,
            "resultType": "complete"}
