"""The MCP server object: tools, resources and prompts over the shared dispatcher.

Who is calling: on stdio and in-process connections, the one key the server was started with; on SSE and
streamable HTTP, the key that `server.mcp_server.http.KeyAuth` authenticated for the HTTP request that
carried the message (the SDK exposes that request as `ctx.request`). Either way every tool call goes
through `Dispatcher.invoke`, which authenticates the key again, so a revoked key stops working at once (within
`CALLER_CACHE_SECONDS` when another process revoked it, tools/services/auth.py).
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST
from sqlalchemy.exc import OperationalError

from schemas.errors import ApiError
from server.dispatch import Dispatcher, Outcome, new_request_id
from server.mcp_server import listing, prompts, resources, subscriptions
from server.mcp_server.keys import KeyUser
from server.mcp_server.selection import PAGE_SIZE, Selection, SelectionError, page, parse_toolsets
from server.mcp_server.tools import ToolSpec, render, specs
from server.metrics import MCP_TOOL_CALLS
from tools.runtime import Runtime
from tools.services.auth import OAUTH_ACCESS_PREFIX, Caller, check_token

log = logging.getLogger("socialpub.mcp")

INSTRUCTIONS = (
    "socialpub manages social publishing for the brands this API key may act on. Start with get_context "
    "(authority and brands), then get_brand_context for the brand's voice. Every tool returns the REST API's "
    "envelope as structured content: {success, data, meta} or {success: false, error: {code, status, message, "
    "retryable, repair_guidance, next_action, issues}}; follow repair_guidance and next_action on errors. Writes "
    "that take idempotency_key: send a new key per request and reuse it only to retry. Drafts and preflight "
    "never publish; a Schedule publishes only when approved by a key with publish:execute. The prompts walk "
    "the main workflows."
)


def stdio_key_problem(key: str | None) -> str:
    """Why a stdio server cannot act, and what supplies its key: stdio has no `Authorization` header, the key is
    the server's environment (issue 33, item 6)."""
    what = ("SOCIALPUB_API_KEY is not set" if not key else
            "SOCIALPUB_API_KEY is not a usable socialpub API key (unknown, revoked or mistyped)")
    return (f"{what}: this stdio server acts with the key in its environment. Set SOCIALPUB_API_KEY in the `env` "
            "of this server's entry in your MCP client's configuration (or export it before `socialpub mcp`) to "
            "a key made with `socialpub keys create --name agent --scopes all`, then restart the server.")


def package_version() -> str:
    try:
        return version("socialpub")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0"


@dataclass(frozen=True)
class Identity:
    """The caller of one MCP message: the key to dispatch with, its resolved authority, what it may see."""

    token: str | None
    caller: Caller | None
    client: str
    selection: Selection


def _authority(ident: Identity) -> dict[str, Any]:
    """An OAuth access token is resolved by the HTTP guard (per request); the dispatcher takes its caller.
    An API key is passed as is, and the dispatcher checks it again."""
    if ident.token and ident.token.startswith(OAUTH_ACCESS_PREFIX):
        return {"caller": ident.caller}
    return {}


def _flag(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes", "on")


class McpApp:
    """One MCP server over one runtime. `key` is the fixed key of stdio and in-process connections."""

    def __init__(self, rt: Runtime, dispatcher: Dispatcher | None = None, *, selection: Selection | None = None,
                 key: str | None = None, page_size: int = PAGE_SIZE, stdio: bool = False) -> None:
        self.rt = rt
        # stdio: a key the server cannot use is said at tools/list and on every call, naming the variable.
        self.stdio = stdio
        self.key_problem: str | None = None
        self.page_size = page_size
        self.dispatcher = dispatcher or Dispatcher(rt)
        self.selection = selection or Selection()
        self.key = key
        self._fixed: Identity | None = None  # stdio and in-process: resolved once, on first use
        with warnings.catch_warnings():
            # logging/setLevel is deprecated from protocol 2026-07-28 but still part of the handshake-era
            # protocol this server speaks to most clients (docs/decisions.md, "MCP").
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server: Server[Any] = Server(
                "socialpub", version=package_version(), title="socialpub",
                description="Multi-brand social publishing for LLM agents.", instructions=INSTRUCTIONS,
                get_tool_input_schema=self._input_schema,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,  # pyright: ignore[reportArgumentType]  # answers a CallToolResult in wire form (a dict, server/mcp_server/tools.render); the SDK validates results anyway
                on_list_resources=self._list_resources, on_list_resource_templates=self._list_templates,
                on_read_resource=self._read_resource,
                on_subscribe_resource=self._subscribe, on_unsubscribe_resource=self._unsubscribe,
                on_subscriptions_listen=self._listen,
                lifespan=subscriptions.lifespan(rt),
                on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt,
                on_set_logging_level=self._set_logging_level,
            )

    # -- identity --------------------------------------------------------------------------------------
    async def authenticate(self, token: str | None) -> Caller:
        """The key's authority, or ApiError (401 for a bad key, 503 when the database is unavailable)."""
        try:
            if token and token.startswith(OAUTH_ACCESS_PREFIX):  # MCP authorization (server/console/oauth.py)
                from server.console import oauth  # here: a stdio server starts without the OAuth server

                caller = await oauth.resolve_access_token(self.rt, token)
                if caller is None:
                    raise ApiError("UNAUTHORIZED", "The access token is invalid, expired or revoked.")
                return caller
            cached = self.dispatcher.callers.get(check_token(token))
            if cached is not None:
                return cached
            async with self.rt.db.session(write=False) as session:
                return await self.dispatcher.callers.authenticate(session, token)
        except OperationalError:
            raise ApiError("DEPENDENCY_UNAVAILABLE", "The database is busy or unavailable.",
                           headers={"Retry-After": "1"}) from None

    async def fixed_identity(self) -> Identity:
        """The identity of stdio and in-process connections: the key the server was started with, resolved once."""
        if self._fixed is None:
            try:
                caller = await self.authenticate(self.key)
            except ApiError as exc:
                if exc.code != "UNAUTHORIZED":  # e.g. the database is busy: try again next time
                    return Identity(self.key, None, "local", self.selection)
                self.key_problem = stdio_key_problem(self.key)
                log.warning("%s", self.key_problem)
                caller = None
            self._fixed = Identity(self.key, caller, "local", self.selection)
        return self._fixed

    async def identity(self, ctx: ServerRequestContext[Any, Any]) -> Identity:
        request = ctx.request
        if request is None:  # stdio, in-process
            return await self.fixed_identity()
        user = request.scope.get("user")
        token, caller = (user.secret, user.caller) if isinstance(user, KeyUser) else (None, None)
        query = request.query_params
        try:
            toolsets = parse_toolsets(query["toolsets"]) if "toolsets" in query else None
        except SelectionError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        selection = self.selection.narrowed(toolsets, _flag(query.get("read_only")), _flag(query.get("all_tools")))
        client = request.client.host if request.client else "unknown"
        return Identity(token, caller, client, selection)

    def _visible(self, ident: Identity) -> list[ToolSpec | listing.ListedTool]:
        table = listing.tools()  # the snapshot until the catalogue is loaded (server/mcp_server/listing.py)
        return [table[ep.name] for ep in ident.selection.listed([s.endpoint for s in table.values()], ident.caller)]

    @staticmethod
    def _input_schema(name: str) -> Mapping[str, Any] | None:
        spec = specs().get(name)
        return spec.tool.input_schema if spec else None

    # -- tools -----------------------------------------------------------------------------------------
    async def _list_tools(self, ctx: ServerRequestContext[Any, Any],
                          params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        ident = await self.identity(ctx)
        if self.stdio and self.key_problem and ctx.request is None:
            # Listing tools that all refuse would hide the one thing to fix behind each call.
            raise MCPError(INVALID_REQUEST, self.key_problem)
        try:
            chunk, cursor = page(self._visible(ident), params.cursor if params else None, self.page_size)
        except SelectionError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        return types.ListToolsResult(tools=[s.tool for s in chunk], next_cursor=cursor)

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any],
                         params: types.CallToolRequestParams) -> dict[str, Any]:
        ident = await self.identity(ctx)
        spec = specs().get(params.name)
        if spec is None or not ident.selection.exposes(spec.endpoint):
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name!r}. Call tools/list for the tools this "
                                           "connection offers.")
        if self.stdio and self.key_problem and ctx.request is None and not spec.endpoint.public:
            # Not "Send `Authorization: Bearer …`": stdio has no header; the key is the server's environment.
            outcome = self.dispatcher.error(ApiError("UNAUTHORIZED", self.key_problem), new_request_id())
            _tool_calls(params.name, False).inc()
            return render(spec.endpoint, outcome)
        # Same dispatch as REST: authenticate, brand, scopes, role, then validate the arguments (pydantic).
        args = params.arguments or {}
        outcome = await self.dispatcher.invoke(spec.endpoint, args, token=ident.token, client=ident.client,
                                               transport="mcp", **_authority(ident))
        _tool_calls(params.name, outcome.ok).inc()
        result = render(spec.endpoint, outcome)
        link = subscriptions.resource_link(params.name, outcome.body)
        if link is not None:
            result["content"].append(link)
        return result

    # -- resources -------------------------------------------------------------------------------------
    async def _list_resources(self, ctx: ServerRequestContext[Any, Any],
                              params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources.listing())

    async def _list_templates(self, ctx: ServerRequestContext[Any, Any],
                              params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any],
                             params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        ident = await self.identity(ctx)
        uri = str(params.uri)
        found = resources.resolve(uri)
        if found is None:
            known = ", ".join(d.uri for d, _ in resources.available())
            outcome = self.dispatcher.error(ApiError("NOT_FOUND", f"No resource {uri[:200]}; resources: {known}."),
                                            new_request_id())
        else:
            definition, ep, path_args = found
            outcome = await self.dispatcher.invoke(ep, {} if definition.select else path_args, token=ident.token,
                                                   client=ident.client, transport="mcp", **_authority(ident))
        if not outcome.ok:
            raise resource_error(outcome)
        data = (outcome.body or {}).get("data")
        if found is not None and found[0].select is not None:
            try:
                data = found[0].select(data, found[2])
            except ApiError as exc:
                raise resource_error(self.dispatcher.error(exc, new_request_id())) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type=resources.MIME, text=json.dumps(data, ensure_ascii=False))])

    async def _subscribable(self, ctx: ServerRequestContext[Any, Any], uri: str) -> dict[str, str]:
        """The URI's parameters when it is a Schedule's or a brand's notifications resource that this caller can
        read (the same dispatch as `resources/read`); MCPError otherwise."""
        found = resources.resolve(uri)
        if found is None or found[0].uri not in (subscriptions.SCHEDULE_URI, subscriptions.NOTIFICATIONS_URI):
            raise MCPError(INVALID_PARAMS, f"Only {subscriptions.SCHEDULE_URI} and {subscriptions.NOTIFICATIONS_URI} "
                                           "can be subscribed to.")
        await self._read_resource(ctx, types.ReadResourceRequestParams(uri=uri))  # same authority as a read
        return found[2]

    @staticmethod
    def _hub(ctx: ServerRequestContext[Any, Any]) -> subscriptions.Hub:
        hub = (ctx.lifespan_context or {}).get(subscriptions.HUB)
        if hub is None:
            raise MCPError(INTERNAL_ERROR, "Subscriptions are not available on this connection.")
        return hub

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any],
                         params: types.SubscribeRequestParams) -> types.EmptyResult:
        """Handshake era: accepted for a Schedule's or a brand's notifications resource that this caller can read."""
        uri = str(params.uri)
        path_args = await self._subscribable(ctx, uri)
        hub = self._hub(ctx)
        await hub.prime(path_args)
        try:
            hub.add(ctx.session, uri, path_args)
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any],
                           params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        hub = (ctx.lifespan_context or {}).get(subscriptions.HUB)
        if hub is not None:
            hub.remove(ctx.session, str(params.uri))
        return types.EmptyResult()

    async def _listen(self, ctx: ServerRequestContext[Any, Any],
                      params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        """Protocol 2026-07-28: one stream of `notifications/resources/updated` for the `resourceSubscriptions` this
        caller may subscribe to (the acknowledgement omits the others, as the spec has it for what a server does
        not honour). The list-changed kinds are acknowledged as asked: this server's tool, prompt and resource
        lists never change while it runs, so they never fire. The SDK's `ListenHandler` sends the
        acknowledgement and the stamped updates; the stream lasts until the client closes it."""
        hub = self._hub(ctx)
        wanted = list(dict.fromkeys(params.notifications.resource_subscriptions or ()))
        if len(wanted) > subscriptions.MAX_PER_SESSION:
            raise MCPError(INVALID_PARAMS, f"A listen stream may name at most {subscriptions.MAX_PER_SESSION} "
                                           "resources.")
        if hub.listen_streams >= subscriptions.MAX_LISTEN_STREAMS:
            raise MCPError(INTERNAL_ERROR, "Too many open subscription streams; try again later.")
        accepted: list[tuple[str, dict[str, str]]] = []
        for uri in wanted:
            try:
                accepted.append((uri, await self._subscribable(ctx, uri)))
            except MCPError as exc:
                log.info("subscriptions/listen: %s omitted: %s", uri[:200], exc.message[:200])
        for _, path_args in accepted:
            await hub.prime(path_args)
        sink = subscriptions.ListenSink()
        # No await from here until the handler has subscribed to the sink's bus: no update falls in between.
        for uri, path_args in accepted:
            hub.add(sink, uri, path_args)
        honoured = params.model_copy(update={"notifications": params.notifications.model_copy(
            update={"resource_subscriptions": [uri for uri, _ in accepted]})})
        hub.listen_streams += 1
        try:
            return await ListenHandler(sink.bus, max_subscriptions=1)(ctx, honoured)
        finally:
            hub.listen_streams -= 1
            hub.remove_all(sink)

    # -- prompts ---------------------------------------------------------------------------------------
    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any],
                            params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompts.prompt_model(p) for p in prompts.PROMPTS])

    async def _get_prompt(self, ctx: ServerRequestContext[Any, Any],
                          params: types.GetPromptRequestParams) -> types.GetPromptResult:
        p = prompts.BY_NAME.get(params.name)
        if p is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name!r}; prompts: {', '.join(prompts.BY_NAME)}.")
        args = params.arguments or {}
        missing = [a.name for a in p.arguments if a.required and not args.get(a.name)]
        if missing:
            raise MCPError(INVALID_PARAMS, f"Prompt {p.name} needs argument {', '.join(missing)}.")
        ident = await self.identity(ctx)
        available = {s.name for s in self._visible(ident)}
        return prompts.render(p, args, available, {name: s.endpoint for name, s in specs().items()})

    # -- logging ---------------------------------------------------------------------------------------
    async def _set_logging_level(self, ctx: ServerRequestContext[Any, Any],
                                 params: types.SetLevelRequestParams) -> types.EmptyResult:
        # Accepted for handshake-era clients; this server sends no log notifications (its logs go to the
        # operator's stderr), so every level filters the same empty stream.
        return types.EmptyResult()


_TOOL_CALL_SERIES: dict[tuple[str, bool], Any] = {}


def _tool_calls(tool: str, ok: bool) -> Any:
    """The MCP_TOOL_CALLS series of a tool and outcome, looked up once (`labels()` takes a lock and builds its key
    on every call, as server/metrics.py `count_call` notes); tools are the catalogue's, outcomes two."""
    series = _TOOL_CALL_SERIES.get((tool, ok))
    if series is None:
        series = _TOOL_CALL_SERIES[tool, ok] = MCP_TOOL_CALLS.labels(tool, "ok" if ok else "error")
    return series


def resource_error(outcome: Outcome) -> MCPError:
    """A failed read as an MCP error: `data` is the spec's error object (code, status, request_id, ...)."""
    error = (outcome.body or {}).get("error", {})
    code = INTERNAL_ERROR if outcome.status >= 500 else INVALID_PARAMS
    return MCPError(code, f"{error.get('code')}: {error.get('message')}", data=error)
