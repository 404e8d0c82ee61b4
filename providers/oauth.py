"""OAuth 2.0 for network adapters: the authorize URL with PKCE (S256, built by authlib), the
authorization-code exchange and the refresh grant. Generic: each network passes its own endpoints, scopes and
client credentials (tools/networks/oauth.py keeps them per network, and the single-use state between the
authorize URL and the callback).

Failures become the adapters' error kinds: a refused grant (`invalid_grant`, a 400/401/403 from the token
endpoint) is `reauth_required` (the account must be reconnected); timeouts, transport errors and 5xx are
`transient`; a token response without an access token is `malformed`. Token endpoint bodies never reach a
message. Every token request goes through `providers/http.py` (`new_client`), so a per-account token endpoint
(a Mastodon instance) passes the address policy when the connection opens; authlib only builds authorize URLs.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
from authlib.common.security import generate_token

from providers.base import ProviderError
from providers.http import USER_AGENT, call, json_body, new_client
from schemas.time import iso, parse_timestamp


def new_verifier() -> str:
    """A PKCE code verifier (RFC 7636: 43-128 unreserved characters)."""
    return generate_token(64)


def _client(client_id: str, *, redirect_uri: str | None = None, scope: str | None = None) -> Any:
    """authlib's client, used only to build authorize URLs (it makes no request)."""
    from authlib.integrations.httpx_client import AsyncOAuth2Client

    return AsyncOAuth2Client(client_id=client_id, redirect_uri=redirect_uri, scope=scope,
                             code_challenge_method="S256", headers={"User-Agent": USER_AGENT},
                             token_endpoint_auth_method="none")


def authorize_url(endpoint: str, client_id: str, redirect_uri: str, scopes: tuple[str, ...], state: str,
                  code_verifier: str, **extra: str) -> str:
    client = _client(client_id, redirect_uri=redirect_uri, scope=" ".join(scopes))
    url, _ = client.create_authorization_url(endpoint, state=state, code_verifier=code_verifier, **extra)
    return url


def _checked(token: Any, network: str) -> dict[str, Any]:
    if not isinstance(token, dict) or not isinstance(token.get("access_token"), str) or not token["access_token"]:
        raise ProviderError("malformed", f"{network} token endpoint answered without an access token")
    return dict(token)


async def exchange_code(endpoint: str, client_id: str, client_secret: str | None, redirect_uri: str, code: str,
                        code_verifier: str, *, network: str, auth_method: str | None = None) -> dict[str, Any]:
    """The token of an authorization code (with the PKCE verifier its authorize URL was made with).
    `auth_method`: how a confidential client authenticates (`client_secret_post` by default; X wants
    `client_secret_basic`)."""
    return await form_exchange(network, auth_method or "client_secret_post")(
        endpoint, client_id, client_secret, redirect_uri, code, code_verifier)


async def refresh_token(endpoint: str, client_id: str, client_secret: str | None, refresh: str, *,
                        network: str, auth_method: str | None = None) -> dict[str, Any]:
    """A fresh token from a refresh token; `reauth_required` when the network refuses it for good."""
    return await _token_post(endpoint, {"grant_type": "refresh_token", "refresh_token": refresh}, client_id,
                             client_secret, network=network, refused_kind="reauth_required", auth_method=auth_method)


def refresh_due(credentials: dict[str, Any], now: datetime, ahead: timedelta, *, needs_refresh_token: bool = True
                ) -> bool:
    """Whether stored OAuth credentials should be refreshed now: they carry an expiry (and a refresh token,
    unless the network refreshes with the access token itself) and expire within `ahead`. An unreadable expiry
    counts as due: refreshing early is safe, publishing with a dead token is not."""
    expires = credentials.get("expires_at")
    if not expires or (needs_refresh_token and not credentials.get("refresh_token")):
        return False
    try:
        return parse_timestamp(str(expires)) - ahead <= now
    except ValueError:
        return True


# -- token calls on providers/http.py: one request each, classified like every other request, through the
# address policy of `new_client` (authlib's client runs on httpx2, which would bypass it and respx) -------------

async def token_request(method: str, endpoint: str, *, network: str, refused_kind: str,
                        data: dict[str, str] | None = None, params: dict[str, str] | None = None,
                        auth: httpx.Auth | None = None) -> dict[str, Any]:
    """One token endpoint call on our own HTTP client (so respx contract tests see it): the code exchange, a
    refresh or a Meta/Threads long-lived exchange. A 400/401/403 or an OAuth error body is `refused_kind`
    (rejected at connect, reauth_required on refresh); 5xx and timeouts are transient; an answer without an
    access token is malformed. Token bodies never reach a message."""
    def refused(response: httpx.Response) -> ProviderError | None:
        if response.status_code in (400, 401, 403):  # invalid_grant, invalid_client, revoked
            return ProviderError(refused_kind, f"{network} token endpoint answered {response.status_code}",
                                 safe_reason=f"{network} refused the authorisation; connect the account again.")
        return None

    async with new_client() as client:
        token = json_body(await call(client, method, endpoint, network=network, classify=refused, data=data,
                                     params=params, auth=auth, headers={"Accept": "application/json"}), network)
    if isinstance(token, dict) and token.get("error"):
        raise ProviderError(refused_kind, f"{network} token endpoint answered an error",
                            safe_reason=f"{network} refused the authorisation; connect the account again.")
    return _checked(token, network)


async def _token_post(endpoint: str, form: dict[str, str], client_id: str, client_secret: str | None, *,
                      network: str, refused_kind: str, auth_method: str | None) -> dict[str, Any]:
    """A form POST with the app's client credentials, as HTTP Basic or in the form (RFC 6749 §2.3.1)."""
    auth = None
    if client_secret and auth_method == "client_secret_basic":
        auth = httpx.BasicAuth(client_id, client_secret)
    else:
        form = {**form, "client_id": client_id, **({"client_secret": client_secret} if client_secret else {})}
    return await token_request("POST", endpoint, network=network, refused_kind=refused_kind, data=form, auth=auth)


def form_exchange(network: str, auth_method: str = "client_secret_post") -> Any:
    """An `OAuthNetwork.exchange`: the authorization-code grant (RFC 6749 §4.1.3, with the PKCE verifier)."""
    async def exchange(endpoint: str, client_id: str, client_secret: str | None, redirect_uri: str, code: str,
                       code_verifier: str) -> dict[str, Any]:
        return await _token_post(endpoint, {"grant_type": "authorization_code", "code": code,
                                            "redirect_uri": redirect_uri, "code_verifier": code_verifier},
                                 client_id, client_secret, network=network, refused_kind="rejected",
                                 auth_method=auth_method)
    return exchange


async def refreshed(credentials: dict[str, Any], now: datetime, endpoint: str, *, network: str,
                    auth_method: str | None = None) -> dict[str, Any]:
    """Stored credentials after a refresh grant (RFC 6749 §6) with the app's client credentials kept in them: the
    new access token and expiry, and the refresh token the network rotated to (the stored one is kept when it
    sends none). A refusal is reauth_required."""
    token = await _token_post(endpoint, {"grant_type": "refresh_token",
                                         "refresh_token": str(credentials.get("refresh_token") or "")},
                              str(credentials.get("client_id") or ""),
                              str(credentials.get("client_secret") or "") or None, network=network,
                              refused_kind="reauth_required", auth_method=auth_method)
    fresh = {**credentials, "access_token": token["access_token"]}
    if token.get("refresh_token"):
        fresh["refresh_token"] = token["refresh_token"]
    fresh.pop("expires_at", None)
    if token.get("expires_in"):
        fresh["expires_at"] = iso(now + timedelta(seconds=int(token["expires_in"])))
    return fresh
