"""The small interface every social-network adapter implements. Adapters see plain values, never tables."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    def __init__(self, kind: str, message: str, *, retry_after: float | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown provider error kind {kind}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after

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

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options: ...

    async def publish(self, account: Account, post: PostRequest) -> PostResult: ...

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        """The post an earlier `publish` with this token created, or None. The worker asks before publishing
        again after an attempt whose outcome it never learnt (a crash, a timeout, a retry)."""
        ...

    async def delete_post(self, account: Account, publish_id: str) -> None: ...
