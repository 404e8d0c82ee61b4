"""MCP authorization: socialpub as OAuth 2.1 authorization server (RFC 8414 metadata, RFC 7591 registration,
/authorize, /token, /revoke) and the RFC 9728 metadata of its protected resource `/mcp`.

The handlers are the MCP SDK's (`mcp.server.auth`); storage and consent are `server/console/oauth.py`.
The issuer is `SOCIALPUB_PUBLIC_URL`, which must be https unless it is a loopback address.

Where the SDK's handlers fall short of the RFCs, this module adds to them through public APIs only (issue 27):
`Guard` checks redirect URIs as sent at `/register` (RFC 7591 `invalid_redirect_uri`) and the `resource` of a
token request (RFC 8707 `invalid_target`) before the SDK's handler sees the request, and `/revoke` is served by
`revocation` (RFC 7009, public clients without a secret), built on the SDK's `ClientAuthenticator`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import (
    REGISTRATION_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    cors_middleware,
    create_auth_routes,
    create_protected_resource_routes,
)
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.scopes import ALL_SCOPES
from server.console import oauth
from server.jsonbody import replay
from server.ratelimit import RateLimiter
from tools.runtime import Runtime

log = logging.getLogger("socialpub.oauth")
REGISTRATIONS_PER_HOUR = 20  # per client address


MAX_BODY = 64 * 1024  # bytes: registration metadata and token requests are small
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def oauth_error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=NO_STORE)


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None when it exceeds `limit` bytes."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return body
        body += message.get("body", b"")
        if len(body) > limit:
            return None
        if not message.get("more_body"):
            return body


Check = Callable[[Scope, Receive, bytes], Any]  # async: a Response to answer instead, or None to go on


class Guard:
    """ASGI wrapper of one OAuth route: a POST's body is read (bounded), shown to `check`, and replayed to the
    SDK's handler unless `check` answered instead. Registration is also rate-limited per client address."""

    def __init__(self, app: ASGIApp, check: Check | None = None, limiter: RateLimiter | None = None,
                 bucket: str = "") -> None:
        self.app, self.check, self.limiter, self.bucket = app, check, limiter, bucket

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        if self.limiter is not None:
            refused = self.limiter.refusal(f"{self.bucket}:{(scope.get('client') or ('',))[0]}")
            if refused is not None:
                await refused(scope, receive, send)
                return
        body = await read_body(receive, MAX_BODY)
        if body is None:
            await oauth_error(413, "invalid_request", f"the request body is larger than {MAX_BODY} bytes")(
                scope, receive, send)
            return
        answer = await self.check(scope, replay(body, receive), body) if self.check else None
        if answer is not None:
            answer.headers["Access-Control-Allow-Origin"] = "*"  # readable by browser clients, as the SDK's
            await answer(scope, receive, send)
            return
        await self.app(scope, replay(body, receive), send)


async def check_registration(scope: Scope, receive: Receive, body: bytes) -> Response | None:
    """RFC 7591 §3.2.2 `invalid_redirect_uri` for redirect URIs as the client sent them; anything else about
    the metadata is the SDK handler's to judge."""
    try:
        metadata = json.loads(body)
    except ValueError:
        return None
    uris = metadata.get("redirect_uris") if isinstance(metadata, dict) else None
    if not isinstance(uris, list):
        return None
    if len(uris) > oauth.MAX_REDIRECT_URIS:
        return oauth_error(400, "invalid_redirect_uri", f"at most {oauth.MAX_REDIRECT_URIS} redirect URIs")
    for uri in uris:
        problem = oauth.redirect_uri_problem(uri)
        if problem:
            return oauth_error(400, "invalid_redirect_uri", problem)
    return None


def token_check(rt: Runtime, provider: oauth.Provider, authenticator: ClientAuthenticator) -> Check:
    async def check(scope: Scope, receive: Receive, body: bytes) -> Response | None:
        """RFC 8707 §2.2: a `resource` other than the one the code or refresh token was authorized for answers
        `invalid_target`, before anything is spent. Unauthenticated or unknown: the SDK's handler answers."""
        request = Request(scope, receive)
        form = await request.form(max_files=0, max_fields=50)
        requested = [r for r in form.getlist("resource") if isinstance(r, str)]
        if not requested:
            return None
        try:
            client = await authenticator.authenticate_request(request)
        except AuthenticationError:
            return None
        found = await provider.authorized_resource(client, str(form.get("grant_type") or ""),
                                                   str(form.get("code") or form.get("refresh_token") or ""))
        if found is None:
            return None
        problem = oauth.resource_problem(rt, requested, found[0])
        return oauth_error(400, "invalid_target", problem) if problem else None

    return check


def revocation(provider: oauth.Provider, authenticator: ClientAuthenticator) -> Callable[[Request], Any]:
    async def revoke(request: Request) -> Response:
        """RFC 7009 §2.1: the client authenticates as at the token endpoint (a public client sends only its
        client_id); the token's whole grant is revoked; an unknown token is no error (§2.2)."""
        try:
            client = await authenticator.authenticate_request(request)
        except AuthenticationError as exc:
            return oauth_error(401, "invalid_client", exc.message)
        token = (await request.form()).get("token")
        if not isinstance(token, str) or not token:
            return oauth_error(400, "invalid_request", "token is required")
        if await provider.revoke(client, token) == "foreign":
            return oauth_error(400, "unauthorized_client", "this token was not issued to this client")
        return Response(status_code=200, headers=NO_STORE)

    return revoke


def routes(rt: Runtime, dispatcher: Any) -> list[Route]:
    issuer = AnyHttpUrl(rt.settings.public_url.rstrip("/"))
    provider = oauth.Provider(rt)
    try:
        out = create_auth_routes(
            provider, issuer_url=issuer,
            service_documentation_url=AnyHttpUrl(rt.settings.public_url.rstrip("/") + "/console/"),
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(ALL_SCOPES),
                                                                  default_scopes=list(ALL_SCOPES)),
            revocation_options=RevocationOptions(enabled=True))
    except ValueError as exc:  # an http issuer that is not loopback
        log.warning("MCP authorization is off: %s (set SOCIALPUB_PUBLIC_URL to an https address)", exc)
        return []
    authenticator = ClientAuthenticator(provider)
    # Registration is open to anyone (RFC 7591): bound how fast one address can add clients.
    limiter = RateLimiter(REGISTRATIONS_PER_HOUR, 3600)
    guards = {REGISTRATION_PATH: lambda app: Guard(app, check_registration, limiter, "register"),
              TOKEN_PATH: lambda app: Guard(app, token_check(rt, provider, authenticator)),
              # the SDK's revocation handler is replaced (it requires a client_secret field even of a public client)
              REVOCATION_PATH: lambda _sdk: Guard(cors_middleware(revocation(provider, authenticator),
                                                                 ["POST", "OPTIONS"]))}
    out = [Route(r.path, guards[r.path](r.endpoint), methods=sorted(r.methods or ())) if r.path in guards
           else r for r in out]
    resource = AnyHttpUrl(oauth.resource_url(rt))
    prm = create_protected_resource_routes(resource, [issuer], scopes_supported=list(ALL_SCOPES),
                                           resource_name="socialpub MCP")
    # Also at the root path, for clients that look there before the RFC 9728 path-suffixed location.
    root = [Route("/.well-known/oauth-protected-resource", r.endpoint, methods=["GET", "OPTIONS"]) for r in prm]
    return [*out, *prm, *root]
