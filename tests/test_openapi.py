"""`/v1/openapi.json` is a valid OpenAPI 3.1 document covering every catalogue route."""

from __future__ import annotations

import pytest
from openapi_spec_validator import validate

from tools import catalogue

pytestmark = pytest.mark.anyio


async def test_openapi_is_valid_and_complete(sqlite_env) -> None:
    resp = await sqlite_env.rest.get("/v1/openapi.json")
    assert resp.status_code == 200
    doc = resp.json()
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    for ep in catalogue.endpoints():
        op = doc["paths"][ep.path][ep.method.lower()]
        assert op["operationId"] in {e.name for e in catalogue.endpoints() if e.path == ep.path}
