"""Connect, disconnect and reconnect real network accounts (operator side).

Every connect verifies with the network before anything is stored (a session, a token, a webhook must answer);
a failure is a ConnectError with a sentence the operator can act on, and nothing is saved. Credentials are
sealed by the vault on the way in; no message here ever contains one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from providers import bluesky, discord, mastodon, telegram
from providers.addresses import CATEGORY_TEXT, AddressRefused
from providers.base import Connection, ProviderError
from storage import vault
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from tools.notifications import notify
from tools.operator import actions as operator
from tools.runtime import Runtime
from tools.services import metrics
from tools.services.accounts import outbound, store_credentials
from tools.services.fetch import FetchError, FetchPolicy, check_url

BLUESKY_SERVICE = bluesky.DEFAULT_SERVICE


class ConnectError(Exception):
    """A connect that did not happen; the message is safe to print (never a credential)."""


@dataclass(frozen=True)
class Verified:
    provider: str
    connection: Connection


def _failed(network: str, exc: ProviderError) -> ConnectError:
    if isinstance(exc, AddressRefused):
        return ConnectError(f"{network} was not contacted: its address resolves to "
                            f"{CATEGORY_TEXT[exc.category]}, which the address policy refuses (allow a private "
                            "server with SOCIALPUB_FETCH_ALLOW_HOSTS). Nothing was saved.")
    if exc.kind == "reauth_required":
        why = "it refused the credentials (wrong or revoked)"
    elif exc.kind in ("transient", "unavailable", "rate_limited"):
        why = "it could not be reached or asked us to slow down; try again later"
    elif exc.kind == "malformed":
        why = "it answered something unexpected (is the address right?)"
    else:
        why = (exc.safe_reason or "it refused the request").rstrip(".")
    return ConnectError(f"{network} did not verify the account: {why}. Nothing was saved.")


async def public_base(rt: Runtime, url: str, what: str) -> str:
    """A network base URL the operator gave: http(s), no credentials, not a private address (unless allowed
    by SOCIALPUB_FETCH_ALLOW_HOSTS). Returns it without a trailing slash, path or query."""
    try:
        target = await check_url(url, FetchPolicy.from_settings(rt.settings, max_bytes=1))
    except FetchError as exc:
        raise ConnectError(f"{what} is refused: {exc}") from None
    return f"{target.url.scheme}://{target.url.netloc.decode()}".rstrip("/")


async def verify(rt: Runtime, platform: str, options: dict[str, Any]) -> Verified:
    """Ask the network whether these credentials work; the Connection to store when they do. The calls run
    under the address policy (`outbound`): the base URL checked by `public_base` is checked again, and pinned,
    when each connection opens."""
    try:
        with outbound(rt.settings):
            return await _verify(rt, platform, options)
    except ProviderError as exc:
        raise _failed(_name(platform), exc) from None


async def _verify(rt: Runtime, platform: str, options: dict[str, Any]) -> Verified:
    if platform == "mastodon":
        instance = await public_base(rt, str(options["instance"]), "The instance URL")
        return Verified("mastodon", await mastodon.verify(instance, str(options["access_token"])))
    if platform == "telegram":
        return Verified("telegram", await telegram.verify(rt.settings.telegram_api_url,
                                                          str(options["bot_token"]), str(options["chat_id"])))
    if platform == "discord":
        try:
            url = discord.parse_webhook_url(str(options["webhook_url"]), rt.settings.fetch_allow_hosts)
        except ValueError as exc:
            raise ConnectError(f"The Discord webhook URL is refused: {exc}.") from None
        return Verified("discord", await discord.verify(str(url)))
    if platform == "bluesky":
        service = await public_base(rt, str(options.get("service") or BLUESKY_SERVICE), "The Bluesky service URL")
        return Verified("bluesky", await bluesky.connect(service, str(options["handle"]),
                                                         str(options["app_password"])))
    raise ConnectError(f"{platform} accounts are connected with OAuth or are not supported yet.")


def _name(platform: str) -> str:
    return {"mastodon": "Mastodon", "telegram": "Telegram", "discord": "Discord", "bluesky": "Bluesky"}.get(
        platform, platform)


async def connect(rt: Runtime, brand_id: str, platform: str, options: dict[str, Any], *,
                  display_name: str | None = None) -> Integration:
    """Verify, then store a new account of `brand_id`."""
    async with rt.db.session(write=False) as s:
        if await s.get(Brand, brand_id) is None:
            raise ConnectError(f"no brand {brand_id}")
    verified = await verify(rt, platform, options)  # outside any transaction: a network call
    async with rt.db.session(write=True) as s:
        return await save(s, rt, brand_id, platform, verified, display_name=display_name)


async def save(s: AsyncSession, rt: Runtime, brand_id: str, platform: str, verified: Verified, *,
               display_name: str | None = None, integration_id: str | None = None) -> Integration:
    """Store a verified account: a new integration, or (`integration_id`) the same account reconnected."""
    now = rt.clock.now()
    if integration_id is None:
        brand = await s.get(Brand, brand_id)
        if brand is None:
            raise ConnectError(f"no brand {brand_id}")
        integration = await operator.connect_integration(s, now, brand, platform, display_name=display_name,
                                                         provider=verified.provider, connection=verified.connection,
                                                         settings=rt.settings)
        store_credentials(integration, verified.connection.credentials, rt.settings, rt.providers)
        s.add(integration)
        return integration
    integration = await s.get(Integration, integration_id)
    if integration is None:
        raise ConnectError(f"no integration {integration_id}")
    conn = verified.connection
    chosen = next((c for c in conn.state.get("candidates") or [] if isinstance(c, dict)
                   and c.get("id") == integration.provider_account_id), None)
    if chosen is not None and conn.provider_account_id != integration.provider_account_id:
        # Reconnecting an account pointed at another candidate (select-account): it keeps publishing as that one.
        conn.provider_account_id, conn.username = str(chosen["id"]), str(chosen.get("username") or "") or None
        conn.state = {**conn.state, "username": conn.username or ""}
    if integration.provider_account_id and integration.provider_account_id != conn.provider_account_id \
            and integration.provider != "sandbox":
        raise ConnectError("These credentials belong to a different account than the one being reconnected; "
                           "connect it as a new account instead. Nothing was saved.")
    old = vault.open_credentials(rt.settings, integration.credentials) or {}
    fresh = dict(conn.credentials)
    if old.get("refresh_token") and not fresh.get("refresh_token"):
        fresh["refresh_token"] = old["refresh_token"]  # never wipe a stored refresh token on reconnect
    previous = integration.status
    integration.provider, integration.provider_account_id = verified.provider, conn.provider_account_id[:200]
    store_credentials(integration, fresh, rt.settings, rt.providers)
    integration.provider_state = {**(integration.provider_state or {}), **conn.state}
    integration.username = (conn.username or integration.username or "")[:200] or None
    integration.status, integration.updated_at = "connected", now
    s.add(integration)
    await s.flush()
    await notify.integration_status_changed(s, now, integration, previous)
    await metrics.resume_after_reconnect(s, now, integration.id)  # whatever it now grants, ask again
    return integration


async def disconnect(rt: Runtime, integration_id: str) -> Integration:
    """Forget an account's credentials (operator.disconnect_integration, the one disconnect)."""
    async with rt.db.session(write=True) as s:
        try:
            return await operator.disconnect_integration(s, rt.clock.now(), integration_id)
        except operator.OperatorError as exc:
            raise ConnectError(str(exc)) from None


async def reconnect(rt: Runtime, integration_id: str, options: dict[str, Any]) -> Integration:
    """Verify new credentials for an existing account and store them on it (status back to connected)."""
    async with rt.db.session(write=False) as s:
        integration = await s.get(Integration, integration_id)
        if integration is None:
            raise ConnectError(f"no integration {integration_id}")
        platform, provider, brand_id = integration.platform, integration.provider, integration.brand_id
        state = dict(integration.provider_state or {})
    if provider == "sandbox":
        async with rt.db.session(write=True) as s:
            return await operator.set_integration_status(s, rt.clock.now(), integration_id, "connected")
    if platform == "mastodon" and "instance" not in options and state.get("instance"):
        options = {**options, "instance": state["instance"]}
    verified = await verify(rt, platform, options)
    async with rt.db.session(write=True) as s:
        return await save(s, rt, brand_id, platform, verified, integration_id=integration_id)


async def select_account(rt: Runtime, integration_id: str, account_id: str) -> Integration:
    """Point an account connected through a user authorisation (Instagram: the professional accounts of the
    user's Pages; Facebook: the user's Pages, whose tokens the connect stored; LinkedIn: the member and the
    organizations they administer) at another of the accounts that authorisation reaches
    (`provider_state.candidates`)."""
    async with rt.db.session(write=True) as s:
        integration = await s.get(Integration, integration_id)
        if integration is None:
            raise ConnectError(f"no integration {integration_id}")
        candidates = (integration.provider_state or {}).get("candidates") or []
        chosen = next((c for c in candidates if isinstance(c, dict) and c.get("id") == account_id), None)
        if chosen is None:
            ids = ", ".join(str(c.get("id")) for c in candidates if isinstance(c, dict)) or "none"
            raise ConnectError(f"{account_id[:60]} is not one of the accounts this authorisation reaches ({ids}).")
        integration.provider_account_id = str(chosen["id"])[:200]
        integration.username = (str(chosen.get("username") or "") or integration.username or "")[:200] or None
        integration.provider_state = {**(integration.provider_state or {}), "username": integration.username or ""}
        integration.updated_at = rt.clock.now()
        s.add(integration)
        return integration
