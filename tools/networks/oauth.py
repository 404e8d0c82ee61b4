"""The OAuth 2.0 authorization-code flow with PKCE, generic over networks.

`start` makes a single-use state (10 minutes), a PKCE verifier (sealed) and the network's authorize URL; the
operator opens it, the network redirects to `{SOCIALPUB_PUBLIC_URL}/connect/{platform}/callback`, and
`complete` checks the state (known, same platform, unused, unexpired; it is spent before anything else
happens, so a replay fails even when the exchange did not), exchanges the code with the verifier, verifies the
account with the network and stores it (sealed).

A network is one `OAuthNetwork`: its authorization server (fixed, or the operator's per-account instance), its
authorize and token paths, scopes, how its client app is obtained (registered dynamically per server, as on
Mastodon, or configured by the operator) and how a token becomes a verified account. The networks of issue 15
add entries to NETWORKS.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from sqlmodel import select

from providers.base import ProviderError
from providers.oauth import authorize_url, exchange_code, new_verifier
from schemas.ids import new_id
from schemas.time import iso
from storage import vault
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.networks import OAuthApp, OAuthState
from tools.networks import apps
from tools.networks.connect import ConnectError, Verified, _failed, public_base, save
from tools.networks.networks import NETWORKS, OAuthNetwork
from tools.runtime import Runtime
from tools.services.accounts import outbound

STATE_TTL = timedelta(minutes=10)



def redirect_uri(rt: Runtime, platform: str) -> str:
    return f"{rt.settings.public_url.rstrip('/')}/connect/{platform}/callback"


def _state_id(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


async def app_for(rt: Runtime, network: OAuthNetwork, server: str) -> OAuthApp:
    """The client app for this network and server: stored, or registered now (once per server)."""
    async with rt.db.session(write=False) as s:
        found = (await s.exec(select(OAuthApp).where(OAuthApp.platform == network.platform,
                                                     OAuthApp.server == server))).first()
    if network.register is None:
        app = await apps.operator_app(rt, network.platform)
        if app is None:
            raise ConnectError(f"No {network.display_name} app is configured for this service: create one on "
                               f"{network.display_name}'s developer site and run `socialpub apps set --platform "
                               f"{network.platform} --client-id ID --client-secret -` (docs/networks.md).")
        return app
    if found is not None:
        return found
    uri = redirect_uri(rt, network.platform)
    try:
        with outbound(rt.settings):
            client_id, client_secret = await network.register(server, uri, network.scopes, rt.settings.public_url)
    except ProviderError as exc:
        raise _failed(network.display_name, exc) from None
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        found = (await s.exec(select(OAuthApp).where(OAuthApp.platform == network.platform,
                                                     OAuthApp.server == server))).first()
        if found is not None:  # registered concurrently: keep the first
            return found
        app = OAuthApp(id=new_id("oap"), platform=network.platform, server=server, client_id=client_id,
                       client_secret=vault.seal_text(rt.settings, client_secret), redirect_uri=uri,
                       scopes=" ".join(network.scopes), created_at=now, updated_at=now)
        s.add(app)
    return app


async def start(rt: Runtime, brand_id: str, platform: str, *, server: str | None = None,
                integration_id: str | None = None, display_name: str | None = None,
                return_to: str | None = None) -> dict[str, Any]:
    """A new authorize URL for `platform` (and its state, stored hashed). Returns {authorize_url, expires_at}.
    `return_to="console"`: the callback sends the browser back to the brand's accounts page (a connect started
    in the console) instead of answering with a page of its own (one started with the CLI)."""
    network = NETWORKS.get(platform)
    if network is None:
        raise ConnectError(f"{platform} has no OAuth connect flow.")
    async with rt.db.session(write=False) as s:
        if await s.get(Brand, brand_id) is None:
            raise ConnectError(f"no brand {brand_id}")
    base = network.server or await public_base(rt, server or "", f"The {network.display_name} server URL")
    app = await app_for(rt, network, base)
    state, verifier = secrets.token_urlsafe(32), new_verifier()
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        s.add(OAuthState(id=_state_id(state), platform=platform, brand_id=brand_id, app_id=app.id,
                         code_verifier=vault.seal_text(rt.settings, verifier),
                         options={"server": base, "integration_id": integration_id, "display_name": display_name,
                                  "return_to": return_to},
                         expires_at=now + STATE_TTL, created_at=now, updated_at=now))
    extra = dict(network.authorize_params)
    if network.client_id_param != "client_id":
        extra[network.client_id_param] = app.client_id
    url = authorize_url(network.url(base, network.authorize_path), app.client_id, app.redirect_uri, network.scopes,
                        state, verifier if network.pkce else None, scope_separator=network.scope_separator,
                        **extra)
    return {"authorize_url": url, "expires_at": iso(now + STATE_TTL), "redirect_uri": app.redirect_uri}


async def started_from(rt: Runtime, platform: str, state: str | None) -> tuple[str, str | None] | None:
    """(brand ID, return_to) of the connect a callback's state names, read without spending it; None when the
    state names none of `platform`'s (then `complete` refuses it)."""
    if not state or len(state) > 200:
        return None
    async with rt.db.session(write=False) as s:
        row = await s.get(OAuthState, _state_id(state))
    if row is None or row.platform != platform:
        return None
    return row.brand_id, (row.options or {}).get("return_to")


async def complete(rt: Runtime, platform: str, state: str | None, code: str | None,
                   error: str | None = None) -> Integration:
    """Finish a connect from the callback's query. Raises ConnectError (safe to show) on any refusal."""
    network = NETWORKS.get(platform)
    if network is None:
        raise ConnectError("This network has no OAuth connect flow.")
    if not state or len(state) > 200:
        raise ConnectError("The callback carries no valid state; start the connect again.")
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:  # spend the state first: single use, whatever happens next
        row = await s.get(OAuthState, _state_id(state), with_for_update=True)
        if row is None or row.platform != platform:
            raise ConnectError("The state does not match any connect in progress; start the connect again.")
        if row.used_at is not None:
            raise ConnectError("This connect link was already used; start the connect again.")
        if row.expires_at <= now:
            raise ConnectError("This connect link expired (10 minutes); start the connect again.")
        row.used_at, row.updated_at = now, now
        s.add(row)
        app = await s.get(OAuthApp, row.app_id)
        verifier = vault.open_text(rt.settings, row.code_verifier)
        options, brand_id = dict(row.options or {}), row.brand_id
    if error or not code or len(code) > 2000:
        raise ConnectError(f"{network.display_name} did not authorise the connect"
                           f"{' (' + error[:60] + ')' if error and error.isprintable() else ''}; nothing was saved.")
    assert app is not None
    server = str(options.get("server") or network.server)
    secret = vault.open_text(rt.settings, app.client_secret) if app.client_secret else None
    try:
        with outbound(rt.settings):
            if network.exchange is not None:
                token = await network.exchange(network.url(server, network.token_path), app.client_id, secret,
                                               app.redirect_uri, code, verifier)
            else:
                token = await exchange_code(network.url(server, network.token_path), app.client_id, secret,
                                            app.redirect_uri, code, verifier, network=network.display_name,
                                            auth_method=network.token_auth)
            connection = await network.verify_token(server, token["access_token"])
    except ProviderError as exc:
        raise _failed(network.display_name, exc) from None
    credentials = {**connection.credentials, "access_token": token["access_token"]}
    if token.get("refresh_token") or network.register is None:
        if token.get("refresh_token"):
            credentials["refresh_token"] = token["refresh_token"]
        credentials["client_id"] = app.client_id
        if secret:
            credentials["client_secret"] = secret
    if token.get("expires_in"):
        credentials["expires_at"] = iso(now + timedelta(seconds=int(token["expires_in"])))
    if isinstance(token.get("scope"), str | list) and token["scope"]:
        # what the user granted, for `integrations check` on networks without token introspection
        scope = token["scope"] if isinstance(token["scope"], str) else " ".join(map(str, token["scope"]))
        credentials["scope"] = scope[:2000]
    connection.credentials = credentials
    verified = Verified(network.provider, connection)
    async with rt.db.session(write=True) as s:
        integration = await save(s, rt, brand_id, platform, verified, integration_id=options.get("integration_id"),
                                 display_name=options.get("display_name"))
        row = await s.get(OAuthState, _state_id(state))
        if row is not None:
            row.integration_id = integration.id
            s.add(row)
    return integration
