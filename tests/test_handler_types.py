"""Every handler's return annotation is the response model its endpoint declares (`Model`, `Reply[Model]`, for
an older list `Reply[list[Model]]`), and pyright (run by .ci/run) holds each handler body to its annotation: the
declared schema, the REST envelope and the MCP result come from one model and cannot diverge.
Every handler is converted (issue 29 item 4): none returns a plain dict.
"""

from __future__ import annotations

import types
import typing
from dataclasses import replace

import pytest

from schemas import library as sl
from tools import catalogue
from tools.endpoint import Endpoint, Reply


def accepted(ep: Endpoint) -> set[object]:
    model = ep.response
    if ep.list_shape == "older":
        return {Reply[list[model]]}
    return {model, Reply[model]}


def returns(ep: Endpoint) -> set[object]:
    """The members of the handler's return annotation (a union is split)."""
    hint = typing.get_type_hints(ep.handler)["return"]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return set(typing.get_args(hint))
    return {hint}


def mismatch(ep: Endpoint) -> str | None:
    found, allowed = returns(ep), accepted(ep)
    if found <= allowed:
        return None
    return f"{ep.name}: handler returns {found}, endpoint declares {getattr(ep.response, '__name__', None)} ({allowed})"


def test_every_endpoint_declares_a_response_model() -> None:
    assert [ep.name for ep in catalogue.endpoints() if ep.response is None] == []


def test_every_handler_returns_the_declared_model() -> None:
    wrong = [m for ep in catalogue.endpoints() if (m := mismatch(ep))]
    assert wrong == []


@pytest.mark.parametrize("plant", ["other_model", "plain_dict", "older_without_list"])
def test_a_planted_mismatch_is_found(plant: str) -> None:
    ep = catalogue.get("create_label")
    if plant == "other_model":
        async def other_model(call, req) -> sl.Snippet: ...
        planted = replace(ep, handler=other_model)
    elif plant == "plain_dict":
        async def plain_dict(call, req) -> dict[str, typing.Any]: ...
        planted = replace(ep, handler=plain_dict)
    else:
        async def older_without_list(call, req) -> Reply[sl.Label]: ...
        planted = replace(catalogue.get("list_labels_older"), handler=older_without_list)
    assert mismatch(planted) is not None
