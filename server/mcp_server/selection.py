"""Which tools a connection sees: toolsets, read-only, and the key's scopes; plus `tools/list` paging.

Toolsets and read-only are operator policy: a tool outside them does not exist for the connection (calling
it is an unknown tool). Hiding tools the key's scopes can never satisfy only trims the listing: calling one
anyway reaches dispatch, which refuses it with 403 INSUFFICIENT_SCOPE and the scopes it needs.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from tools.services.auth import Caller
from tools.toolsets import BY_NAME, DEFAULT_TOOLSETS, TOOLSETS

PAGE_SIZE = 50


class SelectionError(ValueError):
    """A toolset name or cursor that cannot be used; the message says what is valid."""


def parse_toolsets(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """`a,b` / `all` / `default` (or None) -> toolset names in catalogue order; unknown names are refused."""
    if text is None:
        return DEFAULT_TOOLSETS
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n and n.strip()]
    if not names or names == ["default"]:
        return DEFAULT_TOOLSETS
    if "all" in names:
        return tuple(t.name for t in TOOLSETS)
    wanted = set()
    for name in names:
        if name == "default":
            wanted |= set(DEFAULT_TOOLSETS)
        elif name in BY_NAME:
            wanted.add(name)
        else:
            raise SelectionError(f"unknown toolset {name!r}; known: {', '.join(BY_NAME)}, or all, default")
    return tuple(t.name for t in TOOLSETS if t.name in wanted)


class ToolFacts(Protocol):
    """What selection reads of a tool: an `Endpoint`, or a snapshot's `ListedTool` (server/mcp_server/listing.py)."""

    @property
    def name(self) -> str: ...
    @property
    def toolset(self) -> str: ...
    @property
    def changes_nothing(self) -> bool: ...
    @property
    def public(self) -> bool: ...
    @property
    def any_key(self) -> bool: ...
    @property
    def roles(self) -> tuple[str, ...]: ...
    @property
    def scopes(self) -> tuple[str, ...]: ...


Tool = TypeVar("Tool", bound=ToolFacts)


def satisfiable(ep: ToolFacts, caller: Caller) -> bool:
    """Whether this key could ever call the endpoint (conditional scopes, e.g. publish:execute, aside)."""
    if ep.public or ep.any_key:
        return True
    if ep.roles and caller.role not in ep.roles:
        return False
    return set(ep.scopes) <= caller.scopes


@dataclass(frozen=True)
class Selection:
    toolsets: tuple[str, ...] = DEFAULT_TOOLSETS
    read_only: bool = False
    all_tools: bool = False  # list tools the key's scopes cannot satisfy too
    # Toolsets a connection may ask for (HTTP `?toolsets=`); None: any. The operator's `--toolsets` sets it.
    allowed: tuple[str, ...] | None = None

    def exposes(self, ep: ToolFacts) -> bool:
        return ep.toolset in self.toolsets and (ep.changes_nothing or not self.read_only)

    def listed(self, endpoints: Sequence[Tool], caller: Caller | None) -> list[Tool]:
        out = [ep for ep in endpoints if self.exposes(ep)]
        if self.all_tools or caller is None:
            return out
        return [ep for ep in out if satisfiable(ep, caller)]

    def narrowed(self, toolsets: tuple[str, ...] | None = None, read_only: bool = False,
                 all_tools: bool = False) -> Selection:
        """A per-connection choice: toolsets within `allowed`, and read-only or all-tools switched on, never
        off."""
        if toolsets is not None and self.allowed is not None:
            refused = [t for t in toolsets if t not in self.allowed]
            if refused:
                raise SelectionError(f"toolset {', '.join(refused)} is not offered by this server; offered: "
                                     f"{', '.join(self.allowed)}")
        return Selection(toolsets if toolsets is not None else self.toolsets, self.read_only or read_only,
                         self.all_tools or all_tools, self.allowed)


# -- paging: the cursor is opaque to clients (base64 of a small JSON object) --------------------------------

def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value: Any = json.loads(raw).get("o")
    except (binascii.Error, ValueError, AttributeError, UnicodeDecodeError):
        value = None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SelectionError("Invalid cursor: send back the nextCursor of the previous page, or none to start over.")
    return value


def page(items: Sequence[Any], cursor: str | None, size: int = PAGE_SIZE) -> tuple[list[Any], str | None]:
    start = decode_cursor(cursor)
    chunk = list(items[start:start + size])
    end = start + len(chunk)
    return chunk, (encode_cursor(end) if end < len(items) else None)
