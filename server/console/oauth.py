"""socialpub as OAuth 2.1 authorization server for its own MCP endpoint (`/mcp`).

The MCP SDK's auth handlers (`mcp.server.auth`: RFC 8414 metadata, RFC 7591 registration, authorization code
with PKCE S256, refresh, revocation) speak the protocol; this module is their storage and policy
(`OAuthAuthorizationServerProvider`):

- `authorize` sends the browser to the console's consent page with the request signed (`tools.signing`),
  where the signed-in user picks scopes (at most their own) and brands; `grant_code` then issues the code.
- At the token step the grant gets an API key row (never shown) with exactly those scopes and brands, so a
  token is resolved into the same `Caller` as an API key (`resolve_access_token`). Revoking the grant (the
  revocation endpoint, or the key in the console) ends every token of it.
- Access tokens live `ACCESS_TTL`, refresh tokens `REFRESH_TTL`; a refresh rotates both.
- RFC 8707: tokens are bound to the `/mcp` resource; another resource indicator is refused.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import validate_issuer_url
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from sqlalchemy import delete
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from storage.tables.accounts import ApiKey, User, Workspace
from storage.tables.oauth import OAuthClient, OAuthCode, OAuthGrant
from tools.operator import actions as operator
from tools.runtime import Runtime
from tools.services import signing
from tools.services.auth import OAUTH_ACCESS_PREFIX, Caller

ACCESS_PREFIX = OAUTH_ACCESS_PREFIX
REFRESH_PREFIX = "socialpub_ort_"
CODE_TTL = 300
ACCESS_TTL = 3600
REFRESH_TTL = 30 * 86400
REQUEST_TTL = 900  # how long a consent page stays valid
MCP_PATH = "/mcp"


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def resource_url(rt: Runtime) -> str:
    return rt.settings.public_url.rstrip("/") + MCP_PATH


def resource_metadata_url(rt: Runtime) -> str:
    return rt.settings.public_url.rstrip("/") + "/.well-known/oauth-protected-resource" + MCP_PATH


def enabled(rt: Runtime) -> bool:
    """Authorization is served when the issuer (the public URL) is https or loopback, as OAuth 2.1 requires."""
    try:
        validate_issuer_url(AnyHttpUrl(rt.settings.public_url.rstrip("/")))
    except ValueError:
        return False
    return True


def client_secret(rt: Runtime, client_id: str) -> str:
    """Derived, never stored: the HMAC of the client ID under the server's signing key."""
    return signing.sign(rt.settings, "oauth-client-secret", client_id)


# -- the consent request, carried signed through the browser ---------------------------------------------

def sign_request(rt: Runtime, client_id: str, params: AuthorizationParams) -> str:
    body = _b64(json.dumps({"c": client_id, "p": params.model_dump(mode="json"), "e": int(time.time()) + REQUEST_TTL},
                           separators=(",", ":")).encode())
    return f"{body}.{signing.sign(rt.settings, 'oauth-consent', body)}"


def open_request(rt: Runtime, token: str) -> tuple[str, AuthorizationParams] | None:
    body, _, sig = token.partition(".")
    if not body or not sig or len(token) > 8000 or not signing.verify(rt.settings, sig, "oauth-consent", body):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        if data["e"] < time.time():
            return None
        return data["c"], AuthorizationParams.model_validate(data["p"])
    except (ValueError, KeyError, TypeError):
        return None


def denied_redirect(params: AuthorizationParams) -> str:
    return construct_redirect_uri(str(params.redirect_uri), error="access_denied",
                                  error_description="The user declined.", state=params.state)


async def grant_code(rt: Runtime, session: AsyncSession, client_id: str, params: AuthorizationParams, user: User,
                     scopes: list[str], brand_ids: list[str] | None) -> str:
    """The user consented: store a code for exactly what they granted; returns the client's redirect URL."""
    code = secrets.token_urlsafe(32)
    session.add(OAuthCode(code_hash=_hash(code), client_id=client_id, user_id=user.id, scopes=scopes,
                          brand_ids=brand_ids, code_challenge=params.code_challenge,
                          redirect_uri=str(params.redirect_uri),
                          redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                          resource=params.resource or resource_url(rt), expires_at=int(time.time()) + CODE_TTL,
                          created_at=rt.clock.now(), updated_at=rt.clock.now()))
    await session.flush()
    return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)


class StoredCode(AuthorizationCode):
    user_id: str
    brand_ids: list[str] | None = None


class StoredRefresh(RefreshToken):
    grant_id: str


class Provider:
    """`OAuthAuthorizationServerProvider` over the oauth_* tables."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if len(client_id) > 64:
            return None
        async with self.rt.db.session(write=False) as session:
            row = await session.get(OAuthClient, client_id)
        if row is None:
            return None
        info = dict(row.metadata_json)
        if info.get("token_endpoint_auth_method") != "none":
            info["client_secret"] = client_secret(self.rt, client_id)
        return OAuthClientInformationFull.model_validate(info)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.client_id is None:
            raise RegistrationError("invalid_client_metadata", "no client_id")
        if client_info.client_secret is not None:
            client_info.client_secret = client_secret(self.rt, client_info.client_id)  # what the response shows
        stored = client_info.model_dump(mode="json", exclude={"client_secret"}, exclude_none=True)
        if len(json.dumps(stored)) > 16_000:
            raise RegistrationError("invalid_client_metadata", "client metadata is too large")
        now = self.rt.clock.now()
        async with self.rt.db.session(write=True) as session:
            session.add(OAuthClient(client_id=client_info.client_id, metadata_json=stored, created_at=now,
                                    updated_at=now))

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and params.resource.rstrip("/") != resource_url(self.rt):
            raise AuthorizeError("invalid_target", f"this server issues tokens only for {resource_url(self.rt)}")
        unknown = [s for s in params.scopes or [] if s not in ALL_SCOPES]
        if unknown:
            raise AuthorizeError("invalid_scope", f"unknown scopes: {', '.join(unknown)}")
        public = self.rt.settings.public_url.rstrip("/")
        return f"{public}/console/oauth/consent?request={sign_request(self.rt, client.client_id or '', params)}"

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str
                                      ) -> StoredCode | None:
        async with self.rt.db.session(write=False) as session:
            row = await session.get(OAuthCode, _hash(authorization_code))
        if row is None or row.client_id != client.client_id:
            return None
        return StoredCode(code=authorization_code, scopes=row.scopes, expires_at=row.expires_at,
                          client_id=row.client_id, code_challenge=row.code_challenge, redirect_uri=row.redirect_uri,
                          redirect_uri_provided_explicitly=row.redirect_uri_provided_explicitly,
                          resource=row.resource, subject=row.user_id, user_id=row.user_id, brand_ids=row.brand_ids)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: StoredCode) -> OAuthToken:
        now = self.rt.clock.now()
        async with self.rt.db.session(write=True) as session:
            # one use: a code that was already exchanged is gone
            gone = await session.exec(delete(OAuthCode).where(OAuthCode.code_hash == _hash(authorization_code.code)))
            if gone.rowcount != 1:
                raise TokenError("invalid_grant", "authorization code already used")
            user = await session.get(User, authorization_code.user_id)
            ws = await session.get(Workspace, user.workspace_id) if user else None
            if user is None or ws is None:
                raise TokenError("invalid_grant", "the user no longer exists")
            name = (client.client_name or client.client_id or "client")[:150]
            key, _secret = await operator.create_key(session, now, ws, f"MCP: {name}", tuple(authorization_code.scopes),
                                                     brand_ids=authorization_code.brand_ids, role=user.role,
                                                     user_id=user.id)
            grant = OAuthGrant(id=new_id("ogr"), client_id=client.client_id or "", user_id=user.id, key_id=key.id,
                               access_hash="", access_expires_at=0, refresh_hash="", refresh_expires_at=0,
                               resource=authorization_code.resource, created_at=now, updated_at=now)
            tokens = self._issue(grant, authorization_code.scopes)
            session.add(grant)
        return tokens

    def _issue(self, grant: OAuthGrant, scopes: list[str]) -> OAuthToken:
        access, refresh = ACCESS_PREFIX + secrets.token_urlsafe(32), REFRESH_PREFIX + secrets.token_urlsafe(32)
        grant.access_hash, grant.refresh_hash = _hash(access), _hash(refresh)
        grant.access_expires_at = int(time.time()) + ACCESS_TTL
        grant.refresh_expires_at = int(time.time()) + REFRESH_TTL
        grant.updated_at = self.rt.clock.now()
        return OAuthToken(access_token=access, expires_in=ACCESS_TTL, refresh_token=refresh, scope=" ".join(scopes))

    async def _grant_by(self, session: AsyncSession, column: Any, token: str) -> tuple[OAuthGrant, ApiKey] | None:
        row = (await session.exec(select(OAuthGrant, ApiKey).join(ApiKey, ApiKey.id == OAuthGrant.key_id)
                                  .where(column == _hash(token)))).first()
        if row is None or row[0].revoked_at is not None or row[1].revoked_at is not None:
            return None
        return row[0], row[1]

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> StoredRefresh | None:
        if not refresh_token.startswith(REFRESH_PREFIX) or len(refresh_token) > 200:
            return None
        async with self.rt.db.session(write=False) as session:
            found = await self._grant_by(session, OAuthGrant.refresh_hash, refresh_token)
        if found is None or found[0].client_id != client.client_id or found[0].refresh_expires_at < time.time():
            return None
        grant, key = found
        return StoredRefresh(token=refresh_token, client_id=grant.client_id, scopes=list(key.scopes),
                             expires_at=grant.refresh_expires_at, resource=grant.resource, subject=grant.user_id,
                             grant_id=grant.id)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: StoredRefresh,
                                     scopes: list[str]) -> OAuthToken:
        async with self.rt.db.session(write=True) as session:
            grant = await session.get(OAuthGrant, refresh_token.grant_id)
            if grant is None or grant.refresh_hash != _hash(refresh_token.token) or grant.revoked_at is not None:
                raise TokenError("invalid_grant", "refresh token already used or revoked")
            # Narrowing on refresh is allowed (the handler refuses widening) and sticks: the key follows.
            key = await session.get(ApiKey, grant.key_id)
            if scopes and set(scopes) != set(key.scopes):
                key.scopes = [s for s in ALL_SCOPES if s in scopes]
                key.updated_at = self.rt.clock.now()
                session.add(key)
            tokens = self._issue(grant, list(key.scopes))
            session.add(grant)
        return tokens

    async def load_access_token(self, token: str) -> AccessToken | None:
        if not token.startswith(ACCESS_PREFIX) or len(token) > 200:
            return None
        async with self.rt.db.session(write=False) as session:
            found = await self._grant_by(session, OAuthGrant.access_hash, token)
        if found is None or found[0].access_expires_at < time.time():
            return None
        grant, key = found
        return AccessToken(token=token, client_id=grant.client_id, scopes=list(key.scopes),
                           expires_at=grant.access_expires_at, resource=grant.resource, subject=grant.user_id)

    async def revoke_token(self, token: AccessToken | StoredRefresh) -> None:
        column = OAuthGrant.refresh_hash if isinstance(token, RefreshToken) else OAuthGrant.access_hash
        now = self.rt.clock.now()
        async with self.rt.db.session(write=True) as session:
            grant = (await session.exec(select(OAuthGrant).where(column == _hash(token.token)))).first()
            if grant is None:
                return
            grant.revoked_at = grant.revoked_at or now
            session.add(grant)
            await operator.revoke_key(session, now, grant.key_id)


async def resolve_access_token(rt: Runtime, token: str) -> Caller | None:
    """The Caller of a live access token for this server's `/mcp` (None: unknown, expired, revoked, or issued
    for another resource)."""
    if not token.startswith(ACCESS_PREFIX) or len(token) > 200:
        return None
    async with rt.db.session(write=False) as session:
        row = (await session.exec(
            select(OAuthGrant, ApiKey, User, Workspace)
            .join(ApiKey, ApiKey.id == OAuthGrant.key_id).join(User, User.id == OAuthGrant.user_id)
            .join(Workspace, Workspace.id == User.workspace_id)
            .where(OAuthGrant.access_hash == _hash(token)))).first()
    if row is None:
        return None
    grant, key, user, ws = row
    if (grant.revoked_at is not None or key.revoked_at is not None or grant.access_expires_at < time.time()
            or (grant.resource and grant.resource.rstrip("/") != resource_url(rt))):
        return None
    return Caller(key_id=key.id, key_name=key.name, workspace_id=ws.id, workspace_name=ws.name, user_id=user.id,
                  role=user.role, scopes=frozenset(key.scopes),
                  brand_ids=frozenset(key.brand_ids) if key.brand_ids is not None else None,
                  last_used_at=key.last_used_at)
