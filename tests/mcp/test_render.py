"""`render` returns a tool result in wire form: exactly what the SDK would make of the `CallToolResult` model."""

from __future__ import annotations

import json

import mcp_types as types
import pytest

from schemas.errors import ApiError
from server.dispatch import Outcome
from server.mcp_server.tools import envelope_json, render
from tools import catalogue

SUCCESS = {"success": True, "data": {"name": "Café ☕", "n": 2**70, "ratio": 2.5e-05, "tags": ["a\nb", "\"q\""]},
           "meta": {"request_id": "req_1", "idempotency_replayed": True}}


@pytest.mark.parametrize("outcome", [
    Outcome(200, SUCCESS, replayed=True),
    Outcome(201, {"success": True, "data": {"id": "x"}, "meta": {"request_id": "req_2"}}),
    Outcome(403, ApiError("INSUFFICIENT_SCOPE", "This API key lacks scope brands:write.").body("req_3")),
    Outcome(304, None),
])
def test_render_is_the_models_wire_form(outcome: Outcome) -> None:
    ep = catalogue.get("get_context")
    wire = render(ep, outcome)
    text = wire["content"][0]["text"]
    model = types.CallToolResult(content=[types.TextContent(text=text)], structured_content=wire["structuredContent"],
                                 is_error=wire["isError"])
    assert wire == model.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert json.loads(text.split("\n", 1)[1]) == wire["structuredContent"]
    assert wire["isError"] is (outcome.status >= 400 or outcome.body is None)


@pytest.mark.parametrize("value", [
    "Café ☕ \u2028 \"q\" \\ \n \x00 \x7f", 0, -1, 2**63 - 1, 2**70, -(2**70), True, None, 0.0, -0.0, 0.5, 1e16, 1e22,
    1e-4, 9.99e-5, 2.5e-05, 1e-06, -3.2e-7, 1.7976931348623157e308, 5e-324, 123456.789, [1.5e-12, {"x": 4e-9}],
])
def test_envelope_json_is_the_standard_librarys_text(value: object) -> None:
    body = {"success": True, "data": {"value": value, "s": "0.00001 e-5"}, "meta": {"request_id": "req_1"}}
    assert envelope_json(body) == json.dumps(body, ensure_ascii=False, separators=(",", ":"))
