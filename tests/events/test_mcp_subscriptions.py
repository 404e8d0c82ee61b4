"""MCP resource subscriptions: the server declares resources.subscribe; a client subscribed to a Schedule's resource
(and to the brand's notifications) gets notifications/resources/updated when the worker publishes it, in memory and
over streamable HTTP, with resources/subscribe (handshake era) and subscriptions/listen (protocol 2026-07-28);
create_schedule and approve_schedule name the resource to subscribe to; a key that cannot read a resource cannot
subscribe to it (a listen stream's acknowledgement omits it). tests/events/test_ts_subscribe.py does the same with
the TypeScript SDK client."""

from __future__ import annotations

import uuid
from datetime import timedelta

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError

from server.mcp_server.app import McpApp
from server.mcp_server.run import http_app
from server.mcp_server.selection import Selection
from server.mcp_server.subscriptions import MAX_PER_SESSION, notifications_uri, schedule_uri
from tests.mcp.support import _all_toolsets, serving, stdio_params
from tests.publishing.support import seed_post, seed_schedule
from tools.publishing import worker as publishing

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")]


class Updates:
    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))

    async def wait_for(self, uri: str, seconds: float = 10.0) -> None:
        with anyio.fail_after(seconds):
            while uri not in self.uris:
                await anyio.sleep(0.05)


def app_for(env, key: str) -> McpApp:
    return McpApp(env.rt, env.dispatcher, selection=Selection(toolsets=_all_toolsets()), key=key)


async def test_subscribed_client_hears_the_worker_publish(world) -> None:
    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    updates = Updates()
    async with Client(app_for(env, world.full_key).server, mode="legacy", message_handler=updates) as client:
        resources = client.server_capabilities.resources
        assert resources is not None and resources.subscribe is True
        created = await client.call_tool("create_schedule", {
            "brand_id": world.brand_a.id, "content_item_id": item, "integration_ids": [fb],
            "scheduled_at": (env.clock.now() + timedelta(minutes=5)).isoformat().replace("+00:00", "Z"),
            "approval_status": "approved", "idempotency_key": str(uuid.uuid4())})
        assert not created.is_error, created.structured_content
        sid = created.structured_content["data"]["schedule"]["id"]
        [link] = [c for c in created.content if isinstance(c, types.ResourceLink)]
        assert str(link.uri) == schedule_uri(world.brand_a.id, sid)
        await client.subscribe_resource(str(link.uri))
        await client.subscribe_resource(notifications_uri(world.brand_a.id))
        await anyio.sleep(1.5)  # nothing changed yet: nothing announced
        assert updates.uris == []
        env.clock.advance(minutes=5)
        await publishing.publish_due(env.rt, "w1")
        await updates.wait_for(str(link.uri))
        await updates.wait_for(notifications_uri(world.brand_a.id))
        read = await client.read_resource(str(link.uri))
        first = read.contents[0]
        assert isinstance(first, types.TextResourceContents) and '"status": "published"' in first.text
        assert updates.uris.count(str(link.uri)) == 1
        # after unsubscribing, later changes are not announced
        await client.unsubscribe_resource(str(link.uri))


async def test_approve_schedule_names_the_resource_and_reads_guard_subscriptions(world) -> None:
    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    held = await seed_schedule(env.db, world.brand_a, item, [fb], env.clock.now(), approval_status="pending_review")
    async with Client(app_for(env, world.full_key).server, mode="legacy") as client:
        approved = await client.call_tool("approve_schedule", {
            "brand_id": world.brand_a.id, "schedule_id": held, "confirm_schedule_id": held,
            "idempotency_key": str(uuid.uuid4())})
        assert not approved.is_error, approved.structured_content
        assert [str(c.uri) for c in approved.content if isinstance(c, types.ResourceLink)] == \
            [schedule_uri(world.brand_a.id, held)]
        with pytest.raises(MCPError):
            await client.subscribe_resource("socialpub://context")  # not a subscribable resource
    # the brand-B-only key may not subscribe to a brand A Schedule
    async with Client(app_for(env, world.key_b_only).server, mode="legacy") as client:
        with pytest.raises(MCPError):
            await client.subscribe_resource(schedule_uri(world.brand_a.id, held))


async def test_subscription_over_streamable_http(world) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    sid = await seed_schedule(env.db, world.brand_a, item, [fb], env.clock.now())
    updates = Updates()
    app = http_app(env.rt, transport="http", selection=Selection(toolsets=_all_toolsets()), run_worker=False)
    async with serving(app) as base:
        headers = {"Authorization": f"Bearer {world.full_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20.0)) as h, \
                Client(streamable_http_client(f"{base}/mcp", http_client=h), mode="legacy",
                       message_handler=updates) as client:
            uri = schedule_uri(world.brand_a.id, sid)
            await client.subscribe_resource(uri)
            env.clock.advance(minutes=5)
            await publishing.publish_due(env.rt, "w1")
            await updates.wait_for(uri)


# -- protocol 2026-07-28: subscriptions/listen ---------------------------------------------------------------------

async def _next_update(sub, uri: str, seconds: float = 10.0) -> None:
    """Iterate the listen stream until `uri` is announced."""
    with anyio.fail_after(seconds):
        async for event in sub:
            if isinstance(event, ResourceUpdated) and event.uri == uri:
                return
    raise AssertionError("the listen stream ended")


async def test_listen_stream_hears_the_worker_publish(world) -> None:
    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    sid = await seed_schedule(env.db, world.brand_a, item, [fb], env.clock.now())
    uri, notes = schedule_uri(world.brand_a.id, sid), notifications_uri(world.brand_a.id)
    async with Client(app_for(env, world.full_key).server) as client:  # negotiates 2026-07-28
        assert client.protocol_version == "2026-07-28"
        resources = client.server_capabilities.resources
        assert resources is not None and resources.subscribe is True
        # Not subscribable (the context resource) or not readable with this key (brand B): omitted from the ack.
        refused = ["socialpub://context", schedule_uri(world.brand_b.id, "sch_nope"), "mailto:x@example.com"]
        async with client.listen(resource_subscriptions=[uri, notes, *refused]) as sub:
            assert sub.honored.resource_subscriptions == [uri, notes]
            env.clock.advance(minutes=5)
            await publishing.publish_due(env.rt, "w1")
            await _next_update(sub, uri)
            read = await client.read_resource(uri)
            first = read.contents[0]
            assert isinstance(first, types.TextResourceContents) and '"status": "published"' in first.text


async def test_listen_refuses_a_key_that_cannot_read(world) -> None:
    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    sid = await seed_schedule(env.db, world.brand_a, item, [fb], env.clock.now())
    async with Client(app_for(env, world.key_b_only).server) as client:
        async with client.listen(resource_subscriptions=[schedule_uri(world.brand_a.id, sid)]) as sub:
            assert not sub.honored.resource_subscriptions
        with pytest.raises(MCPError):  # bounded: at most MAX_PER_SESSION URIs per stream
            async with client.listen(resource_subscriptions=[
                    schedule_uri(world.brand_b.id, f"sch_{n}") for n in range(MAX_PER_SESSION + 1)]):
                pass


async def test_listen_over_streamable_http(world) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    sid = await seed_schedule(env.db, world.brand_a, item, [fb], env.clock.now())
    app = http_app(env.rt, transport="http", selection=Selection(toolsets=_all_toolsets()), run_worker=False)
    async with serving(app) as base:
        headers = {"Authorization": f"Bearer {world.full_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20.0)) as h, \
                Client(streamable_http_client(f"{base}/mcp", http_client=h), mode="2026-07-28") as client:
            uri = schedule_uri(world.brand_a.id, sid)
            async with client.listen(resource_subscriptions=[uri]) as sub:
                assert sub.honored.resource_subscriptions == [uri]
                env.clock.advance(minutes=5)
                await publishing.publish_due(env.rt, "w1")
                await _next_update(sub, uri)


async def test_listen_over_stdio(world, tmp_path) -> None:
    """`socialpub mcp` over stdio at 2026-07-28: the stream shares the pipe, the updates carry its subscription ID
    (the SDK's client routes them by it); the publish happens in this process, the stdio server tails the log."""
    env = world.env
    fb = world.integrations["facebook"].id
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    sid = await seed_schedule(env.db, world.brand_a, item, [fb], env.clock.now())
    params = stdio_params(env.rt.settings.database_url, tmp_path, world.full_key, "--no-worker")
    async with Client(params, mode="2026-07-28") as client:
        uri = schedule_uri(world.brand_a.id, sid)
        async with client.listen(resource_subscriptions=[uri]) as sub:
            assert sub.honored.resource_subscriptions == [uri]
            env.clock.advance(minutes=5)
            await publishing.publish_due(env.rt, "w1")
            await _next_update(sub, uri, seconds=30.0)
