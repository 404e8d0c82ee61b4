"""Make the extracts in this folder from a network's full OpenAPI document (run by hand when refreshing a copy,
never by the tests): `python tests/providers/contracts/extract.py FULL.json OUT.json PATH [PATH ...]`.

The extract keeps `openapi`, `info`, `servers` and `security` as they are, the named path items whole (every
method, parameter, request body and response), and every component any of them references, transitively, under
its original name. Nothing is edited: a kept object is byte-for-byte the object of the full document (re-indented).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def refs(node: Any) -> set[str]:
    """Every $ref under node, and the schemas a discriminator's mapping names."""
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        mapping = (node.get("discriminator") or {}).get("mapping") if isinstance(node.get("discriminator"), dict) \
            else None
        found |= set((mapping or {}).values())
        return found.union(*(refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(refs(v) for v in node))
    return set()


def extract(spec: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    out = {k: spec[k] for k in ("openapi", "info", "servers", "security") if k in spec}
    out["paths"] = {p: spec["paths"][p] for p in paths}
    todo, seen = refs(out["paths"]), set()
    components: dict[str, dict[str, Any]] = {}
    while todo:
        ref = todo.pop()
        if ref in seen or not ref.startswith("#/components/"):
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)
        target = spec["components"][kind][name]
        components.setdefault(kind, {})[name] = target
        todo |= refs(target)
    if "securitySchemes" in spec.get("components", {}):
        components["securitySchemes"] = spec["components"]["securitySchemes"]
    out["components"] = {k: dict(sorted(v.items())) for k, v in sorted(components.items())}
    return out


if __name__ == "__main__":
    full, target, *wanted = sys.argv[1:]
    with open(full) as f:
        document = json.load(f)
    with open(target, "w") as f:
        json.dump(extract(document, wanted), f, indent=1, ensure_ascii=False)
        f.write("\n")
