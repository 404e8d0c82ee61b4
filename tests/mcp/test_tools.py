"""The MCP server through the in-process client in legacy mode (which validates structuredContent against each
tool's outputSchema like real clients): tool derivation, selection, paging, calls, errors, replays."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from schemas.scopes import ROLE_SCOPES
from server.mcp_server import tools as mcp_tools
from server.mcp_server.app import McpApp
from server.mcp_server.selection import Selection, SelectionError, decode_cursor, encode_cursor, parse_toolsets
from tests.mcp.support import all_tools, envelope, in_memory, install_probe, text_of
from tools import catalogue
from tools.tool_schemas import listed_input_schema, listed_output_schema
from tools.toolsets import DEFAULT_TOOLSETS, TOOLSETS

pytestmark = pytest.mark.anyio

ALL = Selection(toolsets=tuple(t.name for t in TOOLSETS))


# -- derivation, for whatever the catalogue holds ----------------------------------------------------------

@pytest.mark.parametrize("ep", catalogue.endpoints(), ids=lambda e: e.name)
def test_every_endpoint_is_one_tool_derived_from_its_declaration(ep) -> None:
    spec = mcp_tools.specs()[ep.name]
    tool = spec.tool
    assert tool.name == ep.name
    assert tool.input_schema == listed_input_schema(ep)
    assert tool.output_schema == listed_output_schema(ep)
    assert tool.description is not None
    assert ep.summary in tool.description and (ep.guidance or "") in tool.description
    a = effective_hints(tool.annotations)
    # GET and write-free POSTs (preflight) change nothing: read-only, idempotent, never destructive
    assert a["readOnlyHint"] is (ep.method == "GET" or ep.write_free)
    if not a["readOnlyHint"]:  # the spec: destructive and idempotent mean something only for tools that write
        assert a["destructiveHint"] is (ep.destructive or ep.method == "DELETE")
        assert a["idempotentHint"] is (ep.method in ("PUT", "DELETE") or ep.idempotency == "required")
    assert a["openWorldHint"] is ep.open_world
    assert tool.title is None or tool.title == ep.title
    assert tool.meta == {"socialpub/endpoint": f"{ep.method} {ep.path}",
                         **({"socialpub/variant": ep.variant} if ep.variant else {})}
    if ep.idempotency != "none":
        assert tool.input_schema["properties"]["idempotency_key"] == {"type": "string"}
        assert ("idempotency_key" in tool.input_schema.get("required", [])) is (ep.idempotency == "required")


# The MCP spec's value of each hint a tool leaves out.
HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}


def effective_hints(annotations: types.ToolAnnotations | None) -> dict[str, bool]:
    listed = annotations.model_dump(by_alias=True, exclude_none=True) if annotations else {}
    return {**HINT_DEFAULTS, **listed}


def test_annotations_list_only_what_differs_from_the_spec_defaults() -> None:
    for spec in mcp_tools.specs().values():
        assert spec.tool.annotations is not None, spec.name
        listed = spec.tool.annotations.model_dump(by_alias=True, exclude_none=True)
        assert all(listed[k] != HINT_DEFAULTS[k] for k in listed), (spec.name, listed)
        if listed.get("readOnlyHint"):
            assert not {"destructiveHint", "idempotentHint"} & set(listed), spec.name
    # a read that reaches a provider is still open-world: its hint is not listed (the default is true)
    assert effective_hints(mcp_tools.specs()["get_target_dynamic_options"].tool.annotations)["openWorldHint"]
    assert effective_hints(mcp_tools.specs()["get_schedule"].tool.annotations)["openWorldHint"] is False


def test_probe_write_tool_annotations_and_idempotency_note(monkeypatch) -> None:
    install_probe(monkeypatch)
    tool = mcp_tools.specs()["create_probe"].tool
    a = effective_hints(tool.annotations)
    assert a["readOnlyHint"] is False and a["idempotentHint"] is True and a["destructiveHint"] is False
    assert "idempotency_key" in tool.input_schema["required"]
    assert tool.meta is not None and tool.meta["socialpub/endpoint"] == "POST /v1/probe"


def test_toolset_parsing() -> None:
    assert parse_toolsets(None) == DEFAULT_TOOLSETS == parse_toolsets("default") == parse_toolsets("")
    assert parse_toolsets("all") == tuple(t.name for t in TOOLSETS)
    assert parse_toolsets("brands, context") == ("context", "brands")  # catalogue order
    with pytest.raises(SelectionError, match="unknown toolset 'nope'"):
        parse_toolsets("context,nope")


def test_cursor_round_trip_and_refusals() -> None:
    assert decode_cursor(encode_cursor(50)) == 50
    for bad in ("", "!!", encode_cursor(-1), "eyJvIjogdHJ1ZX0"):  # the last is {"o": true}
        with pytest.raises(SelectionError, match="Invalid cursor"):
            decode_cursor(bad)


# -- listing -----------------------------------------------------------------------------------------------

async def test_tools_list_walks_pages(world) -> None:
    async with in_memory(world.env, world.full_key, selection=ALL, page_size=2) as client:
        tools, pages = await all_tools(client)
    names = [t.name for t in tools]
    expected = [ep.name for ep in catalogue.endpoints()]
    assert names == expected
    assert pages == (len(expected) + 1) // 2 and pages > 1


async def test_bad_cursor_is_invalid_params(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        with pytest.raises(MCPError) as info:
            await client.list_tools(cursor="not-a-cursor", cache_mode="refresh")
    assert info.value.code == types.INVALID_PARAMS


async def test_default_toolsets_and_read_only(world, monkeypatch) -> None:
    install_probe(monkeypatch)  # POST, toolset brands
    env = world.env
    async with in_memory(env, world.full_key, selection=Selection(toolsets=("context",))) as client:
        names = {t.name for t in (await all_tools(client))[0]}
        assert names == {ep.name for ep in catalogue.endpoints() if ep.toolset == "context"}
        with pytest.raises(MCPError) as info:  # outside the toolsets: the tool does not exist here
            await client.call_tool("get_brand", {"brand_id": world.brand_a.id})
        assert info.value.code == types.INVALID_PARAMS
    async with in_memory(env, world.full_key, selection=Selection(toolsets=DEFAULT_TOOLSETS,
                                                                  read_only=True)) as client:
        names = {t.name for t in (await all_tools(client))[0]}
        assert "create_probe" not in names and "get_brand" in names
        # read-only mode offers GET tools and write-free ones (preflight), nothing that changes state
        assert all(catalogue.by_name()[n].changes_nothing for n in names)
        assert {n for n in names if catalogue.by_name()[n].method != "GET"} <= {"preflight_content"}
        before = await env.row_counts()
        with pytest.raises(MCPError) as info:
            await client.call_tool("create_probe", {"name": "x", "idempotency_key": "k"})
        assert info.value.code == types.INVALID_PARAMS
        assert await env.row_counts() == before


async def test_tools_the_key_can_never_use_are_hidden_unless_all_tools(world) -> None:
    env = world.env
    key = await env.key(world.ws, scopes=["brands:read"])  # no posts:read: get_brand_context is out of reach
    async with in_memory(env, key) as client:
        names = {t.name for t in (await all_tools(client))[0]}
        assert "get_brand_context" not in names
        assert {"get_context", "get_platform_capabilities", "list_brands", "get_brand"} <= names
        # hidden from the listing, but a call still gets the precise refusal
        result = await client.call_tool("get_brand_context", {"brand_id": world.brand_a.id})
        body = envelope(result)
        assert result.is_error and body["error"]["code"] == "INSUFFICIENT_SCOPE" and body["error"]["status"] == 403
    async with in_memory(env, key, selection=Selection(toolsets=ALL.toolsets, all_tools=True)) as client:
        names = {t.name for t in (await all_tools(client))[0]}
        assert "get_brand_context" in names


async def test_role_gated_tools_are_hidden_from_members(world, monkeypatch) -> None:
    from tests.test_idempotency import PROBE

    admin_only = type(PROBE)(**{**{f: getattr(PROBE, f) for f in PROBE.__dataclass_fields__},
                                "name": "create_admin_probe", "path": "/v1/admin-probe", "roles": ("admin",)})
    real = catalogue.endpoints()
    monkeypatch.setattr(catalogue, "endpoints", lambda: (*real, admin_only))
    member = await world.env.key(world.ws, scopes=ROLE_SCOPES["member"], role="member")
    async with in_memory(world.env, member) as client:
        assert "create_admin_probe" not in {t.name for t in (await all_tools(client))[0]}
    async with in_memory(world.env, world.full_key) as client:  # admin
        assert "create_admin_probe" in {t.name for t in (await all_tools(client))[0]}


# -- calls -------------------------------------------------------------------------------------------------

async def test_read_tool_returns_the_rest_envelope(world) -> None:
    env = world.env
    rest = (await env.rest.get(f"/v1/brands/{world.brand_a.id}/context", headers=env.auth(world.full_key))).json()
    async with in_memory(env, world.full_key) as client:
        await all_tools(client)  # the client validates results against listed output schemas
        result = await client.call_tool("get_brand_context", {"brand_id": world.brand_a.id})
    body = envelope(result)
    assert result.is_error is False
    assert body["success"] is True and body["data"] == rest["data"]
    assert body["meta"]["request_id"].startswith("req_") and body["meta"]["request_id"] != rest["meta"]["request_id"]
    text = text_of(result.content[0])
    assert text.startswith("get_brand_context succeeded (200).")
    assert json.loads(text.split("\n", 1)[1]) == body


async def test_write_tool_replays_with_the_same_key(world, monkeypatch) -> None:
    install_probe(monkeypatch)
    env = world.env
    async with in_memory(env, world.full_key) as client:
        await all_tools(client)
        first = await client.call_tool("create_probe", {"name": "mcp-alpha", "idempotency_key": "mcp-k1"})
        again = await client.call_tool("create_probe", {"name": "mcp-alpha", "idempotency_key": "mcp-k1"})
        other = await client.call_tool("create_probe", {"name": "mcp-beta", "idempotency_key": "mcp-k1"})
    one, two = envelope(first), envelope(again)
    assert not first.is_error and one["data"]["outcome"] == "created" and "idempotency_replayed" not in one["meta"]
    assert not again.is_error and two["data"] == {**one["data"], "outcome": "replayed"}
    assert two["meta"]["idempotency_replayed"] is True
    assert "Idempotent replay" in text_of(again.content[0])
    assert other.is_error and envelope(other)["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert envelope(other)["error"]["status"] == 409
    from tests.test_idempotency import brand_count

    assert await brand_count(env, "mcp-alpha") == 1 and await brand_count(env, "mcp-beta") == 0


async def test_write_tool_without_required_key_is_refused(world, monkeypatch) -> None:
    install_probe(monkeypatch)
    env = world.env
    before = await env.row_counts()
    async with in_memory(env, world.full_key) as client:
        result = await client.call_tool("create_probe", {"name": "nokey"})
    err = envelope(result)["error"]
    assert result.is_error and err["code"] == "MALFORMED_REQUEST" and err["status"] == 400
    assert [(i["field_path"], i["code"]) for i in err["issues"]] == [("$.idempotency_key", "REQUIRED")]
    assert await env.row_counts() == before


BRAND = object()  # stands for a brand the key sees


@pytest.mark.parametrize(("tool", "args", "code", "issues"), [
    ("get_brand_context", {}, "MALFORMED_REQUEST", [("$.brand_id", "REQUIRED")]),
    ("get_brand_context", {"brand_id": 7}, "MALFORMED_REQUEST", [("$.brand_id", "INVALID_VALUE")]),
    # brand visibility comes before validation, as over REST: an unknown brand is 404 whatever else is wrong
    ("get_brand_context", {"brand_id": "x" * 65}, "NOT_FOUND", []),
    ("get_brand_context", {"brand_id": BRAND, "extra": 1}, "INVALID_QUERY", [("$.extra", "UNKNOWN_FIELD")]),
    ("list_brands", {"limit": 101}, "INVALID_QUERY", [("$.limit", "OUT_OF_RANGE")]),
    ("list_brands", {"page": "2"}, "INVALID_QUERY", [("$.page", "INVALID_TYPE")]),
    ("get_context", {"scope_disclosure": "all"}, "INVALID_QUERY", [("$.scope_disclosure", "NOT_ALLOWED")]),
    ("get_context", {"idempotency_key": "k"}, "MALFORMED_REQUEST", [("$.idempotency_key", "NOT_ACCEPTED")]),
])
async def test_invalid_arguments_are_error_envelopes_and_write_nothing(world, tool, args, code, issues) -> None:
    env = world.env
    before = await env.row_counts()
    args = {k: world.brand_a.id if v is BRAND else v for k, v in args.items()}
    async with in_memory(env, world.full_key) as client:
        result = await client.call_tool(tool, args)
    err = envelope(result)["error"]
    assert result.is_error is True
    assert err["code"] == code and err["status"] == (404 if code == "NOT_FOUND" else 400)
    assert err["request_id"].startswith("req_") and err["retryable"] is False
    assert [(i["field_path"], i["code"]) for i in err.get("issues", [])] == issues
    assert await env.row_counts() == before


async def test_arguments_are_never_echoed_in_errors(world) -> None:
    secret = "sk-live-do-not-echo"
    async with in_memory(world.env, world.full_key) as client:
        results = [await client.call_tool("get_brand_context", {"brand_id": secret * 5}),
                   await client.call_tool("get_context", {"scope_disclosure": secret}),
                   await client.call_tool("list_brands", {"page": secret}),
                   await client.call_tool("get_brand", {"brand_id": world.brand_a.id, secret: 1})]
    for result in results[:3]:
        assert result.is_error and secret not in json.dumps(envelope(result)) and secret not in text_of(result.content[0])
    # an unknown field is reported by name (the caller chose the name, not a value)
    assert envelope(results[3])["error"]["issues"][0]["field_path"] == f"$.{secret}"


async def test_missing_scope_is_a_403_envelope(world) -> None:
    env = world.env
    key = await env.key(world.ws, scopes=["brands:read"])
    async with in_memory(env, key, selection=Selection(toolsets=ALL.toolsets, all_tools=True)) as client:
        await all_tools(client)
        result = await client.call_tool("get_brand_context", {"brand_id": world.brand_a.id})
    err = envelope(result)["error"]
    assert result.is_error
    assert (err["code"], err["status"]) == ("INSUFFICIENT_SCOPE", 403)
    assert err["details"]["required_scopes"] == ["posts:read"]
    assert err["next_action"] == "use_authorized_api_key" and err["repair_guidance"]
    assert "failed: 403 INSUFFICIENT_SCOPE" in text_of(result.content[0])


async def test_brand_outside_the_restriction_is_not_found(world) -> None:
    async with in_memory(world.env, world.key_b_only) as client:
        result = await client.call_tool("get_brand", {"brand_id": world.brand_a.id})
    err = envelope(result)["error"]
    assert result.is_error and (err["code"], err["status"]) == ("NOT_FOUND", 404)


async def test_missing_or_bad_key_lists_tools_but_calls_answer_401(world) -> None:
    for key in (None, "socialpub_live_not-a-real-key"):
        async with in_memory(world.env, key) as client:
            names = {t.name for t in (await all_tools(client))[0]}
            assert "get_brand_context" in names
            result = await client.call_tool("get_context", {})
            err = envelope(result)["error"]
            assert result.is_error and (err["code"], err["status"]) == ("UNAUTHORIZED", 401)
            public = await client.call_tool("get_platform_capabilities", {})
            assert public.is_error is False


async def test_revoked_key_stops_working_mid_session(world) -> None:
    env = world.env
    key = await env.key(world.ws)
    async with in_memory(env, key) as client:
        assert (await client.call_tool("get_context", {})).is_error is False
        from tools.operator import actions as operator
        async with env.db.session(write=True) as s:
            await operator.revoke_key(s, env.clock.now(), env.key_row(key).id)
        result = await client.call_tool("get_context", {})
    assert result.is_error and envelope(result)["error"]["code"] == "UNAUTHORIZED"


async def test_unknown_tool_is_invalid_params(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("no_such_tool", {})
    assert info.value.code == types.INVALID_PARAMS and "no_such_tool" in info.value.message


async def test_handler_crash_is_a_500_envelope_not_a_protocol_error(world, monkeypatch) -> None:
    from tests.test_idempotency import PROBE

    async def boom(call, req):
        raise RuntimeError("kaput")

    crashing = type(PROBE)(**{**{f: getattr(PROBE, f) for f in PROBE.__dataclass_fields__},
                              "name": "crash_probe", "path": "/v1/crash", "handler": boom})
    real = catalogue.endpoints()
    monkeypatch.setattr(catalogue, "endpoints", lambda: (*real, crashing))
    async with in_memory(world.env, world.full_key) as client:
        result = await client.call_tool("crash_probe", {"name": "x", "idempotency_key": "k"})
    err = envelope(result)["error"]
    assert result.is_error and (err["code"], err["status"]) == ("INTERNAL_ERROR", 500)
    assert "kaput" not in json.dumps(err)


async def test_logging_set_level_is_accepted(world) -> None:
    import warnings

    from mcp.shared.exceptions import MCPDeprecationWarning

    async with in_memory(world.env, world.full_key) as client:
        assert client.server_capabilities.logging is not None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            assert (await client.set_logging_level("info")).model_dump(exclude_none=True) == {}


async def test_server_identity_and_instructions(world) -> None:
    async with in_memory(world.env, world.full_key) as client:
        assert client.server_info is not None and client.server_info.name == "socialpub"
        assert "get_context" in (client.instructions or "")
        caps = client.server_capabilities
        assert caps.tools is not None and caps.resources is not None and caps.prompts is not None


def test_specs_are_built_once_per_catalogue() -> None:
    assert mcp_tools.specs() is mcp_tools.specs()
    first = next(iter(mcp_tools.specs().values()))
    assert first.tool is mcp_tools.specs()[first.name].tool


def test_app_builds_without_a_database_connection(tmp_path) -> None:
    from schemas.settings import Settings
    from tools.runtime import Runtime

    app = McpApp(Runtime.from_settings(Settings(home=tmp_path)))
    assert app.server.name == "socialpub"
