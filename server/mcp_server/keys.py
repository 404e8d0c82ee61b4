"""The API key an HTTP request authenticated with, as the SDK's `AuthenticatedUser` on `scope["user"]`."""

from __future__ import annotations

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from tools.services.auth import Caller


class KeyUser(AuthenticatedUser):
    """`client_id` is the key's ID, so SDK session ownership compares keys without comparing (or logging)
    secrets. Tool handlers read `secret` and `caller` back from `ctx.request.scope["user"]`."""

    def __init__(self, secret: str, caller: Caller) -> None:
        super().__init__(AccessToken(token=secret, client_id=caller.key_id, scopes=sorted(caller.scopes)))
        self.secret = secret
        self.caller = caller
