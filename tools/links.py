"""Link objects `{href, method?, required_scopes}` built from the catalogue, so paths and scopes are never
written twice."""

from __future__ import annotations

from collections.abc import Callable
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


def links_to(endpoint_name: str, last: str, **params: str) -> Callable[[str], dict[str, Any]]:
    """`value -> link(endpoint_name, **params, **{last: value})`, for many values of one path parameter (a list
    page's twenty self links): the endpoint is looked up and the rest of its path formatted once."""
    ep = catalogue.get(endpoint_name)
    marker = "\x00"  # never in an ID or a path
    assert all(marker not in v for v in params.values())
    prefix, found, suffix = ep.path.format(**params, **{last: marker}).partition(marker)
    assert found and marker not in suffix, ep.path
    scopes = list(ep.scopes)
    if ep.method != "GET":
        method = ep.method
        return lambda value: {"href": f"{prefix}{value}{suffix}", "method": method, "required_scopes": scopes.copy()}
    return lambda value: {"href": f"{prefix}{value}{suffix}", "required_scopes": scopes.copy()}


def links_to_each(names: tuple[str, ...], last: str) -> tuple[Callable[[str], dict[str, Any]], ...]:
    """`links_to(name, last)` for each name, built once per catalogue (found by identity, as
    tools/catalogue.py's `by_name`): a hot page (get_context lists up to 50 brands) formats each path once."""
    found = catalogue.endpoints()
    key = (names, last)
    cached = _EACH.get(key)
    if cached is None or cached[0] is not found:
        cached = _EACH[key] = (found, tuple(links_to(name, last) for name in names))
    return cached[1]


_EACH: dict[tuple[tuple[str, ...], str], tuple[tuple, tuple[Callable[[str], dict[str, Any]], ...]]] = {}
