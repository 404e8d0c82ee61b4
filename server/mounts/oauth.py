"""MCP authorization: socialpub as OAuth 2.1 authorization server (RFC 8414 metadata, RFC 7591 registration,
/authorize, /token, /revoke) and the RFC 9728 metadata of its protected resource `/mcp`.

The handlers are the MCP SDK's (`mcp.server.auth`); storage and consent are `server/console/oauth.py`.
The issuer is `SOCIALPUB_PUBLIC_URL`, which must be https unless it is a loopback address.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.auth.routes import create_auth_routes, create_protected_resource_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from pydantic import AnyHttpUrl
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.scopes import ALL_SCOPES
from server.console import oauth
from server.ratelimit import RateLimiter
from tools.runtime import Runtime

log = logging.getLogger("socialpub.oauth")
REGISTRATIONS_PER_HOUR = 20  # per client address


class Limited:
    """ASGI wrapper: 429 with Retry-After when one client address posts too often."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app, self.limiter = app, limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") == "POST":
            refused = self.limiter.refusal(f"register:{(scope.get('client') or ('',))[0]}")
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def routes(rt: Runtime, dispatcher: Any) -> list[Route]:
    issuer = AnyHttpUrl(rt.settings.public_url.rstrip("/"))
    try:
        out = create_auth_routes(
            oauth.Provider(rt), issuer_url=issuer,
            service_documentation_url=AnyHttpUrl(rt.settings.public_url.rstrip("/") + "/console/"),
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=list(ALL_SCOPES),
                                                                  default_scopes=list(ALL_SCOPES)),
            revocation_options=RevocationOptions(enabled=True))
    except ValueError as exc:  # an http issuer that is not loopback
        log.warning("MCP authorization is off: %s (set SOCIALPUB_PUBLIC_URL to an https address)", exc)
        return []
    # Registration is open to anyone (RFC 7591): bound how fast one address can add clients.
    limiter = RateLimiter(REGISTRATIONS_PER_HOUR, 3600)
    out = [Route(r.path, Limited(r.endpoint, limiter), methods=sorted(r.methods or ())) if r.path == "/register"
           else r for r in out]
    resource = AnyHttpUrl(oauth.resource_url(rt))
    prm = create_protected_resource_routes(resource, [issuer], scopes_supported=list(ALL_SCOPES),
                                           resource_name="socialpub MCP")
    # Also at the root path, for clients that look there before the RFC 9728 path-suffixed location.
    root = [Route("/.well-known/oauth-protected-resource", r.endpoint, methods=["GET", "OPTIONS"]) for r in prm]
    return [*out, *prm, *root]
