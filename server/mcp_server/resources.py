"""MCP resources: read-only views that dispatch a catalogue endpoint and return its `data` as JSON text.

A resource whose endpoint is not in the catalogue is simply not offered. Read errors become MCP errors whose
`data` is the spec's error object (code, status, request_id, retryable, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import unquote

import mcp_types as types

from schemas.errors import ApiError
from tools import catalogue
from tools.endpoint import Endpoint
from tools.tool_schemas import SETTINGS_SCHEMA_URI

# A selector picks part of the endpoint's `data` by the URI's parameters (the endpoint then takes no path
# arguments from the URI); it raises ApiError for a parameter that names nothing.
Selector = Callable[[Any, dict[str, str]], Any]

MIME = "application/json"


@dataclass(frozen=True)
class ResourceDef:
    uri: str  # a URI, or an RFC 6570 level-1 template (`{name}` segments)
    endpoint: str
    name: str
    title: str
    description: str
    select: Selector | None = None

    @property
    def is_template(self) -> bool:
        return "{" in self.uri

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"({[a-z_]+})", self.uri)
        regex = "".join(f"(?P<{p[1:-1]}>[^/?#]+)" if p.startswith("{") else re.escape(p) for p in parts)
        return re.compile(f"^{regex}$")

    def match(self, uri: str) -> dict[str, str] | None:
        found = self.pattern.match(uri)
        return {k: unquote(v) for k, v in found.groupdict().items()} if found else None


def platform_settings(capabilities: dict[str, Any], params: dict[str, str]) -> dict[str, Any]:
    """One platform's complete settings rules, cut from the capabilities document (one source of truth)."""
    wanted = params["platform"]
    platforms = capabilities.get("platforms", [])
    for p in platforms:
        if p["key"] == wanted:
            keys = ("key", "settings_key", "settings_fields", "post_types", "default_post_type", "required_settings",
                    "thread", "follow_up_reply", "text_rules", "post_type_rules", "guidance")
            return {k: p.get(k) for k in keys} | {"validation_version": capabilities.get("validation_version")}
    known = ", ".join(p["key"] for p in platforms)
    raise ApiError("NOT_FOUND", f"No platform {wanted[:64]!r}; platforms: {known}.")


RESOURCES: tuple[ResourceDef, ...] = (
    ResourceDef("socialpub://platforms/capabilities", "get_platform_capabilities", "platform_capabilities",
                "Platform capabilities",
                "The public platform registry: account modes, post types, text and media rules and settings "
                "fields for every supported platform. Read it before writing *_settings for a draft."),
    ResourceDef(SETTINGS_SCHEMA_URI, "get_platform_capabilities", "platform_settings_schema",
                "Platform settings schema",
                "One platform's <platform>_settings: the complete JSON Schema (settings_fields), required settings, "
                "thread and post-type rules. Tool input schemas list only the keys; the rules are here.",
                select=platform_settings),
    ResourceDef("socialpub://context", "get_context", "agent_context", "Agent context",
                "This API key's authority: actor, workspace, granted scopes, brand access and the brands it may "
                "act on, with links."),
    ResourceDef("socialpub://brands/{brand_id}/context", "get_brand_context", "brand_context", "Brand context",
                "A brand's voice and identity (description, timezone, colours, fonts, voice profile and strategy, "
                "default call to action). brand_id comes from socialpub://context."),
    ResourceDef("socialpub://brands/{brand_id}/schedules/{schedule_id}", "get_schedule", "schedule", "Schedule",
                "One Schedule: its state, approval and targets. Subscribe (resources/subscribe) to be told when it "
                "changes state (published, failed, held, approved, rejected)."),
    ResourceDef("socialpub://brands/{brand_id}/notifications", "list_notifications", "brand_notifications",
                "Brand notifications", "Your latest notifications for the brand (newest first). Subscribe to be told "
                "when a new one arrives."),
    ResourceDef("socialpub://brands/{brand_id}/performance", "get_brand_performance", "brand_performance",
                "Brand performance",
                "What worked for a brand over the last 30 days, in a few sentences with per-platform totals and "
                "top posts: read it before planning posts. Needs analytics:read."),
)


def available(defs: tuple[ResourceDef, ...] = RESOURCES) -> list[tuple[ResourceDef, Endpoint]]:
    known = {ep.name: ep for ep in catalogue.endpoints()}
    return [(d, known[d.endpoint]) for d in defs if d.endpoint in known]


def listing() -> list[types.Resource]:
    return [types.Resource(uri=d.uri, name=d.name, title=d.title, description=d.description, mime_type=MIME)
            for d, _ in available() if not d.is_template]


def templates() -> list[types.ResourceTemplate]:
    return [types.ResourceTemplate(uri_template=d.uri, name=d.name, title=d.title, description=d.description,
                                   mime_type=MIME)
            for d, _ in available() if d.is_template]


def resolve(uri: str) -> tuple[ResourceDef, Endpoint, dict[str, str]] | None:
    for d, ep in available():
        params = d.match(uri)
        if params is not None:
            return d, ep, params
    return None
