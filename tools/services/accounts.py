"""Provider accounts: the ONE builder of `providers.base.Account` values from stored integrations, and the ONE
mapping of provider error kinds to API error codes. Every area that calls an adapter uses both, so the same
provider failure gets the same answer on every route."""

from __future__ import annotations

import copy
from contextlib import AbstractContextManager

from providers import addresses
from providers.base import Account
from schemas.settings import Settings
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


def outbound(settings: Settings) -> AbstractContextManager[None]:
    """The context every adapter call runs in. Adapters connect only to addresses the address policy accepts
    (providers/addresses.py, checked when each connection opens); hosts named in SOCIALPUB_FETCH_ALLOW_HOSTS
    may be private, as for media imports. Outside it no private address is reachable."""
    return addresses.allowing(settings.fetch_allow_hosts)


def provider_error(kind: str) -> tuple[str, str]:
    """(API error code, next_action) for a provider error kind; an unknown kind is the provider failing."""
    return PROVIDER_ERRORS.get(kind, PROVIDER_ERRORS["unavailable"])
