"""MCP over streamable HTTP (`/mcp`) and SSE (`/sse` + `/messages/`), with per-request API-key auth and DNS
rebinding protection.

`KeyAuth` wraps each transport endpoint: it checks Host/Origin first, then the `Authorization: Bearer` key
(or the single-user default key when the request sends none), and answers 401 with the spec's error envelope
before any MCP message is read. An accepted request carries the key as `scope["user"]` (`KeyUser`, the SDK's
`AuthenticatedUser`), which gives two things for free: the SDK binds each session to the key that opened it
(another key gets 404 for that session ID), and tool handlers find the key on `ctx.request`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
from collections.abc import AsyncIterator, Sequence

from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.errors import ApiError
from server import jsonbody
from server.dispatch import new_request_id
from server.mcp_server.app import McpApp
from server.mcp_server.keys import KeyUser
from tools.services.auth import bearer_token

log = logging.getLogger("socialpub.mcp.http")

MCP_PATH = "/mcp"
SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def security_settings(allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """DNS rebinding protection: loopback names always, plus the deployment's own host names.

    `example.com` allows `Host: example.com` on any port and the `http(s)://example.com` origins; a name with a
    port (`example.com:8443`) allows exactly that.
    """
    hosts: list[str] = []
    origins: list[str] = []
    for name in LOOPBACK_NAMES:
        hosts += [name, f"{name}:*"]
        origins += [f"http://{name}", f"http://{name}:*", f"https://{name}", f"https://{name}:*"]
    for raw in allowed_hosts:
        name = raw.strip().lower()
        if not name:
            continue
        has_port = name.rsplit(":", 1)[-1].isdigit() and not name.endswith("]")
        hosts += [name] if has_port else [name, f"{name}:*"]
        origins += [f"http://{name}", f"https://{name}"] + ([] if has_port else [f"http://{name}:*",
                                                                               f"https://{name}:*"])
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=list(dict.fromkeys(hosts)),
                                     allowed_origins=list(dict.fromkeys(origins)))


def unauthorized(exc: ApiError, request_id: str, resource_metadata: str | None = None) -> Response:
    headers = {"X-Request-Id": request_id, **exc.headers}
    if exc.status == 401:
        # RFC 9728 §5.1: where an MCP client discovers how to get a token (when authorization is served)
        headers["WWW-Authenticate"] = 'Bearer realm="socialpub"' + (
            f', resource_metadata="{resource_metadata}"' if resource_metadata else "")
    return JSONResponse(exc.body(request_id), status_code=exc.status, headers=headers)


class KeyAuth:
    """ASGI wrapper: Host/Origin check, then API key; the wrapped transport only sees accepted requests."""

    def __init__(self, app: ASGIApp, mcp: McpApp, security: TransportSecuritySettings,
                 default_key: str | None = None, resource_metadata: str | None = None) -> None:
        self.app = app
        self.resource_metadata = resource_metadata
        self.mcp = mcp
        self.security = TransportSecurityMiddleware(security)
        self.default_key = default_key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        # Host/Origin before anything else: a rebinding page learns nothing, not even whether a key is needed.
        refused = await self.security.validate_request(request, is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        request_id = new_request_id()
        header = request.headers.get("authorization")
        try:
            # The single-user default key serves requests that send no header; a header is always checked.
            token = self.default_key if header is None and self.default_key else bearer_token(header)
            caller = await self.mcp.authenticate(token)
        except ApiError as exc:
            await unauthorized(exc, request_id, self.resource_metadata)(scope, receive, send)
            return
        scope["user"] = KeyUser(token, caller)
        scope["auth"] = AuthCredentials(sorted(caller.scopes))
        if request.method == "POST":
            replay = await self._checked_body(request, scope, send)
            if replay is None:
                return
            receive = replay
        await self.app(scope, receive, send)

    async def _checked_body(self, request: Request, scope: Scope, send: Send) -> Receive | None:
        """The same strict JSON as REST (server/jsonbody.py: bounded size and depth, no repeated keys) before
        the SDK parses the message; returns a receive that replays the body, or None once it has answered."""
        limit = self.mcp.rt.settings.max_body_bytes
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > limit:
                await _parse_error(f"The message is larger than {limit} bytes.", 413)(scope, request.receive, send)
                return None
        if raw.strip():
            try:
                jsonbody.parse(raw)
            except jsonbody.BadJson as exc:
                await _parse_error(str(exc))(scope, request.receive, send)
                return None
        return jsonbody.replay(raw, request.receive)


def _parse_error(message: str, status: int = 400) -> Response:
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {message}"}},
                        status_code=status)


class McpHttp:
    """The HTTP transports of one `McpApp`: routes to mount, and `run()` to enter while the app serves."""

    def __init__(self, mcp: McpApp, *, allowed_hosts: Sequence[str] = (), default_key: str | None = None,
                 streamable: bool = True, sse: bool = True, resource_metadata: str | None = None) -> None:
        self.mcp = mcp
        self.resource_metadata = resource_metadata
        self.security = security_settings(allowed_hosts)
        self.default_key = default_key
        self.session_manager = (StreamableHTTPSessionManager(app=mcp.server, security_settings=self.security)
                                if streamable else None)
        self.sse = SseServerTransport(MESSAGES_PATH, security_settings=self.security) if sse else None

    def _guard(self, app: ASGIApp) -> KeyAuth:
        return KeyAuth(app, self.mcp, self.security, self.default_key, self.resource_metadata)

    async def _sse_stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.sse is not None
        server = self.mcp.server
        try:
            async with self.sse.connect_sse(scope, receive, send) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        except ValueError:
            return  # refused by the transport's own request checks; it has already answered

    def routes(self) -> list[BaseRoute]:
        out: list[BaseRoute] = []
        if self.session_manager is not None:
            out.append(Route(MCP_PATH, endpoint=self._guard(self.session_manager.handle_request)))
        if self.sse is not None:
            out.append(Route(SSE_PATH, endpoint=self._guard(self._sse_stream), methods=["GET"]))
            out.append(Mount(MESSAGES_PATH, app=self._guard(self.sse.handle_post_message)))
        return out

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        if self.session_manager is None:
            yield
            return
        async with self.session_manager.run():
            yield

