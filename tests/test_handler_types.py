"""Every handler's return annotation is the response model its endpoint declares (`Model`, `Reply[Model]`, for
an older list `Reply[list[Model]]`), and pyright (run by .ci/run) holds each handler body to its annotation: the
declared schema, the REST envelope and the MCP result come from one model and cannot diverge.

UNCONVERTED lists the handlers that still return plain dicts; it only shrinks (a converted handler left in it
fails too).
"""

from __future__ import annotations

import types
import typing
from dataclasses import replace

import pytest

from schemas import library as sl
from tools import catalogue
from tools.endpoint import Endpoint, Reply

# Handlers not yet returning their declared model (issue 29 item 4): remove a name when converting it.
UNCONVERTED: frozenset[str] = frozenset({
    "approve_schedule", "cancel_schedule", "create_media_upload_session", "create_schedule", "delete_schedule",
    "get_media", "get_platform_capabilities", "get_schedule", "get_schedule_receipt", "get_target_dynamic_options",
    "import_media", "list_media", "list_schedules", "move_schedule_to_draft", "preflight_content",
    "refresh_target_dynamic_options", "repair_media_derivative", "request_media_upload_url",
    "request_provider_cleanup", "reschedule_schedule", "update_media",
    "update_tiktok_privacy",
})


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


def test_converted_handlers_return_the_declared_model() -> None:
    wrong = [m for ep in catalogue.endpoints() if ep.name not in UNCONVERTED and (m := mismatch(ep))]
    assert wrong == []


def test_unconverted_list_only_shrinks() -> None:
    names = {ep.name for ep in catalogue.endpoints()}
    assert names >= UNCONVERTED, f"not endpoints: {sorted(UNCONVERTED - names)}"
    done = sorted(n for n in UNCONVERTED if mismatch(catalogue.get(n)) is None)
    assert done == [], f"converted: remove {done} from UNCONVERTED"


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
