"""Service configuration, read once from the environment (see the README's configuration table)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field


def default_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "socialpub"


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
    worker_enabled: bool = True
    # Validate every success payload against its declared response schema (tests turn this on).
    validate_responses: bool = False
    upgrade_url: str = "https://socialpub.example/pricing"

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
        if env.get("SOCIALPUB_API_KEY"):
            values["api_key"] = env["SOCIALPUB_API_KEY"]
        if env.get("SOCIALPUB_WORKER", "").lower() in ("0", "false", "off", "no"):
            values["worker_enabled"] = False
        values.update(overrides)
        return cls(**values)
