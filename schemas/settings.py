"""Service configuration, read once from the environment (see the README's configuration table)."""

from __future__ import annotations

import ipaddress
import os
import re
from pathlib import Path

from pydantic import BaseModel, Field, field_validator


def default_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "socialpub"


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: str) -> float:
    """Seconds from "90", "90s", "15m", "24h" or "7d"."""
    value = value.strip().lower()
    if value and value[-1] in _UNITS:
        return float(value[:-1]) * _UNITS[value[-1]]
    return float(value)


def parse_proxies(value: str) -> tuple[str, ...]:
    """`SOCIALPUB_TRUSTED_PROXIES` / `serve --forwarded-allow-ips`: comma-separated addresses or networks;
    `none` trusts no proxy at all (not even loopback)."""
    if value.strip().lower() == "none":
        return ()
    return tuple(p.strip() for p in value.split(",") if p.strip())


class Settings(BaseModel):
    home: Path = Field(default_factory=default_home)
    database_url: str | None = None
    # Per-key request budget: `rate_limit_requests` per `rate_limit_window` seconds (0 disables).
    rate_limit_requests: int = 600
    rate_limit_window: float = 60.0
    # Largest JSON request body accepted, in bytes.
    max_body_bytes: int = 1_048_576
    # Public base address of this service (bio pages, upload capabilities).
    public_url: str = "http://127.0.0.1:8000"
    # Public base of served media assets: download URLs are `{media_url}/assets/<opaque_id>`.
    media_url: str | None = None
    # Hosts allowed to resolve to private addresses in URL fetches (tests, private deployments).
    fetch_allow_hosts: tuple[str, ...] = ()
    # Key for server-signed capabilities (upload links, list cursors). Unset: a random key is created once
    # in `{home}/signing.key`; replicas that do not share `home` must all set the same value.
    signing_secret: str | None = None
    # Keys of the credentials vault (storage/vault.py), newest first: the first encrypts, all decrypt. Unset: one
    # key is created once in `{home}/vault.keys`; replicas that do not share `home` must all set the same value.
    secret_keys: tuple[str, ...] = ()
    # Telegram Bot API base (a local Bot API server or a proxy); stored on each account at connect time.
    telegram_api_url: str = "https://api.telegram.org"
    api_key: str | None = None  # stdio MCP and single-user local HTTP MCP
    # Host names MCP over HTTP accepts besides loopback (DNS rebinding protection), e.g. mcp.example.com.
    allowed_hosts: tuple[str, ...] = ()
    # Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (IP addresses or CIDR networks): a request
    # from any other peer is that peer, whatever it sends. Default: loopback only (a proxy on this machine).
    trusted_proxies: tuple[str, ...] = ("127.0.0.1", "::1")
    worker_enabled: bool = True
    # Validate every success payload against its declared response schema (tests turn this on).
    validate_responses: bool = False
    upgrade_url: str = "https://socialpub.example/pricing"
    # --- running past one machine (docs/operations.md) ---
    # Where rate-limit counters live: "memory" (this process), "redis://host:port[/db]", or "database".
    rate_limit_storage: str = "memory"
    # Bearer token /metrics requires; unset: /metrics is public (keep it on a private network then).
    metrics_token: str | None = None
    # /readyz also requires a fresh worker heartbeat; None: only when this process runs the worker.
    expect_worker: bool | None = None
    # Idempotency records are kept this long (seconds); a replay after that acts as a new request.
    idempotency_ttl: float = 86_400.0
    # Media bytes: unset = local disk under home; "s3://bucket/prefix" = an S3-compatible object store.
    media_store: str | None = None
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    # --- email delivery (docs/events.md) ---
    # smtp://[user[:password]@]host[:port] (STARTTLS when offered) or smtps://... (TLS from the start). Unset: no
    # email is sent. Holds a password: never printed or logged (so it is parsed, and refused, by
    # tools/events/mail.py, whose errors never repeat it; a validator here would echo it in pydantic's error).
    smtp_url: str | None = None
    mail_from: str | None = None  # the From address, e.g. "socialpub <noreply@example.com>"

    @field_validator("media_store")
    @classmethod
    def _media_store_is_s3(cls, value: str | None) -> str | None:
        # Checked at start-up, not at the first upload.
        if value and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^?#]*)?$", value):
            raise ValueError("SOCIALPUB_MEDIA_STORE must look like s3://bucket or s3://bucket/prefix")
        return value or None

    @field_validator("trusted_proxies")
    @classmethod
    def _proxies_are_addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # uvicorn takes a malformed entry as a literal host name that never matches: refuse it at start-up.
        for entry in value:
            try:
                ipaddress.ip_network(entry)
            except ValueError:
                raise ValueError(f"trusted proxies must be IP addresses or networks (10.0.0.5, 10.0.0.0/24, "
                                 f"fd00::/8), not {entry[:60]!r}") from None
        return value

    @property
    def resolved_media_url(self) -> str:
        return (self.media_url or f"{self.public_url.rstrip('/')}/media").rstrip("/")

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.home / 'socialpub.db'}"

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        values: dict[str, object] = {}
        if env.get("SOCIALPUB_HOME"):
            values["home"] = Path(env["SOCIALPUB_HOME"]).expanduser()
        if env.get("SOCIALPUB_DATABASE_URL"):
            values["database_url"] = env["SOCIALPUB_DATABASE_URL"]
        if env.get("SOCIALPUB_RATE_LIMIT"):
            requests, _, window = env["SOCIALPUB_RATE_LIMIT"].partition("/")
            values["rate_limit_requests"] = int(requests)
            values["rate_limit_window"] = float(window or 60)
        if env.get("SOCIALPUB_PUBLIC_URL"):
            values["public_url"] = env["SOCIALPUB_PUBLIC_URL"].rstrip("/")
        if env.get("SOCIALPUB_MEDIA_URL"):
            values["media_url"] = env["SOCIALPUB_MEDIA_URL"].rstrip("/")
        if env.get("SOCIALPUB_FETCH_ALLOW_HOSTS"):
            values["fetch_allow_hosts"] = tuple(
                h.strip().lower() for h in env["SOCIALPUB_FETCH_ALLOW_HOSTS"].split(",") if h.strip())
        if env.get("SOCIALPUB_SIGNING_SECRET"):
            values["signing_secret"] = env["SOCIALPUB_SIGNING_SECRET"]
        if env.get("SOCIALPUB_SECRET_KEYS"):
            values["secret_keys"] = tuple(k.strip() for k in env["SOCIALPUB_SECRET_KEYS"].split(",") if k.strip())
        if env.get("SOCIALPUB_TELEGRAM_API_URL"):
            values["telegram_api_url"] = env["SOCIALPUB_TELEGRAM_API_URL"].rstrip("/")
        if env.get("SOCIALPUB_UPGRADE_URL"):
            values["upgrade_url"] = env["SOCIALPUB_UPGRADE_URL"]
        if env.get("SOCIALPUB_ALLOWED_HOSTS"):
            values["allowed_hosts"] = tuple(
                h.strip().lower() for h in env["SOCIALPUB_ALLOWED_HOSTS"].split(",") if h.strip())
        if env.get("SOCIALPUB_TRUSTED_PROXIES"):
            values["trusted_proxies"] = parse_proxies(env["SOCIALPUB_TRUSTED_PROXIES"])
        if env.get("SOCIALPUB_API_KEY"):
            values["api_key"] = env["SOCIALPUB_API_KEY"]
        if env.get("SOCIALPUB_WORKER", "").lower() in ("0", "false", "off", "no"):
            values["worker_enabled"] = False
        if env.get("SOCIALPUB_RATE_LIMIT_STORAGE"):
            values["rate_limit_storage"] = env["SOCIALPUB_RATE_LIMIT_STORAGE"]
        if env.get("SOCIALPUB_METRICS_TOKEN"):
            values["metrics_token"] = env["SOCIALPUB_METRICS_TOKEN"]
        if env.get("SOCIALPUB_EXPECT_WORKER"):
            values["expect_worker"] = env["SOCIALPUB_EXPECT_WORKER"].lower() in ("1", "true", "on", "yes")
        if env.get("SOCIALPUB_IDEMPOTENCY_TTL"):
            values["idempotency_ttl"] = parse_duration(env["SOCIALPUB_IDEMPOTENCY_TTL"])
        for name in ("media_store", "s3_endpoint_url", "s3_region", "s3_access_key_id", "s3_secret_access_key"):
            if env.get(f"SOCIALPUB_{name.upper()}"):
                values[name] = env[f"SOCIALPUB_{name.upper()}"]
        for name in ("smtp_url", "mail_from"):
            if env.get(f"SOCIALPUB_{name.upper()}"):
                values[name] = env[f"SOCIALPUB_{name.upper()}"]
        values.update(overrides)
        return cls(**values)
