"""What `tools/list` serves before the catalogue is loaded: `listing.json`, a snapshot of every tool as listed (name,
title, description, schemas, annotations, _meta) with the endpoint facts the selection filters on (toolset,
read-only, public/any key, roles, scopes).

Why: the catalogue is built by importing every area module (handlers, tables, provider adapters, PyAV, Pillow,
...), which is most of a stdio server's start-up; an MCP host lists tools right after starting it. The snapshot is
derived, never edited: `python -m server.generate` writes it from the live catalogue and
tests/mcp/test_generated.py fails when it differs. Once the areas are imported (the first tool call, or any
process that loaded the catalogue, tests that add an endpoint included) the live specs are served instead.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types

if TYPE_CHECKING:
    from server.mcp_server.tools import ToolSpec
    from tools.endpoint import Endpoint

LISTING_PATH = Path(__file__).with_name("listing.json")


@dataclass(frozen=True, eq=False)
class ListedTool:
    """One tool of the snapshot. It is its own `endpoint` for `Selection` (it has the facts it reads) and
    has the `name` and `tool` of a `ToolSpec`."""

    name: str
    tool: types.Tool
    toolset: str
    changes_nothing: bool
    public: bool
    any_key: bool
    roles: tuple[str, ...]
    scopes: tuple[str, ...]

    @property
    def endpoint(self) -> ListedTool:
        return self


def entry(spec: ToolSpec) -> dict[str, Any]:
    """A live spec as a snapshot entry (the generator's and the drift test's one definition)."""
    ep: Endpoint = spec.endpoint
    return {"tool": spec.tool.model_dump(by_alias=True, exclude_none=True, mode="json"), "toolset": ep.toolset,
            "changes_nothing": ep.changes_nothing, "public": ep.public, "any_key": ep.any_key,
            "roles": list(ep.roles), "scopes": list(ep.scopes)}


def render(specs: dict[str, ToolSpec]) -> str:
    return json.dumps([entry(s) for s in specs.values()], indent=1, ensure_ascii=False) + "\n"


@cache
def snapshot() -> dict[str, ListedTool]:
    out = {}
    for item in json.loads(LISTING_PATH.read_text()):
        tool = types.Tool.model_validate(item["tool"])
        out[tool.name] = ListedTool(tool.name, tool, item["toolset"], item["changes_nothing"], item["public"],
                                    item["any_key"], tuple(item["roles"]), tuple(item["scopes"]))
    return out


def tools() -> dict[str, ListedTool] | dict[str, ToolSpec]:
    """Every tool in catalogue order: the live specs once the areas are imported, else the snapshot."""
    if "tools.areas" in sys.modules:
        from server.mcp_server.tools import specs

        return specs()
    return snapshot()
