"""The small interface every social-network adapter implements. Adapters see plain values, never tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

# How a provider failure is classified; `retryable` kinds are retried by the worker with backoff.
ERROR_KINDS = {
    "reauth_required": False,  # credentials expired or revoked: the account must be reconnected
    "rate_limited": True,
    "transient": True,  # network blip, 5xx
    "unavailable": True,  # provider down
    "malformed": False,  # provider answered with data we cannot trust
    "rejected": False,  # provider refused the post (policy, format)
}


class ProviderError(Exception):
    """A classified provider failure. `message` is for logs (never a credential, never shown to clients);
    `safe_reason` is an adapter-written sentence a client may read ("Bluesky refused the post: text is longer
    than 300 graphemes"): built from our own words and bounded provider facts, never the raw provider body."""

    def __init__(self, kind: str, message: str, *, retry_after: float | None = None,
                 safe_reason: str | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown provider error kind {kind}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.safe_reason = safe_reason

    @property
    def retryable(self) -> bool:
        return ERROR_KINDS[self.kind]


@dataclass
class Account:
    """What an adapter knows of a connected account."""

    integration_id: str
    platform: str
    status: str
    provider_account_id: str | None
    credentials: dict[str, Any] | None
    state: dict[str, Any] = field(default_factory=dict)
    # Set by an adapter that refreshed or rotated credentials during a call; the caller stores them (encrypted).
    credentials_changed: bool = False

    def update_credentials(self, credentials: dict[str, Any]) -> None:
        self.credentials = credentials
        self.credentials_changed = True


@dataclass
class Connection:
    """What a verified connect returns (a session was created, a token or webhook answered); the caller stores
    it as an integration, the credentials encrypted in the vault."""

    provider_account_id: str
    username: str | None
    display_name: str | None
    credentials: dict[str, Any]
    state: dict[str, Any] = field(default_factory=dict)
    avatar_url: str | None = None


@dataclass
class Options:
    kind: str
    options: list[dict[str, str]]
    constraints: dict[str, Any] = field(default_factory=dict)
    # Set when the read rotated credentials or changed account status; the caller persists them.
    new_credentials: dict[str, Any] | None = None
    new_status: str | None = None


@dataclass
class PostRequest:
    """One target of one publish: copy, media URLs and the platform settings."""

    platform: str
    post_type: str | None
    text: str
    title: str | None = None
    media: list[dict[str, Any]] = field(default_factory=list)  # {url, content_type, width, height, duration}
    settings: dict[str, Any] = field(default_factory=dict)
    thread_parts: list[dict[str, Any]] = field(default_factory=list)
    idempotency_token: str = ""  # stable per target attempt; a provider that supports it dedupes on it


@dataclass
class PostResult:
    publish_id: str
    permalink_url: str | None


class Provider(Protocol):
    name: str
    # How long before its credentials' `expires_at` the token tick refreshes an account of this network: the
    # network's own window (None: its credentials never expire). An adapter that cannot always refresh may also
    # declare `reconnect_notice_ahead`: the reconnect notice is sent that long before an unrefreshable expiry.
    refresh_ahead: timedelta | None

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options: ...

    async def publish(self, account: Account, post: PostRequest) -> PostResult: ...

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        """The post an earlier `publish` with this token created, or None. The worker asks before publishing
        again after an attempt whose outcome it never learnt (a crash, a timeout, a retry)."""
        ...

    async def delete_post(self, account: Account, publish_id: str) -> None: ...

    # Optional, for networks without an idempotency key (X, Instagram, ...):
    # `async def find_post_matching(self, account, post: PostRequest, since: datetime) -> PostResult | None`
    # finds the post an earlier attempt made by an exact match of its content among the account's posts since
    # `since` (the run's start). The worker asks it when `find_post` knows nothing.

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        """Fresh credentials when the stored ones expire soon (the caller stores them), else None. Raises
        ProviderError("reauth_required") when the refresh failed for good (the account must be reconnected)."""
        ...
