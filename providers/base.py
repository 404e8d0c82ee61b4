"""The small interface every social-network adapter implements. Adapters see plain values, never tables."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

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


# How a CheckResult learnt the granted scopes (the check's output names it, so an operator knows how far to trust it).
SCOPE_SOURCES = {
    "introspected": "asked the network now (its token introspection or permissions endpoint)",
    "token_response": "the scope the network's token response named when the account was connected or refreshed "
                      "(the network offers no introspection)",
    "not_applicable": "the credential carries no scopes (an app password, a bot token, a webhook URL)",
    "sandbox": "answered by the sandbox",
    "unknown": "not known: the network offers no introspection and the token response named none",
}


@dataclass
class CheckResult:
    """What a read-only check of an account learnt from its network (`Provider.check`; it never posts). Every
    text here is the adapter's own sentence or a bounded fact (a username, an ID): never a credential or a raw
    provider body."""

    token_valid: bool | None = None  # None: the network could not tell (unreachable, rate limited)
    expires_at: str | None = None  # ISO 8601 expiry of the access token; None when it does not expire or is unknown
    refreshable: bool = False  # the stored credentials can be refreshed without the user
    granted_scopes: tuple[str, ...] | None = None  # None: not known (see scopes_source)
    scopes_source: str = "unknown"  # a key of SCOPE_SOURCES
    reachable: bool | None = None  # the account lookup (profile, Page, channel, chat) answered
    account: str | None = None  # what the lookup found: a username, a Page or chat title
    notes: list[str] = field(default_factory=list)
    failure: ProviderError | None = None  # the first lookup that failed; its kind says what went wrong

    def failed(self, exc: ProviderError) -> None:
        self.failure = self.failure or exc
        if exc.kind == "reauth_required":
            self.token_valid = False


async def probe(result: CheckResult, lookup: Awaitable[T]) -> T | None:
    """One read-only lookup of a check: its answer, or None with the failure recorded on the result."""
    try:
        return await lookup
    except ProviderError as exc:
        result.failed(exc)
        return None


def recorded(credentials: dict[str, Any] | None) -> CheckResult:
    """A check's starting point from the stored credentials: their expiry, whether they refresh, and the scopes
    the token response named (source `token_response`, or `unknown`)."""
    creds = credentials or {}
    granted = granted_from_token(creds)
    expires = creds.get("expires_at")
    return CheckResult(expires_at=str(expires) if expires else None, refreshable=bool(creds.get("refresh_token")),
                       granted_scopes=granted, scopes_source="token_response" if granted is not None else "unknown")


def granted_from_token(credentials: dict[str, Any] | None) -> tuple[str, ...] | None:
    """The scopes a token response named (`scope`, kept in the credentials at connect): networks separate them
    with spaces (RFC 6749 §3.3) or commas (TikTok, Pinterest, LinkedIn)."""
    raw = (credentials or {}).get("scope")
    if isinstance(raw, list):
        return tuple(str(s) for s in raw if s)
    if not isinstance(raw, str) or not raw.strip():
        return None
    return tuple(s for s in raw.replace(",", " ").split() if s)


class Provider(Protocol):
    name: str

    # The scopes each operation needs, as the network's reference names them (one source: `integrations check`
    # compares the granted scopes with it): `publish:<POST_TYPE>` for every post type the platform registry
    # names, `find_post` (recover after a crash), `delete_post`, `refresh_credentials` and `check`. Empty where
    # the credential carries no scopes. A network whose broad scopes cover narrow ones (Mastodon: `write` covers
    # `write:statuses`) may define `covers(granted, needed) -> bool`.
    needed_scopes: Mapping[str, tuple[str, ...]]

    async def check(self, account: Account) -> CheckResult:
        """Read-only: is the token valid and until when, which scopes were granted, does the account answer.
        Never posts, never stores: a failed lookup is recorded on the result (`CheckResult.failed`), not raised."""
        ...

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
