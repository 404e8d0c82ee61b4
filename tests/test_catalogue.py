"""Registry-wide invariants of the endpoint catalogue, and snapshots of every public schema."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from schemas.scopes import ADMIN_ROLES
from schemas.scopes import BY_NAME as SCOPES
from tools import catalogue
from tools.endpoint import fields_at
from tools.tool_schemas import envelope_schema, input_schema, listed_input_schema, listed_output_schema
from tools.toolsets import BY_NAME as TOOLSETS

ENDPOINTS = catalogue.endpoints()
IDS = [e.name for e in ENDPOINTS]
SNAPSHOTS = Path(__file__).parent / "snapshots" / "schemas"
VERBS = {"get", "list", "create", "update", "delete", "cancel", "approve", "reschedule", "move", "refresh",
         "preflight", "import", "upload", "repair", "regenerate", "add", "start", "queue", "revert", "set", "read",
         "request", "mark", "complete", "run", "claim", "remove"}


def test_names_and_routes_are_unique() -> None:
    assert len(set(IDS)) == len(IDS)
    keys = [e.route_key for e in ENDPOINTS]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("ep", ENDPOINTS, ids=IDS)
def test_endpoint_declaration(ep) -> None:
    assert re.fullmatch(r"[a-z]+(_[a-z]+)+", ep.name), "verb_noun snake_case"
    assert ep.name.split("_")[0] in VERBS, f"{ep.name} does not start with a known verb"
    assert ep.path.startswith("/v1/")
    assert ep.toolset in TOOLSETS
    assert ep.summary.endswith(".") and len(ep.summary) >= 30
    # every endpoint declares exactly one kind of authority: scopes, any valid key, or public
    assert [bool(ep.scopes), ep.any_key, ep.public].count(True) == 1
    assert all(s in SCOPES for s in ep.scopes)
    assert all(r in ADMIN_ROLES for r in ep.roles)
    if ep.read_only:
        assert ep.idempotency == "none" and not ep.destructive, "GET is read-only"
        assert not fields_at(ep.request, "body"), "GET takes no body"
    # path params appear in the input model, as path params, and nothing else is a path param
    assert set(ep.path_params) == set(fields_at(ep.request, "path"))
    assert ep.list_shape != "older" or ep.response is not None


@pytest.mark.parametrize("ep", ENDPOINTS, ids=IDS)
def test_schemas_are_valid_2020_12_objects(ep) -> None:
    for schema in (input_schema(ep), envelope_schema(ep), listed_input_schema(ep), listed_output_schema(ep)):
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        assert not {"anyOf", "oneOf", "allOf"} & set(schema)


def test_only_get_context_needs_just_a_key() -> None:
    assert [e.name for e in ENDPOINTS if e.any_key] == ["get_context"]


@pytest.mark.parametrize("ep", ENDPOINTS, ids=IDS)
def test_schema_snapshot(ep) -> None:
    """A change to a public schema shows up in review as a change to this file (UPDATE_SNAPSHOTS=1 rewrites).
    These are the schemas MCP lists (lean); the full REST schemas are the OpenAPI document's."""
    current = {
        "endpoint": f"{ep.method} {ep.path}" + (f"?variant={ep.variant}" if ep.variant else ""),
        "scopes": list(ep.scopes), "public": ep.public, "roles": list(ep.roles), "idempotency": ep.idempotency,
        "input": listed_input_schema(ep), "output": listed_output_schema(ep),
    }
    path = SNAPSHOTS / f"{ep.name}.json"
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_SNAPSHOTS") or not path.exists():
        if not os.environ.get("UPDATE_SNAPSHOTS") and os.environ.get("CI"):
            pytest.fail(f"missing snapshot {path.name}: run UPDATE_SNAPSHOTS=1 pytest tests/test_catalogue.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text, f"schema of {ep.name} changed: review, then UPDATE_SNAPSHOTS=1"


def test_no_stale_snapshots() -> None:
    stale = {p.stem for p in SNAPSHOTS.glob("*.json")} - set(IDS)
    assert not stale, f"snapshots for endpoints that no longer exist: {sorted(stale)}"
