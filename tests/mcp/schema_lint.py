"""MCP Inspector's tool-schema portability lint, ported rule for rule so a test can fail on any finding.

Source: `core/json/schemaLint.ts` of the MCP Inspector (https://github.com/modelcontextprotocol/inspector, added by
pull request #2121, "flag unportable tool schemas in all three clients", merged 2026-08-25; the `type-union`
wording revised by #2395, rule and severity unchanged), read 2026-11-28 from the copy at
github.com/wei/mcp-inspector commit 2f9e0901c1fe2aaf9ef6a0664478b84019643984. Rules:

- `boolean-schema` (error): a bare `true`/`false` where a schema object is expected (allowed only under
  additionalProperties, unevaluatedProperties, additionalItems, unevaluatedItems);
- `type-union` (warning): `type` is an array; the portable spelling is `anyOf` branches with one `type` each;
- `remote-ref` (warning): a `$ref` not starting with `#`;
- `untyped-schema` (warning): a schema object with no constraining keyword at all (annotations such as
  `description` do not count; `type`, `enum`, `const`, `anyOf`, `properties`, `$ref`, ... do);
- `non-object-root` (error): an inputSchema whose root `type` is a string other than "object".

The walk visits the same keywords in the same order as the original (maps, then arrays, then single subschemas).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

BOOLEAN_VALUED_KEYWORDS = frozenset({"additionalProperties", "unevaluatedProperties", "additionalItems",
                                     "unevaluatedItems"})
SUBSCHEMA_KEYWORDS = ("items", "contains", "not", "propertyNames", "if", "then", "else", "additionalProperties",
                      "unevaluatedProperties", "additionalItems", "unevaluatedItems")
SUBSCHEMA_ARRAY_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")
SUBSCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "dependentSchemas", "dependencies", "$defs",
                          "definitions")
CONSTRAINING_KEYWORDS = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems", "maxContains",
    "minContains", "maxProperties", "minProperties", "required", "dependentRequired",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "items", "prefixItems", "contains", "additionalItems",
    "unevaluatedItems", "properties", "patternProperties", "additionalProperties", "unevaluatedProperties",
    "propertyNames", "dependentSchemas", "dependencies",
    "$ref", "$dynamicRef", "$recursiveRef",
})
MAX_DEPTH = 64
_BARE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


@dataclass(frozen=True)
class Finding:
    tool: str
    rule: str
    severity: str
    schema: str
    path: str

    def __str__(self) -> str:
        where = self.schema if not self.path else f"{self.schema}.{self.path}"
        return f"{self.severity}: tool {self.tool!r} {where}: {self.rule}"


def _child(parent: str, key: str) -> str:
    if _BARE.match(key):
        return key if parent == "" else f"{parent}.{key}"
    return f"{parent}[{json.dumps(key)}]"


def _walk(node: Any, path: str, keyword: str | None, depth: int, out: list[tuple[str, str, str]]) -> None:
    if depth > MAX_DEPTH:
        return
    if isinstance(node, bool):
        if keyword is None or keyword not in BOOLEAN_VALUED_KEYWORDS:
            out.append(("boolean-schema", "error", path))
        return
    if not isinstance(node, dict):
        return
    if isinstance(node.get("type"), list):
        out.append(("type-union", "warning", path))
    ref = node.get("$ref")
    if isinstance(ref, str) and ref and not ref.startswith("#"):
        out.append(("remote-ref", "warning", path))
    if not any(key in CONSTRAINING_KEYWORDS for key in node):
        out.append(("untyped-schema", "warning", path))
    for key in SUBSCHEMA_MAP_KEYWORDS:
        mapping = node.get(key)
        if isinstance(mapping, dict):
            for name, sub in mapping.items():
                _walk(sub, _child(_child(path, key), name), key, depth + 1, out)
    for key in SUBSCHEMA_ARRAY_KEYWORDS:
        items = node.get(key)
        if isinstance(items, list):
            for i, sub in enumerate(items):
                _walk(sub, f"{_child(path, key)}[{i}]", key, depth + 1, out)
    for key in SUBSCHEMA_KEYWORDS:
        if key not in node:
            continue
        value = node[key]
        if key == "items" and isinstance(value, list):
            for i, sub in enumerate(value):
                _walk(sub, f"{_child(path, key)}[{i}]", key, depth + 1, out)
            continue
        _walk(value, _child(path, key), key, depth + 1, out)


def lint_tool(tool: dict[str, Any]) -> list[Finding]:
    """Findings for one tool as listed (`inputSchema` then `outputSchema`, wire names)."""
    found: list[Finding] = []
    for kind in ("inputSchema", "outputSchema"):
        schema = tool.get(kind)
        if schema is None:
            continue
        raw: list[tuple[str, str, str]] = []
        if kind == "inputSchema" and isinstance(schema, dict) and isinstance(schema.get("type"), str) \
                and schema["type"] != "object":
            raw.append(("non-object-root", "error", ""))
        _walk(schema, "", None, 0, raw)
        found += [Finding(tool["name"], rule, severity, kind, path) for rule, severity, path in raw]
    return found


def lint_tools(tools: list[dict[str, Any]]) -> list[Finding]:
    return [f for tool in tools for f in lint_tool(tool)]
