"""GET /v1/context lists a bounded number of brands; when cut it says so and links to list_brands."""

from __future__ import annotations

import pytest

from schemas.brands import CONTEXT_BRANDS_MAX

pytestmark = pytest.mark.anyio


async def test_context_brand_list_is_bounded(env) -> None:
    ws = await env.workspace()
    key = await env.key(ws)
    brands = [await env.brand(ws, f"Brand {i:03d}") for i in range(CONTEXT_BRANDS_MAX)]
    data = (await env.rest.get("/v1/context", headers=env.auth(key))).json()["data"]
    assert [b["id"] for b in data["brands"]] == [b.id for b in brands]
    assert data["brands_has_more"] is False and data["links"]["list_brands"] is None

    await env.brand(ws, "One too many")
    data = (await env.rest.get("/v1/context", headers=env.auth(key))).json()["data"]
    assert [b["id"] for b in data["brands"]] == [b.id for b in brands]  # oldest first, cut at the bound
    assert data["brands_has_more"] is True
    assert data["links"]["list_brands"]["href"] == "/v1/brands"
