"""Link objects `{href, method?, required_scopes}` built from the catalogue, so paths and scopes are never
written twice."""

from __future__ import annotations

from typing import Any

from tools import catalogue


def link(endpoint_name: str, *, extra_scopes: tuple[str, ...] = (), query: str = "", **params: str) -> dict[str, Any]:
    ep = catalogue.get(endpoint_name)
    href = ep.path.format(**params) + (f"?{query}" if query else "")
    out: dict[str, Any] = {"href": href}
    if ep.method != "GET":
        out["method"] = ep.method
    scopes = list(ep.scopes)
    if extra_scopes:  # rare; a list page builds 20 links without
        scopes.extend(s for s in extra_scopes if s not in scopes)
    out["required_scopes"] = scopes
    return out
