"""`/v1/openapi.json` is a valid OpenAPI 3.1 document with one operation per catalogue endpoint, describing what
each route takes and answers (tests/test_fuzz.py drives the app from it; these check its shape and a few
requests it describes)."""

from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate

from schemas.errors import CODES
from schemas.validators import SINGLE_LINE_PATTERN
from server.openapi import TEXT_PATTERN, path_key
from tests.conftest import World
from tools import catalogue

pytestmark = pytest.mark.anyio

CONTENT = "/v1/brands/{brand_id}/content-items"


async def _doc(env) -> dict:
    resp = await env.rest.get("/v1/openapi.json")
    assert resp.status_code == 200
    return resp.json()


async def test_openapi_is_valid_with_one_operation_per_endpoint(sqlite_env) -> None:
    doc = await _doc(sqlite_env)
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    ids = [op["operationId"] for item in doc["paths"].values() for op in item.values()]
    assert sorted(ids) == sorted(ep.name for ep in catalogue.endpoints())
    for ep in catalogue.endpoints():
        assert doc["paths"][path_key(ep)][ep.method.lower()]["operationId"] == ep.name


async def test_variants_are_separate_operations_with_their_own_parameters(sqlite_env) -> None:
    doc = await _doc(sqlite_env)
    released = {p["name"] for p in doc["paths"][CONTENT]["get"]["parameters"]}
    older = {p["name"] for p in doc["paths"][CONTENT + "?variant=older"]["get"]["parameters"]}
    assert released == {"brand_id", "limit", "cursor", "order_direction"}
    assert older == {"brand_id", "page", "limit", "sort_by", "sort_dir"}
    assert "variant" not in released | older  # the older path item's key carries it
    # The older create takes no idempotency key; the released one takes it as an optional header.
    assert not [p for p in doc["paths"][CONTENT + "?variant=older"]["post"]["parameters"] if p["in"] == "header"]
    (header,) = [p for p in doc["paths"][CONTENT]["post"]["parameters"] if p["in"] == "header"]
    assert header["name"] == "Idempotency-Key" and header["required"] is False


async def test_bodies_are_strict_and_keys_required_where_the_route_requires_them(sqlite_env) -> None:
    doc = await _doc(sqlite_env)
    for ep in catalogue.endpoints():
        op = doc["paths"][path_key(ep)][ep.method.lower()]
        body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if body is not None:
            assert body["additionalProperties"] is False, ep.name
            assert "idempotency_key" not in body["properties"], ep.name
        keys = [p for p in op["parameters"] if p["name"] == "Idempotency-Key"]
        assert bool(keys) == (ep.idempotency != "none"), ep.name
        if keys:
            assert keys[0]["required"] == (ep.idempotency == "required"), ep.name
        assert op.get("security") == ([] if ep.public else None), ep.name


async def test_every_error_status_has_the_envelope_narrowed_to_its_codes(sqlite_env) -> None:
    doc = await _doc(sqlite_env)
    responses = doc["components"]["responses"]
    for name, response in responses.items():
        status = int(name.removeprefix("Error"))
        narrowed = response["content"]["application/json"]["schema"]["allOf"][1]["properties"]["error"]
        assert narrowed["properties"]["status"] == {"const": status}
        assert set(narrowed["properties"]["code"]["enum"]) == {c for c, s in CODES.items() if s.status == status}
    op = doc["paths"]["/v1/brands/{brand_id}/labels"]["post"]["responses"]
    assert {"201", "400", "401", "403", "404", "413", "414", "429", "431", "500", "503"} <= set(op)
    assert "default" not in op
    public = doc["paths"]["/v1/plans"]["get"]["responses"]
    assert "401" not in public and "403" not in public and "413" not in public


async def test_request_strings_carry_the_text_rule(sqlite_env) -> None:
    doc = await _doc(sqlite_env)
    body = doc["paths"]["/v1/brands/{brand_id}/labels"]["post"]["requestBody"]["content"]["application/json"]
    name = body["schema"]["properties"]["name"]
    # A name is one line (schemas.validators.single_line): its own pattern, with the text rule beside it.
    assert name["pattern"] == SINGLE_LINE_PATTERN and {"pattern": TEXT_PATTERN} in name["allOf"]
    rule = re.compile(TEXT_PATTERN)
    assert rule.match("two\nlines\tand tab") and not rule.match("bell\x07") and not rule.match("c1\x85")
    one_line = re.compile(SINGLE_LINE_PATTERN)
    assert one_line.match("Launch week") and not any(one_line.match(f"a{c}b") for c in "\r\n\t\x07\x85")
    # Alt text is keyed by media IDs only, and the document says so (the fuzzer sent other keys).
    alt = doc["components"]["schemas"]["TumblrSettings"]["properties"]["alt_text"]
    assert alt["additionalProperties"] is False and list(alt["patternProperties"]) == [r"^[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}$"]


async def test_what_the_document_describes_is_accepted(world: World) -> None:
    env, brand = world.env, world.brand_a.id
    auth = env.auth(world.full_key)
    # The released list takes cursor paging; the older variant takes page and sort_by (each refused by the other).
    assert (await env.rest.get(f"/v1/brands/{brand}/content-items", params={"limit": 5, "order_direction": "asc"},
                               headers=auth)).status_code == 200
    older = await env.rest.get(f"/v1/brands/{brand}/content-items?variant=older&page=2&sort_by=name", headers=auth)
    assert older.status_code == 200 and "pagination" in older.json()
    wrong = await env.rest.get(f"/v1/brands/{brand}/content-items", params={"page": 2}, headers=auth)
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "INVALID_QUERY"
    # A body with the documented keys is taken; a key the document does not list is refused (strict body).
    created = await env.rest.post(f"/v1/brands/{brand}/labels", json={"name": "Launch"}, headers=auth)
    assert created.status_code == 201
    refused = await env.rest.post(f"/v1/brands/{brand}/labels", json={"name": "X", "colour": "#fff"}, headers=auth)
    assert refused.status_code == 400 and refused.json()["error"]["status"] == 400
