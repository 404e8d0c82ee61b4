"""Provider accounts: the ONE builder of `providers.base.Account` values from stored integrations, the ONE place
that stores an account's credentials (sealed, with the time the token tick next looks at them), and the ONE
mapping of provider error kinds to API error codes. Every area that calls an adapter uses them, so the same
provider failure gets the same answer on every route."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

from providers import addresses
from providers.base import Account
from schemas.settings import Settings
from schemas.time import parse_timestamp
from storage import vault
from storage.tables.integrations import Integration

# Service bookkeeping kept in provider_state (the refresh lease of tools/targets.py); adapters never see it.
SERVICE_STATE_KEYS = frozenset({"refresh_lease"})

# Provider error kind (providers.base.ERROR_KINDS) -> (API error code, next_action).
# reauth_required and rejected are facts about the account that a retry cannot change (422, reconnect);
# rate_limited is the network telling us to wait (429 with Retry-After); the rest are the provider failing.
PROVIDER_ERRORS: dict[str, tuple[str, str]] = {
    "reauth_required": ("DOMAIN_VALIDATION_FAILED", "reconnect_integration"),
    "rejected": ("DOMAIN_VALIDATION_FAILED", "reconnect_integration"),
    "rate_limited": ("RATE_LIMITED", "wait_and_retry"),
    "malformed": ("DEPENDENCY_UNAVAILABLE", "contact_operator"),
    "transient": ("DEPENDENCY_UNAVAILABLE", "wait_and_retry"),
    "unavailable": ("DEPENDENCY_UNAVAILABLE", "wait_and_retry"),
}


def account_of(integration: Integration, settings: Settings) -> Account:
    """What an adapter may know of a connected account, its credentials decrypted from the vault (the only place
    they are opened). Copies: an adapter must not be able to change what is stored by mutating what it was
    given."""
    state = {k: v for k, v in (integration.provider_state or {}).items() if k not in SERVICE_STATE_KEYS}
    return Account(integration_id=integration.id, platform=integration.platform, status=integration.status,
                   provider_account_id=integration.provider_account_id,
                   credentials=vault.open_credentials(settings, integration.credentials), state=copy.deepcopy(state))


DUE_AT_ONCE = datetime(1970, 1, 1, tzinfo=UTC)  # an unreadable expiry: looked at on the next pass


def refresh_due_at(provider: object, credentials: Mapping[str, Any] | None) -> datetime | None:
    """When the token tick should look at an account next: its credentials' expiry less its network's own
    window (`refresh_ahead` on the adapter; the reconnect-notice window when it is longer and there is no refresh
    token). None when nothing expires or the adapter declares no window (sandbox, Telegram, Discord)."""
    ahead = getattr(provider, "refresh_ahead", None)
    if not isinstance(credentials, Mapping):
        return None
    expires = credentials.get("expires_at")
    if ahead is None or not expires:
        return None
    notice = getattr(provider, "reconnect_notice_ahead", None)
    if notice is not None and not credentials.get("refresh_token"):
        ahead = max(ahead, notice)
    try:
        return parse_timestamp(str(expires)) - ahead
    except ValueError:
        return DUE_AT_ONCE


def store_credentials(integration: Integration, credentials: dict[str, Any] | None, settings: Settings,
                      providers: Mapping[str, object]) -> None:
    """Store an account's credentials sealed, and keep its `refresh_due_at` (the token tick's index) with them.
    Every place that stores credentials calls this."""
    integration.credentials = vault.seal(settings, credentials)
    provider = providers.get(integration.provider) if integration.provider != "sandbox" else None
    integration.refresh_due_at = refresh_due_at(provider, credentials)


def outbound(settings: Settings) -> AbstractContextManager[None]:
    """The context every adapter call runs in. Adapters connect only to addresses the address policy accepts
    (providers/addresses.py, checked when each connection opens); hosts named in SOCIALPUB_FETCH_ALLOW_HOSTS
    may be private, as for media imports. Outside it no private address is reachable."""
    return addresses.allowing(settings.fetch_allow_hosts)


def provider_error(kind: str) -> tuple[str, str]:
    """(API error code, next_action) for a provider error kind; an unknown kind is the provider failing."""
    return PROVIDER_ERRORS.get(kind, PROVIDER_ERRORS["unavailable"])
