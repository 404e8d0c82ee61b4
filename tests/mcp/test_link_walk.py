"""An agent that knows only `get_context` walks to a published post by the results alone: it follows `links`
(and `next_actions`) and picks each tool by the `_meta["socialpub/endpoint"]` a link names, never by a
hard-coded tool name."""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from server.worker import Worker
from tests.mcp.support import envelope, in_memory
from tests.schedules.support import WHEN

pytestmark = pytest.mark.anyio


class Agent:
    """Chooses tools from a link: the listed tool whose endpoint template matches the link's method and path."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.routes: list[tuple[str, re.Pattern[str], str]] = []
        self.called: list[str] = []

    async def load(self) -> None:
        cursor = None
        while True:
            page = await self.client.list_tools(cursor=cursor)
            for tool in page.tools:
                meta = tool.meta or {}
                if meta.get("socialpub/variant"):
                    continue  # older response shapes: an agent follows the released one
                method, template = meta["socialpub/endpoint"].split(" ", 1)
                regex = re.sub(r"\\\{([a-z_]+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
                self.routes.append((method, re.compile(f"^{regex}$"), tool.name))
            cursor = page.next_cursor
            if cursor is None:
                return

    async def call(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        self.called.append(tool)
        return envelope(await self.client.call_tool(tool, args or {}))

    async def follow(self, link: dict[str, Any], **args: Any) -> dict[str, Any]:
        url = urlsplit(link["href"])
        method = link.get("method", "GET")
        for m, pattern, name in self.routes:
            found = pattern.match(url.path)
            if m == method and found:
                return await self.call(name, {**found.groupdict(), **dict(parse_qsl(url.query)), **args})
        raise AssertionError(f"no listed tool serves {method} {link['href']}")


async def test_agent_reaches_a_published_post_by_links_alone(world) -> None:
    env = world.env
    brand = world.brand_a
    await env.integration(brand, "bluesky")
    async with in_memory(env, world.full_key) as client:
        agent = Agent(client)
        await agent.load()

        context = (await agent.call("get_context"))["data"]
        chosen = next(b for b in context["brands"] if b["id"] == brand.id)

        targets = (await agent.follow(chosen["links"]["targets"]))["data"]["targets"]
        target = next(t for t in targets if t["schedulable"] and t["platform"] == "bluesky")
        settings_key = target["capabilities"]["settings_key"]

        created = await agent.follow(chosen["links"]["content_items"], name="Walked by links",
                                     single_copy={"caption": "Hello from an agent that reads links."},
                                     intended_integration_ids=[target["integration_id"]],
                                     idempotency_key=str(uuid.uuid4()), **{settings_key: {}})
        assert created["success"], created["error"].get("issues")
        item = created["data"]["content_item"] if "content_item" in created["data"] else created["data"]
        links = created["data"].get("links") or item.get("links") or {}
        assert "preflight" in links, sorted(links)

        pre = await agent.follow(links["preflight"], integration_ids=[target["integration_id"]],
                                 scheduled_at=WHEN, approval_status="approved")
        assert pre["success"] and pre["data"]["can_schedule"] is True, pre
        scheduled = await agent.follow(pre["data"]["links"]["create_schedule"],
                                       content_item_id=item["id"], integration_ids=[target["integration_id"]],
                                       scheduled_at=WHEN, approval_status="approved",
                                       idempotency_key=str(uuid.uuid4()))
        assert scheduled["success"], scheduled["error"].get("issues")
        schedule = scheduled["data"]["schedule"]

        env.clock.set("2026-03-05T09:30:00.000Z")
        assert await Worker(env.rt, owner="walker").run_once() >= 1

        after = (await agent.follow(schedule["links"]["self"]))["data"]
        assert after["status"] == "published", after
        (published,) = after["latest_execution"]["targets"]
        assert published["state"] == "published"
    # Only get_context was chosen by name; every other tool came from a link.
    assert agent.called[0] == "get_context" and "get_context" not in agent.called[1:]
    assert {"list_targets", "create_content_item", "preflight_content", "create_schedule", "get_schedule"} <= set(
        agent.called)
