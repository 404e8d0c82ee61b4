"""Link objects `{href, method?, required_scopes}`: `method` is absent for GET, never null."""

from __future__ import annotations

from typing import Any

import pytest

from schemas.envelope import Link

pytestmark = pytest.mark.anyio


def test_a_get_link_has_no_method_key() -> None:
    assert Link(href="/v1/x", required_scopes=[]).model_dump(mode="json") == {"href": "/v1/x", "required_scopes": []}
    post = Link(href="/v1/x", method="POST", required_scopes=["a"]).model_dump(mode="json")
    assert post == {"href": "/v1/x", "method": "POST", "required_scopes": ["a"]}


async def test_links_in_model_payloads_omit_method(world) -> None:
    env = world.env
    ctx = (await env.rest.get("/v1/context", headers=env.auth(world.full_key))).json()["data"]
    assert ctx["links"]["platform_capabilities"] == {"href": "/v1/platforms/capabilities", "required_scopes": []}
    assert "method" not in ctx["brands"][0]["links"]["targets"]
    brand = (await env.rest.get(f"/v1/brands/{world.brand_a.id}/context", headers=env.auth(world.full_key))).json()
    assert brand["data"]["links"]["self"] == {"href": f"/v1/brands/{world.brand_a.id}/context",
                                              "required_scopes": ["posts:read"]}


def test_links_to_is_link_for_each_value():
    """`links_to` (a list page's self links, the path formatted once) gives what `link` gives, GET or not."""
    from tools.links import link, links_to

    for name, last in (("get_content_item", "content_item_id"), ("delete_content_item", "content_item_id")):
        make = links_to(name, last, brand_id="brd_01J0000000000000000000000A")
        for value in ("ci_01J0000000000000000000000B", "ci_01J0000000000000000000000C"):
            made = make(value)
            params: dict[str, Any] = {"brand_id": "brd_01J0000000000000000000000A", last: value}
            assert made == link(name, **params)
            assert list(made) == list(link(name, **params))
        assert make("a")["required_scopes"] is not make("b")["required_scopes"]  # each link its own list
