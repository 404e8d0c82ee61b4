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
- RFC 8707: tokens are bound to the `/mcp` resource; another resource indicator is refused, at `/authorize`
  and at `/token` (`resource_problem`, checked by server/mounts/oauth.py before the SDK's token handler).
- Redirect URIs must be https, or http on a loopback host (`redirect_uri_problem`).
- A code is spent at its exchange and a refresh token at its rotation; either presented again is a replay and
  revokes its grant's tokens (`OAuthSpentToken`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import time
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import validate_issuer_url
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl, AnyUrl
from sqlalchemy import delete
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.scopes import ALL_SCOPES
from storage.tables.accounts import ApiKey, User, Workspace
from storage.tables.oauth import OAuthClient, OAuthCode, OAuthGrant, OAuthSpentToken
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


MAX_REDIRECT_URIS = 20
MAX_URI_LENGTH = 2000
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
# RFC 3986 characters only: a backslash, a space or a control character is where parsers disagree.
_URI_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+")


def redirect_uri_problem(uri: Any) -> str | None:
    """Why a client may not register this redirect URI, or None. OAuth 2.1 and RFC 9700 §2.1 / §4.1: an
    absolute https URI, or http to a loopback host for native apps (RFC 8252 §7.3: 127.0.0.1, [::1], and
    localhost, which the MCP clients use); no fragment (RFC 6749 §3.1.2), no userinfo, nothing else."""
    if not isinstance(uri, str) or not uri:
        return "a redirect URI must be a non-empty string"
    if len(uri) > MAX_URI_LENGTH or not _URI_CHARS.fullmatch(uri):
        return f"{uri[:80]!r} is not a valid URI"
    if "#" in uri:
        return f"{uri[:80]!r} has a fragment; redirect URIs may not (RFC 6749 §3.1.2)"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  (raises on a port out of range)
    except ValueError:
        return f"{uri[:80]!r} is not a valid URI"
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if "@" in parts.netloc:
        return f"{uri[:80]!r} has user information; redirect URIs may not"
    if scheme not in ("https", "http") or not uri.lower().startswith(f"{scheme}://") or not host:
        return f"{uri[:80]!r} is not an https URI (or http on a loopback address)"
    if scheme == "http" and host not in LOOPBACK_HOSTS:
        return f"{uri[:80]!r} uses http off loopback; use https, or http://127.0.0.1, http://[::1] or http://localhost"
    return None


def same_resource(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def resource_problem(rt: Runtime, requested: list[str], granted: str | None) -> str | None:
    """RFC 8707 §2: every `resource` a token request names must be the one the grant was authorized for (this
    server's `/mcp`); None when all are (or none is named)."""
    for resource in requested:
        if "#" in resource or not same_resource(resource, granted or resource_url(rt)):
            return f"this grant covers only {granted or resource_url(rt)}, not {resource[:200]!r}"
    return None


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
        # server/mounts/oauth.py checks the URIs as sent; this holds for any other way in (pydantic's form)
        for uri in client_info.redirect_uris or []:
            problem = redirect_uri_problem(str(uri))
            if problem:
                raise RegistrationError("invalid_redirect_uri", problem)
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
        if row is None:
            await self._replayed(client, authorization_code)
            return None
        if row.client_id != client.client_id:
            return None
        return StoredCode(code=authorization_code, scopes=row.scopes, expires_at=row.expires_at,
                          client_id=row.client_id, code_challenge=row.code_challenge, redirect_uri=AnyUrl(row.redirect_uri),
                          redirect_uri_provided_explicitly=row.redirect_uri_provided_explicitly,
                          resource=row.resource, subject=row.user_id, user_id=row.user_id, brand_ids=row.brand_ids)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: StoredCode) -> OAuthToken:
        now = self.rt.clock.now()
        tokens = None
        async with self.rt.db.session(write=True) as session:
            # one use: a code that was already exchanged is gone (and spent, below)
            gone = await session.exec(delete(OAuthCode).where(col(OAuthCode.code_hash) == _hash(authorization_code.code)))
            if gone.rowcount == 1:
                user = await session.get(User, authorization_code.user_id)
                ws = await session.get(Workspace, user.workspace_id) if user else None
                if user is None or ws is None:
                    raise TokenError("invalid_grant", "the user no longer exists")
                name = (client.client_name or client.client_id or "client")[:150]
                key, _secret = await operator.create_key(session, now, ws, f"MCP: {name}",
                                                         tuple(authorization_code.scopes),
                                                         brand_ids=authorization_code.brand_ids, role=user.role,
                                                         user_id=user.id)
                grant = OAuthGrant(id=new_id("ogr"), client_id=client.client_id or "", user_id=user.id, key_id=key.id,
                                   access_hash="", access_expires_at=0, refresh_hash="", refresh_expires_at=0,
                                   resource=authorization_code.resource, created_at=now, updated_at=now)
                tokens = self._issue(grant, authorization_code.scopes)
                session.add(grant)
                await session.flush()
                session.add(OAuthSpentToken(token_hash=_hash(authorization_code.code), grant_id=grant.id,
                                            expires_at=grant.refresh_expires_at))
        if tokens is None:  # exchanged meanwhile (a concurrent replay): the same as a replay after
            await self._replayed(client, authorization_code.code)
            raise TokenError("invalid_grant", "authorization code already used")
        return tokens

    async def _replayed(self, client: OAuthClientInformationFull, token: str) -> None:
        """A spent code or rotated refresh token presented again by the client it was issued to: someone else
        holds a copy, so every token of its grant is revoked (RFC 6749 §4.1.2 and §10.5, RFC 9700 §4.14.2)."""
        if len(token) > 200:
            return
        async with self.rt.db.session(write=False) as session:
            spent = await session.get(OAuthSpentToken, _hash(token))
            grant = await session.get(OAuthGrant, spent.grant_id) if spent else None
        if grant is None or grant.client_id != client.client_id or grant.revoked_at is not None:
            return
        async with self.rt.db.session(write=True) as session:
            await self._revoke_grant(session, grant.id)

    async def _revoke_grant(self, session: AsyncSession, grant_id: str) -> None:
        now = self.rt.clock.now()
        grant = await session.get(OAuthGrant, grant_id)
        if grant is None:
            return
        grant.revoked_at = grant.revoked_at or now
        grant.updated_at = now
        session.add(grant)
        await operator.revoke_key(session, now, grant.key_id)

    def _issue(self, grant: OAuthGrant, scopes: list[str]) -> OAuthToken:
        access, refresh = ACCESS_PREFIX + secrets.token_urlsafe(32), REFRESH_PREFIX + secrets.token_urlsafe(32)
        grant.access_hash, grant.refresh_hash = _hash(access), _hash(refresh)
        grant.access_expires_at = int(time.time()) + ACCESS_TTL
        grant.refresh_expires_at = int(time.time()) + REFRESH_TTL
        grant.updated_at = self.rt.clock.now()
        return OAuthToken(access_token=access, expires_in=ACCESS_TTL, refresh_token=refresh, scope=" ".join(scopes))

    async def _grant_by(self, session: AsyncSession, column: Any, token: str) -> tuple[OAuthGrant, ApiKey] | None:
        row = (await session.exec(select(OAuthGrant, ApiKey).join(ApiKey, col(ApiKey.id) == OAuthGrant.key_id)
                                  .where(column == _hash(token)))).first()
        if row is None or row[0].revoked_at is not None or row[1].revoked_at is not None:
            return None
        return row[0], row[1]

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> StoredRefresh | None:
        if not refresh_token.startswith(REFRESH_PREFIX) or len(refresh_token) > 200:
            return None
        async with self.rt.db.session(write=False) as session:
            found = await self._grant_by(session, OAuthGrant.refresh_hash, refresh_token)
        if found is None:
            await self._replayed(client, refresh_token)
            return None
        if found[0].client_id != client.client_id or found[0].refresh_expires_at < time.time():
            return None
        grant, key = found
        return StoredRefresh(token=refresh_token, client_id=grant.client_id, scopes=list(key.scopes),
                             expires_at=grant.refresh_expires_at, resource=grant.resource, subject=grant.user_id,
                             grant_id=grant.id)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: StoredRefresh,
                                     scopes: list[str]) -> OAuthToken:
        tokens = None
        async with self.rt.db.session(write=True) as session:
            grant = await session.get(OAuthGrant, refresh_token.grant_id)
            key = None
            if grant is not None and grant.refresh_hash == _hash(refresh_token.token) and grant.revoked_at is None:
                key = await session.get(ApiKey, grant.key_id)  # gone: refused as a revoked grant is
            if grant is not None and key is not None:
                # Narrowing on refresh is allowed (the handler refuses widening) and sticks: the key follows.
                if scopes and set(scopes) != set(key.scopes):
                    key.scopes = [s for s in ALL_SCOPES if s in scopes]
                    key.updated_at = self.rt.clock.now()
                    session.add(key)
                session.add(OAuthSpentToken(token_hash=grant.refresh_hash, grant_id=grant.id,
                                            expires_at=grant.refresh_expires_at))
                tokens = self._issue(grant, list(key.scopes))
                session.add(grant)
        if tokens is None:  # rotated meanwhile (a concurrent replay) or revoked
            await self._replayed(client, refresh_token.token)
            raise TokenError("invalid_grant", "refresh token already used or revoked")
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

    async def authorized_resource(self, client: OAuthClientInformationFull, grant_type: str, value: str
                                  ) -> tuple[str | None] | None:
        """The resource a live code or refresh token of this client was authorized for (in a 1-tuple: it may
        be None), or None when there is no such code or token."""
        if len(value) > 200:
            return None
        async with self.rt.db.session(write=False) as session:
            if grant_type == "authorization_code":
                code = await session.get(OAuthCode, _hash(value))
                return (code.resource,) if code is not None and code.client_id == client.client_id else None
            if grant_type == "refresh_token":
                found = await self._grant_by(session, OAuthGrant.refresh_hash, value)
                return (found[0].resource,) if found and found[0].client_id == client.client_id else None
        return None

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull,
                                          params: IdentityAssertionParams) -> OAuthToken:
        """The identity assertion grant (SEP-990) is not offered: refused as the protocol's default refuses it."""
        raise TokenError("unsupported_grant_type", "The JWT bearer grant is not supported by this authorization server")

    async def revoke_token(self, token: AccessToken | StoredRefresh) -> None:
        column = OAuthGrant.refresh_hash if isinstance(token, RefreshToken) else OAuthGrant.access_hash
        async with self.rt.db.session(write=True) as session:
            grant = (await session.exec(select(OAuthGrant).where(column == _hash(token.token)))).first()
            if grant is not None:
                await self._revoke_grant(session, grant.id)

    async def revoke(self, client: OAuthClientInformationFull, token: str) -> Literal["revoked", "unknown", "foreign"]:
        """RFC 7009 §2.1 for an authenticated client: revoke the grant of an access or refresh token (its other
        tokens with it, §2.1's SHOULD). "unknown": no live token has that value (the caller answers 200);
        "foreign": the token belongs to another client (refused, nothing changed)."""
        if len(token) > 200 or not token.startswith((ACCESS_PREFIX, REFRESH_PREFIX)):
            return "unknown"
        column = OAuthGrant.refresh_hash if token.startswith(REFRESH_PREFIX) else OAuthGrant.access_hash
        async with self.rt.db.session(write=True) as session:
            grant = (await session.exec(select(OAuthGrant).where(column == _hash(token)))).first()
            if grant is None or grant.revoked_at is not None:
                return "unknown"
            if grant.client_id != client.client_id:
                return "foreign"
            await self._revoke_grant(session, grant.id)
        return "revoked"


async def resolve_access_token(rt: Runtime, token: str) -> Caller | None:
    """The Caller of a live access token for this server's `/mcp` (None: unknown, expired, revoked, or issued
    for another resource)."""
    if not token.startswith(ACCESS_PREFIX) or len(token) > 200:
        return None
    async with rt.db.session(write=False) as session:
        row = (await session.exec(
            select(OAuthGrant, ApiKey, User, Workspace)
            .join(ApiKey, col(ApiKey.id) == OAuthGrant.key_id).join(User, col(User.id) == OAuthGrant.user_id)
            .join(Workspace, col(Workspace.id) == User.workspace_id)
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
