"""The REST API: every catalogue endpoint mounted under /v1, spec envelopes, status codes and headers."""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route, Router
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemas.errors import ApiError, issue
from server import jsonbody
from server.dispatch import Dispatcher, Outcome, new_request_id
from tools import catalogue
from tools.endpoint import Endpoint, field_locations, fields_at
from tools.services.auth import bearer_token
from tools.tool_schemas import input_schema

log = logging.getLogger("socialpub.rest")

VARIANT_PARAM = "variant"
# Request-head bounds answered in the envelope (414, 431). uvicorn's h11 parser is given a larger buffer
# (H11_MAX_HEAD_BYTES, passed by `serve` and `mcp`) so such requests reach us instead of a dropped connection.
ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_QUERY_BYTES = 8192
MAX_HEADER_BYTES = 16384
H11_MAX_HEAD_BYTES = 1_048_576
UVICORN_HEAD_OPTIONS: dict[str, Any] = {"http": "h11", "h11_max_incomplete_event_size": H11_MAX_HEAD_BYTES}
JSON_TYPES = ("application/json",)
NUMBER_RE = re.compile(r"-?\d+(\.\d+)?")


class PlainResponse(JSONResponse):
    """A success envelope whose data was dumped from a response model that holds no float (`Outcome.plain`),
    encoded by orjson (the standard library's encoder took ~10 % of a list page). For such data the bytes are
    the same as Starlette's: orjson writes only floats differently (`1e-05` vs `0.00001`), which is why every other
    body keeps Starlette's encoder (docs/decisions.md). What orjson refuses (integers beyond 64 bits) goes
    through Starlette's encoder, as before."""

    def render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(content)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            return super().render(content)


def render(outcome: Outcome, request_id: str, *, head: bool = False) -> Response:
    headers = {"X-Request-Id": request_id, **outcome.headers}
    if outcome.body is None:
        return Response(status_code=outcome.status, headers=headers)
    response = (PlainResponse if outcome.plain else JSONResponse)(outcome.body, status_code=outcome.status,
                                                                   headers=headers)
    if head:
        response.body = b""
    return response


def error_response(exc: ApiError, request_id: str) -> Response:
    return JSONResponse(exc.body(request_id), status_code=exc.status, headers={"X-Request-Id": request_id,
                                                                                **exc.headers})


def _query_types(prop: dict[str, Any]) -> set[str]:
    if "type" in prop:
        return {prop["type"]} if isinstance(prop["type"], str) else set(prop["type"])
    return {t for sub in prop.get("anyOf", []) for t in _query_types(sub)}


def query_types(ep: Endpoint) -> dict[str, set[str]]:
    """The JSON types of each query parameter, from the request model's schema (derived once per endpoint)."""
    props = input_schema(ep).get("properties", {})
    return {name: _query_types(props.get(name, {})) for name in fields_at(ep.request, "query")}


def coerce_query(types: dict[str, set[str]], query: dict[str, str]) -> dict[str, Any]:
    """Query strings -> the JSON types the request model declares. A value that does not parse stays a string,
    so validation (the same as for MCP arguments) reports it."""
    out: dict[str, Any] = {}
    for name, raw in query.items():
        kinds = types.get(name, set())
        value: Any = raw
        if "integer" in kinds and raw.lstrip("-").isdigit():
            value = int(raw)
        elif "number" in kinds and "string" not in kinds and NUMBER_RE.fullmatch(raw):
            value = float(raw)
        elif "boolean" in kinds and raw in ("true", "false"):
            value = raw == "true"
        out[name] = value
    return out


class PathHandler:
    """All endpoints sharing one path template; picks by method, then by `?variant=`."""

    def __init__(self, dispatcher: Dispatcher, endpoints: list[Endpoint]) -> None:
        self.dispatcher = dispatcher
        self.by_method: dict[str, dict[str | None, Endpoint]] = defaultdict(dict)
        # By endpoint name, derived on the endpoint's first request: deriving all ~90 at start-up (each a JSON
        # schema) was a tenth of a second of every `socialpub serve`'s start (bench/HISTORY.md "Start-up").
        self.query_types: dict[str, dict[str, set[str]]] = {}
        for ep in endpoints:
            self.by_method[ep.method][ep.variant] = ep
        self.allow = ", ".join(sorted(self.by_method))

    async def handle(self, request: Request) -> Response:
        request_id = new_request_id()
        try:
            return await self._handle(request, request_id)
        except ApiError as exc:
            return error_response(exc, request_id)
        except ClientDisconnect:
            # The client left mid-body: nobody reads an answer, and it is no error of ours.
            log.debug("client disconnected before sending the whole body [%s]", request_id)
            return Response(status_code=400)

    async def _handle(self, request: Request, request_id: str) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        variants = self.by_method.get(method)
        if not variants:
            exc = ApiError("METHOD_NOT_ALLOWED", f"{request.method} is not allowed here; use {self.allow}.",
                           headers={"Allow": self.allow})
            return error_response(exc, request_id)
        # What is wrong with the arguments is not answered here but handed to the dispatcher, which reports it at
        # its validation step (after authentication and authority), as it does for MCP arguments.
        refused: ApiError | None = None
        query, repeated = self._query(request)
        if repeated:
            refused = ApiError("INVALID_QUERY", f"Query parameter {repeated[0]} is repeated; send it once.",
                               issues=[issue(f"$.{name}", "REPEATED", "Send this parameter once.") for name in repeated])
        variant = query.pop(VARIANT_PARAM, None)
        ep = variants.get(variant)
        if ep is None:
            known = ", ".join(sorted(v for v in variants if v)) or "none"
            raise ApiError("INVALID_QUERY", f"Unknown variant {variant!r} for this route (variants: {known}).",
                           issues=[issue(f"$.{VARIANT_PARAM}", "NOT_ALLOWED", f"Use one of: {known}.")])

        args: dict[str, Any] = dict(request.path_params)
        types = self.query_types.get(ep.name)
        if types is None:
            types = self.query_types[ep.name] = query_types(ep)
        # A GET's unknown query parameters go to validation like any unknown argument; on other methods they
        # would be taken for body fields, and a path parameter's name would replace the path's value, so
        # those are refused here.
        unknown = sorted(set(query) - set(types)) if query else []
        if unknown and (ep.method != "GET" or set(unknown) & set(ep.path_params)):
            refused = refused or ApiError("INVALID_QUERY", f"Unknown query parameter {', '.join(unknown)}.", issues=[
                issue(f"$.{name}", "UNKNOWN_FIELD", "Not a query parameter of this route.") for name in unknown])
            query = {k: v for k, v in query.items() if k in types}
        args.update(coerce_query(types, query))

        # The key (and the rate limit) before the body: nothing is read from a client that may not send it.
        token = None
        header = request.headers.get("authorization")
        if not ep.public and header:
            token = bearer_token(header)
        client = request.client.host if request.client else "unknown"
        admitted = await self.dispatcher.admit(ep, token, request_id=request_id, client=client, transport="rest")
        if isinstance(admitted, Outcome):
            return render(admitted, request_id, head=request.method == "HEAD")

        body = None if request.method in ("GET", "HEAD") else await self._body(request, ep)
        if body:
            locations = field_locations(ep.request)
            misplaced = sorted(k for k in body if k != "idempotency_key" and locations.get(k, "body") != "body")
            if misplaced:
                refused = refused or ApiError("MALFORMED_REQUEST", issues=[
                    issue(f"$.{k}", "UNKNOWN_FIELD", f"{k} is a {locations[k]} parameter, not a body field.")
                    for k in misplaced])
            args.update({k: v for k, v in body.items() if k not in misplaced})

        outcome = await self.dispatcher.invoke(
            ep, args, token=token, headers=request.headers, request_id=request_id,
            idempotency_header=request.headers.get("idempotency-key"), client=client, refused=refused,
            transport="rest", caller=admitted, admitted=True,
        )
        return render(outcome, request_id, head=request.method == "HEAD")

    @staticmethod
    def _query(request: Request) -> tuple[dict[str, str], list[str]]:
        """The query parameters (the first of a repeated one) and the names that were repeated."""
        if not request.scope.get("query_string"):
            return {}, []  # most calls: no parsing, no QueryParams to build
        out: dict[str, str] = {}
        repeated: list[str] = []
        for name, value in request.query_params.multi_items():
            if name in out:
                if name not in repeated:
                    repeated.append(name)
                continue
            out[name] = value
        return out, repeated

    async def _body(self, request: Request, ep: Endpoint) -> dict[str, Any] | None:
        """The JSON object a POST, PUT, PATCH or DELETE sent (a GET or HEAD has none: never read)."""
        limit = self.dispatcher.rt.settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            if not declared.isdigit():
                raise ApiError("INVALID_HEADER", "Content-Length must be a number of bytes.")
            raise ApiError("REQUEST_TOO_LARGE", f"Request bodies are limited to {limit} bytes.")
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limit:
                raise ApiError("REQUEST_TOO_LARGE", f"Request bodies are limited to {limit} bytes.")
        if not raw.strip():
            return None
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in JSON_TYPES and not ctype.endswith("+json"):
            raise ApiError("INVALID_HEADER", "Send request bodies as JSON with `Content-Type: application/json`.")
        try:
            body = jsonbody.parse(raw)
        except jsonbody.BadJson as exc:
            raise ApiError("MALFORMED_REQUEST", str(exc)) from None
        if not isinstance(body, dict):
            raise ApiError("MALFORMED_REQUEST", "The request body must be a JSON object.",
                           issues=[issue("$", "INVALID_TYPE", "Send a JSON object.")])
        return body


async def not_found(request: Request) -> Response:
    request_id = new_request_id()
    return error_response(ApiError("NOT_FOUND", f"No route {request.method} {request.url.path}. "
                                                "See /v1/openapi.json for the routes this service has."),
                          request_id)


class CatchAll:
    """Last line of defence: anything that escapes becomes a 500 envelope, never a stack trace. With
    `head_limits` (the REST app) it answers oversized request heads first: 414 for a query string, 431 for the
    headers, in the envelope, before any routing (one layer, not two: every layer is a frame each request and
    each of its suspensions passes through)."""

    def __init__(self, app: ASGIApp, head_limits: bool = False) -> None:
        self.app = app
        self.head_limits = head_limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            refused = head_refusal(scope) if self.head_limits else None
            if refused is not None:
                await error_response(refused, new_request_id())(scope, receive, send_wrapper)
                return
            await self.app(scope, receive, send_wrapper)
        except Exception:
            request_id = new_request_id()
            log.exception("unhandled error [%s]", request_id)
            if not started:
                response = error_response(ApiError("INTERNAL_ERROR"), request_id)
                await response(scope, receive, send)


def head_refusal(scope: Scope) -> ApiError | None:
    if len(scope.get("query_string", b"")) > MAX_QUERY_BYTES:
        return ApiError("URI_TOO_LONG", f"Query strings are limited to {MAX_QUERY_BYTES} bytes.")
    if sum(len(k) + len(v) for k, v in scope.get("headers", [])) > MAX_HEADER_BYTES:
        return ApiError("HEADERS_TOO_LARGE", f"Request headers are limited to {MAX_HEADER_BYTES} bytes.")
    return None


def _enveloped_405(scope: Scope, receive: Receive, send: Send) -> Send:
    """Starlette's router answers a method a route does not list with a plain-text 405 (mounts list theirs);
    that answer is replaced by the envelope, keeping its `Allow` header."""
    replaced = False

    async def wrapped(message: Message) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start" and message["status"] == 405:
            headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
            if headers.get("content-type", "").startswith("text/plain"):
                replaced = True
                allow = headers.get("allow", "")
                exc = ApiError("METHOD_NOT_ALLOWED", f"{scope['method']} is not allowed here; use {allow}.",
                               headers={"Allow": allow} if allow else {})
                await error_response(exc, new_request_id())(scope, receive, send)
                return
        if replaced:
            return  # the plain-text body that followed
        await send(message)

    return wrapped


class _AnyMethod:
    """An ASGI endpoint (not a function), so Starlette routes every method to it: TRACE, CONNECT or a made-up
    method gets the envelope's 405 with `Allow`, never Starlette's plain-text answer."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handler(Request(scope, receive))
        await response(scope, receive, send)


def rest_routes(dispatcher: Dispatcher) -> list[Route]:
    grouped: dict[str, list[Endpoint]] = defaultdict(list)
    for ep in catalogue.endpoints():
        grouped[ep.path].append(ep)
    # Literal segments before parameters (`/media/upload-url` before `/media/{media_id}`): routes match in order,
    # and the catalogue's order is by toolset, which says nothing about paths.
    paths = sorted(grouped, key=lambda path: [(seg.startswith("{"), seg) for seg in path.split("/")])
    return [Route(path, _AnyMethod(PathHandler(dispatcher, grouped[path]).handle)) for path in paths]


def openapi_route() -> Route:
    from server.openapi import openapi_document

    async def openapi(request: Request) -> Response:
        return JSONResponse(openapi_document(), headers={"Cache-Control": "public, max-age=300"})

    async def only_get(request: Request) -> Response:
        if request.method in ("GET", "HEAD"):
            return await openapi(request)
        return error_response(ApiError("METHOD_NOT_ALLOWED", f"{request.method} is not allowed here; use GET.",
                                       headers={"Allow": "GET"}), new_request_id())

    return Route("/v1/openapi.json", _AnyMethod(only_get))


def route_path(scope: Scope) -> str:
    """The path the routes match: the request path without the app's `root_path` (ASGI; how Starlette's routes
    read it since 0.33)."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if not root_path or not path.startswith(root_path):
        return path
    if path == root_path:
        return ""
    return path[len(root_path):] if path[len(root_path)] == "/" else path


Indexed = dict[tuple[Any, ...], list[tuple[tuple[tuple[int, str], ...], Route]]]


class RouteIndex:
    """The REST routes' front door, innermost of the app's own middleware. Starlette's router tries every
    route's pattern in turn (a REST path was matched after ~60 failed patterns, ~8 % of a `GET /v1/context`),
    behind its exception middleware and the 405 rewrite above. Here the leading run of the router's routes that
    take every method and whose parameters are single path segments (the OpenAPI route and every REST route) is
    indexed by segment count and first segments, so a request tries only routes with its own literal segments,
    and a route found is called at once: it is the one the full scan would find first (every route before it is
    in the index and cannot match a path of another shape), and it answers every method and error in the
    envelope itself, so neither layer has anything to do for it. Anything else (a miss, other routes, lifespan)
    goes the full way, as before."""

    def __init__(self, app: ASGIApp, router: Router) -> None:
        self.app = app
        self.router = router
        self._indexed: tuple[int, Indexed] | None = None

    def _index(self) -> Indexed:
        routes = self.router.routes
        if self._indexed is not None and self._indexed[0] == len(routes):
            return self._indexed[1]
        index: Indexed = defaultdict(list)
        for route in routes:
            if not (isinstance(route, Route) and route.methods is None and ":" not in route.path
                    and route.path.count("/") >= 2):
                break  # the index covers only the leading run (see above)
            parts = route.path.split("/")
            if any("{" in p for p in parts[:3]):
                break
            literals = tuple((i, p) for i, p in enumerate(parts) if i >= 3 and "{" not in p)
            index[(len(parts), parts[1], parts[2])].append((literals, route))
        self._indexed = (len(routes), dict(index))
        return self._indexed[1]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            parts = route_path(scope).split("/")
            for literals, route in self._index().get((len(parts), *parts[1:3]), ()) if len(parts) >= 3 else ():
                if all(parts[i] == p for i, p in literals):
                    match, child_scope = route.matches(scope)
                    if match is Match.FULL:
                        scope.setdefault("router", self.router)
                        scope["route"] = route
                        scope.update(child_scope)
                        await route.app(scope, receive, send)
                        return
            send = _enveloped_405(scope, receive, send)
        await self.app(scope, receive, send)


def rest_app(dispatcher: Dispatcher, extra_routes: list[Any] | None = None, lifespan: Any = None) -> Starlette:
    routes = [openapi_route(), *rest_routes(dispatcher), *(extra_routes or [])]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.router.default = _default_not_found
    app.add_middleware(RouteIndex, router=app.router)
    app.add_middleware(CatchAll, head_limits=True)  # added last: outside RouteIndex
    return app


async def _default_not_found(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "http":
        response = await not_found(Request(scope, receive))
        await response(scope, receive, send)
