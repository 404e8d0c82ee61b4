"""An agent that knows only `get_context` walks to a published post by the results alone: it follows `links`,
`next_actions` and, when preflight blocks, each blocker's `repair_action` and `field_path`, and picks each tool by
the `_meta["socialpub/endpoint"]` a link names, never by a hard-coded tool name."""

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

    async def follow(self, link: dict[str, Any], method: str | None = None, **args: Any) -> dict[str, Any]:
        """Call the listed tool serving the link's route; `method` acts on the resource the link names (e.g. PATCH
        on an item's `self`), as a REST client would."""
        url = urlsplit(link["href"])
        method = method or link.get("method", "GET")
        for m, pattern, name in self.routes:
            found = pattern.match(url.path)
            if m == method and found:
                return await self.call(name, {**found.groupdict(), **dict(parse_qsl(url.query)), **args})
        raise AssertionError(f"no listed tool serves {method} {link['href']}")


def repair(blocker: dict[str, Any]) -> dict[str, Any]:
    """What this agent knows how to fix, read from the blocker alone: its repair_action and field_path."""
    action = blocker["repair_action"]
    if action["action"] == "add_platform_settings":
        assert "{}" in action["guidance"], action  # "an empty object {} applies the defaults"
        return {blocker["field_path"].removeprefix("$."): {}}
    raise AssertionError(f"the walk does not expect {action}")


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

        # A first draft without the platform's settings: preflight blocks it, and the results say how to fix it.
        created = await agent.follow(chosen["links"]["content_items"], name="Walked by links",
                                     single_copy={"caption": "Hello from an agent that reads links."},
                                     intended_integration_ids=[target["integration_id"]],
                                     idempotency_key=str(uuid.uuid4()))
        assert created["success"], created["error"].get("issues")
        item = created["data"]["content_item"]
        links = created["data"]["links"]
        (step,) = created["data"]["next_actions"]
        assert step["action"] == "preflight_content", step
        ask = dict(integration_ids=step["integration_ids"], scheduled_at=WHEN, approval_status="approved")

        pre = await agent.follow(links["preflight"], **ask)
        assert pre["success"] and pre["data"]["can_schedule"] is False, pre
        assert "create_schedule" not in pre["data"]["links"]
        assert any("preflight again" in n for n in pre["data"]["next_actions"]), pre["data"]["next_actions"]
        fixes: dict[str, Any] = {}
        for blocker in pre["data"]["blockers"]:
            fixes.update(repair(blocker))
        assert fixes == {target["capabilities"]["settings_key"]: {}}

        # The draft is edited where the brand's content list says it lives (its `self` link), then preflight again.
        listed = (await agent.follow(chosen["links"]["content_items"], method="GET"))["data"]["items"]
        own = next(i for i in listed if i["id"] == item["id"])
        edited = await agent.follow(own["links"]["self"], method="PATCH", **fixes)
        assert edited["success"], edited["error"].get("issues")
        pre = await agent.follow(pre["data"]["links"]["self"], **ask)
        assert pre["success"] and pre["data"]["can_schedule"] is True, pre
        assert pre["data"]["blockers"] == []

        scheduled = await agent.follow(pre["data"]["links"]["create_schedule"], content_item_id=item["id"], **ask,
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
    assert agent.called[1:] == ["list_targets", "create_content_item", "preflight_content", "list_content_items",
                                "update_content_item", "preflight_content", "create_schedule", "get_schedule"]
