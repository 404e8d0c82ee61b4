"""Every structured result validates against the output schema its tool lists — for EVERY tool of every toolset,
successes and errors alike — and against the full REST schema (the success envelope, or the error envelope).

One world, driven through the in-memory MCP client: real resources are created first (a draft, a held
Schedule, a label, a snippet, an idea, a community post, a prospect brand), their IDs fill the path parameters
of every other tool, reads and writes run before deletes, and each tool is called once. Tools whose
preconditions this world does not meet (a provider, a plan, an upload) answer with an error envelope, which
must validate too. The listed schema is checked with jsonschema here, not only by the SDK client.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from server.mcp_server import tools as mcp_tools
from server.mcp_server.selection import Selection
from tests.mcp.support import envelope, in_memory
from tests.schedules.support import WHEN, Sched, new_key
from tools import catalogue
from tools.tool_schemas import envelope_schema, error_schema
from tools.toolsets import TOOLSETS

pytestmark = pytest.mark.anyio

ALL = Selection(toolsets=tuple(t.name for t in TOOLSETS), all_tools=True)
COMMUNITY_TYPE = "feature_request"
WINDOW = {"from": "2026-03-01T00:00:00.000Z", "to": "2026-04-01T00:00:00.000Z"}
# Tools that must succeed in this world (the core agent flow and every area's plain reads).
MUST_SUCCEED = {
    "get_context", "list_plans", "get_platform_capabilities", "get_brand_context", "list_brands", "get_brand",
    "list_targets", "list_integrations", "get_integration", "list_media", "get_media", "create_content_item",
    "get_content_item", "list_content_items", "update_content_item", "list_drafts", "list_labels",
    "preflight_content", "create_schedule", "get_schedule", "list_schedules", "reschedule_schedule",
    "list_publications", "list_history", "create_label", "create_snippet", "create_idea", "list_snippets",
    "list_ideas", "list_notifications", "get_notification_settings", "create_community_post",
    "get_community_post", "create_prospect_brand", "delete_schedule", "delete_label", "delete_snippet",
    "delete_idea",
}


def _errors(schema: dict[str, Any], value: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft202012Validator(schema).iter_errors(value)]


def _listed(name: str) -> dict[str, Any]:
    """The output schema tools/list gives for `name` (every tool lists one)."""
    schema = mcp_tools.specs()[name].tool.output_schema
    assert schema is not None, name
    return schema


class Run:
    def __init__(self, client: Any, world: Any) -> None:
        self.client, self.world = client, world
        self.pool: dict[str, Any] = {"brand_id": world.brand_a.id}
        self.results: dict[str, dict[str, Any]] = {}

    async def call(self, name: str, /, **args: Any) -> dict[str, Any]:
        ep = catalogue.by_name()[name]
        result = await self.client.call_tool(name, args)
        body = envelope(result)
        listed = _listed(name)
        assert not _errors(listed, body), (name, _errors(listed, body), body)
        full = envelope_schema(ep) if body.get("success") else error_schema()
        assert not _errors(full, body), (name, _errors(full, body))
        assert result.is_error is (not body["success"])
        self.results[name] = body
        return body

    def path_args(self, ep: Any) -> dict[str, Any]:
        return {p: self.pool.get(p, f"{p.removesuffix('_id')}_absent") for p in ep.path_params}


def _created_id(body: dict[str, Any]) -> str | None:
    data = body.get("data") if body.get("success") else None
    if not isinstance(data, dict):
        return None
    for value in (data, *[v for v in data.values() if isinstance(v, dict)]):
        if isinstance(value.get("id"), str):
            return value["id"]
    return None


async def test_every_tool_result_validates_against_its_listed_output_schema(world) -> None:
    env = world.env
    sc = await Sched(world).setup()
    item = await sc.item()
    spare = await sc.item(name="Spare")  # never scheduled: stays editable
    ig = world.integrations["instagram"].id
    async with in_memory(env, world.full_key, selection=ALL) as client:
        run = Run(client, world)
        run.pool.update(content_item_id=item, draft_id=item, media_id=sc.image, integration_id=ig)
        brand = run.pool["brand_id"]
        # Real resources first, so the other tools find something to read, change and delete.
        seeded = {
            "create_schedule": dict(content_item_id=item, integration_ids=sc.targets, scheduled_at=WHEN,
                                    approval_status="pending_review", idempotency_key=new_key()),
            "create_label": dict(name="Launch", color="#336699"),
            "create_snippet": dict(name="Sign-off", text="See you soon."),
            "create_idea": dict(name="New roast", description="A post about the new roast."),
            "create_community_post": dict(type=COMMUNITY_TYPE, title="Hello", description="First post.",
                                          idempotency_key=new_key()),
            "create_prospect_brand": dict(name="Prospect Cafe", idempotency_key=new_key()),
        }
        for name, body in seeded.items():
            ep = catalogue.by_name()[name]
            args = {"brand_id": brand} if "brand_id" in ep.path_params else {}
            out = await run.call(name, **args, **body)
            assert out["success"], (name, out)
            key = {"create_schedule": "schedule_id", "create_label": "label_id", "create_snippet": "snippet_id",
                   "create_idea": "idea_id", "create_community_post": "post_id",
                   "create_prospect_brand": "prospect_id"}[name]
            run.pool[key] = _created_id(out)

        extra: dict[str, dict[str, Any]] = {
            "list_schedules": WINDOW,
            "create_content_item": dict(name="Second", copy_mode="single", single_copy={"caption": "Hi"},
                                        idempotency_key=new_key()),
            "update_content_item": dict(content_item_id=spare, name="Renamed"),
            "preflight_content": dict(integration_ids=sc.targets, scheduled_at=WHEN, approval_status="pending_review"),
            "reschedule_schedule": dict(confirm_schedule_id=run.pool["schedule_id"],
                                        scheduled_at="2026-03-06T10:30:00+01:00", idempotency_key=new_key()),
            "delete_schedule": dict(confirm_schedule_id=run.pool["schedule_id"], idempotency_key=new_key()),
        }
        endpoints = [ep for ep in catalogue.endpoints() if ep.name not in run.results]
        for ep in sorted(endpoints, key=lambda e: e.method == "DELETE"):  # deletes last
            args = run.path_args(ep)
            if ep.toolset == "admin" and "brand_id" in ep.path_params:
                args["brand_id"] = run.pool["prospect_id"]
            await run.call(ep.name, **{**args, **extra.get(ep.name, {})})

    assert set(run.results) == {ep.name for ep in catalogue.endpoints()}, "every tool is called"
    failed = {n for n in MUST_SUCCEED if not run.results[n]["success"]}
    assert not failed, {n: run.results[n]["error"] for n in failed}
    successes = sum(1 for body in run.results.values() if body["success"])
    assert successes >= len(MUST_SUCCEED)


def test_the_listed_output_schema_refuses_what_the_envelope_never_is() -> None:
    """The listed schema is not `{}`: `data` of the wrong JSON type fails it (so the test above could fail),
    while an error envelope, which has no `data`, passes."""
    one = _listed("get_schedule")
    assert _errors(one, {"success": True, "data": ["not", "an", "object"]})
    assert one["properties"]["data"] == {"type": "object"}  # its keys are each result's (issue 33 item 8)
    older = _listed("list_publications")
    assert _errors(older, {"success": True, "data": {"items": []}})
    assert not _errors(older, {"success": True, "data": [], "meta": {}, "pagination": {}})
    assert not _errors(one, {"success": False, "error": {"code": "NOT_FOUND"}})
