"""Service configuration: one pydantic-settings model, read once from the `SOCIALPUB_*` environment.

`Settings(...)` takes only the values it is given (tests, benchmarks); `Settings.from_env(**overrides)` reads the
environment (every `SOCIALPUB_<FIELD>` variable, the field name in capitals) and lets `overrides` (command-line
flags) win. The README's configuration table is generated from the fields below (`python -m server.generate`;
tests/mcp/test_generated.py fails when it is stale).

To add a setting: add one field here with `setting(default, "what it does", shown="default as the table shows
it")`; its variable is `SOCIALPUB_` + the field name in capitals. A value the environment gives as text that is
not a plain number, flag or string (a list, a duration) gets a `mode="before"` validator below, written for `str`
input only. Then run `python -m server.generate` and read the value where it is used from `rt.settings`.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, NoDecode, SettingsConfigDict

ENV_PREFIX = "SOCIALPUB_"


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


def setting(default: Any = None, doc: str = "", *, shown: str | None = None, env: str | None = None,
            default_factory: Any = None) -> Any:
    """A field of `Settings`: `doc` and `shown` (the default as the README table shows it, markdown; unset: the
    default in backticks) feed the generated table; `env` names a variable other than `SOCIALPUB_<FIELD>` (kept for settings named before the model)."""
    extra: dict[str, Any] = {"doc": doc, "shown": shown}
    alias = AliasChoices(env) if env else None  # None: the prefixed field name, as when unset
    if default_factory is not None:
        return Field(default_factory=default_factory, json_schema_extra=extra, validation_alias=alias)
    return Field(default, json_schema_extra=extra, validation_alias=alias)


S3_EXTRA_MISSING = ("SOCIALPUB_MEDIA_STORE names an S3 store but boto3 is not installed: "
                    "pip install 'socialpub[s3]'")


class MissingExtra(RuntimeError):
    """A setting needs an optional dependency that is not installed; the message is one line naming the extra."""


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (boto3 alone costs a quarter second)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


# Text lists from the environment (comma-separated), not JSON as pydantic-settings would decode them.
TextList = Annotated[tuple[str, ...], NoDecode]
_OFF = ("0", "false", "off", "no")
_ON = ("1", "true", "on", "yes")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_ignore_empty=True, extra="ignore",
                                      populate_by_name=True, case_sensitive=False)

    home: Path = setting(default_factory=default_home, doc="Data directory: the SQLite database, media files, "
                         "signing key, sandbox state.", shown="`~/.local/share/socialpub`")
    database_url: str | None = setting(None, "Any SQLAlchemy async URL; `postgresql+asyncpg://user@host/db` for "
                                       "PostgreSQL (`pip install '.[postgres]'`).",
                                       shown="`sqlite+aiosqlite:///$SOCIALPUB_HOME/socialpub.db`")
    public_url: str = setting("http://127.0.0.1:8000", "Public base address (upload links, bio pages, claim links).")
    media_url: str | None = setting(None, "Public base of media download URLs (`{media_url}/assets/<opaque_id>`); "
                                    "must reach this service's `/media` path.", shown="`$SOCIALPUB_PUBLIC_URL/media`")
    # Key for server-signed capabilities (upload links, list cursors). Unset: a random key is created once
    # in `{home}/signing.key`; replicas that do not share `home` must all set the same value.
    signing_secret: str | None = setting(None, "HMAC secret of upload links and other capabilities; replicas must "
                                         "share it.", shown="generated in `$SOCIALPUB_HOME/signing.key`")
    # Keys of the credentials vault (storage/vault.py), newest first: the first encrypts, all decrypt. Unset: one
    # key is created once in `{home}/vault.keys`; replicas that do not share `home` must all set the same value.
    secret_keys: TextList = setting((), "Fernet keys of the credentials vault, newest first, comma-separated (the "
                                    "first encrypts, all decrypt); back the key file up with the database.",
                                    shown="generated in `$SOCIALPUB_HOME/vault.keys`")
    telegram_api_url: str = setting("https://api.telegram.org", "Telegram Bot API base (a local Bot API server or "
                                    "a proxy), stored on accounts at connect time.")
    # `SOCIALPUB_RATE_LIMIT=requests/window`; parsed into the two fields below.
    rate_limit: str | None = setting(None, "Requests per key per window in seconds (`0` disables). Counted where "
                                     "`SOCIALPUB_RATE_LIMIT_STORAGE` says.", shown="`600/60`")
    rate_limit_requests: int = 600  # from `rate_limit`; 0 disables
    rate_limit_window: float = 60.0
    fetch_allow_hosts: TextList = setting((), "Host names URL fetches (media imports, website scans) and network "
                                          "calls (a private Mastodon instance, Bluesky PDS or Telegram Bot API "
                                          "server) may resolve to private addresses: tests, private deployments. "
                                          "Checked when each connection opens.", shown="(none)")
    allowed_hosts: TextList = setting((), "Host names MCP over HTTP accepts besides loopback (DNS-rebinding "
                                      "protection), e.g. `socialpub.example.com`.", shown="(loopback only)")
    # Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (IP addresses or CIDR networks): a request
    # from any other peer is that peer, whatever it sends. Default: loopback only (a proxy on this machine).
    trusted_proxies: TextList = setting(("127.0.0.1", "::1"), "Addresses or networks (`10.0.0.5,10.0.0.0/24`) of "
                                        "reverse proxies whose `X-Forwarded-For`/`-Proto` are believed; `none` "
                                        "trusts no proxy. Same as `serve --forwarded-allow-ips` "
                                        "([docs/operations.md](docs/operations.md#reverse-proxy-nginx)).",
                                        shown="`127.0.0.1,::1`")
    api_key: str | None = setting(None, "The key the stdio MCP server acts with; also served to header-less local "
                                  "clients by a stand-alone `socialpub mcp --transport http|sse`.", shown="(none)")
    mcp_toolsets: str | None = setting(None, "Toolsets `socialpub mcp` serves (as `--toolsets`; used by the MCP "
                                       "Bundle).", shown="default set")
    mcp_read_only: bool = setting(False, "`true`: `socialpub mcp` serves only tools that change nothing (as "
                                  "`--read-only`).")
    worker_enabled: bool = setting(True, "`off` stops `serve` and the stdio MCP server from running the worker "
                                   "in-process.", shown="`on`", env="SOCIALPUB_WORKER")
    upgrade_url: str = setting("https://socialpub.example/pricing", "Link given in plan-limit errors.")
    # --- running past one machine (docs/operations.md) ---
    rate_limit_storage: str = setting("memory", "`memory` (per process), `redis://host:6379/0` or `database` "
                                      "(PostgreSQL): where budgets are counted; shared storage gives replicas one "
                                      "budget per key.")
    # Media bytes: unset = local disk under home; "s3://bucket/prefix" = an S3-compatible object store.
    media_store: str | None = setting(None, "`s3://bucket/prefix`: media in an S3-compatible store (needs "
                                      "`pip install 'socialpub[s3]'`; [docs/operations.md]"
                                      "(docs/operations.md#media-in-an-object-store)).", shown="local disk")
    s3_endpoint_url: str | None = setting(None, "Endpoint of a non-AWS store (MinIO, Ceph, R2, …).", shown="AWS")
    s3_region: str | None = setting(None, "Region of the bucket.", shown="`us-east-1`")
    s3_access_key_id: str | None = setting(None, "S3 credentials; unset, boto3 reads its usual sources (`AWS_*` "
                                           "variables, instance profile).", shown="boto3's chain")
    s3_secret_access_key: str | None = setting(None, "Secret of `SOCIALPUB_S3_ACCESS_KEY_ID`.", shown="boto3's chain")
    # Idempotency records are kept this long (seconds); a replay after that acts as a new request.
    idempotency_ttl: float = setting(86_400.0, "How long idempotency keys are remembered (`90s`, `15m`, `24h`, `7d` "
                                     "or seconds); a replay after that is a new request.", shown="`24h`")
    # Bearer token /metrics requires; unset: /metrics is public (keep it on a private network then).
    metrics_token: str | None = setting(None, "Bearer token `/metrics` requires.", shown="(none: public)")
    # /readyz also requires a fresh worker heartbeat; None: only when this process runs the worker.
    expect_worker: bool | None = setting(None, "`1`: `/readyz` also needs a fresh heartbeat from some worker (for "
                                         "`serve --no-worker`).", shown="on when the process runs the worker")
    log_format: str = setting("text", "Same as `--log-format`: `text` or `json` (one JSON "
                                                  "object per line).")
    # Not from the environment: tests turn these on or change them.
    max_body_bytes: int = 1_048_576  # largest JSON request body accepted, in bytes
    validate_responses: bool = False  # check every success payload against its schema

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: Any, env_settings: Any,
                                   dotenv_settings: Any, file_secret_settings: Any) -> tuple[Any, ...]:
        # `Settings(...)` takes only what it is given; `from_env` reads the environment.
        return (init_settings,)

    @classmethod
    def env_values(cls) -> dict[str, Any]:
        """The environment's values by field name, as text, unchecked."""
        values = EnvSettingsSource(cls, env_prefix=ENV_PREFIX, env_ignore_empty=True, case_sensitive=False)()
        return {_BY_VARIABLE.get(name, name): value for name, value in values.items() if name not in _SET_BY_CODE}

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        settings = cls(**{**cls.env_values(), **overrides})
        if settings.media_store and not installed("boto3"):  # at start-up, not at the first upload
            raise MissingExtra(S3_EXTRA_MISSING)
        return settings

    @classmethod
    def documented(cls) -> list[tuple[str, str, str]]:
        """(variable, default as the table shows it (markdown), meaning) of every setting the environment gives,
        in field order."""
        rows = []
        for name, field in cls.model_fields.items():
            extra = field.json_schema_extra
            if not isinstance(extra, dict):
                continue
            alias = field.validation_alias
            variable = alias.choices[0] if isinstance(alias, AliasChoices) else ENV_PREFIX + name.upper()
            default = field.get_default(call_default_factory=False)
            shown = extra.get("shown") or f"`{str(default).lower() if isinstance(default, bool) else default}`"
            rows.append((str(variable), str(shown), str(extra["doc"])))
        return rows

    # -- text from the environment ------------------------------------------------------------------------------

    @field_validator("home", mode="before")
    @classmethod
    def _home(cls, value: Any) -> Any:
        return Path(value).expanduser() if isinstance(value, str) else value

    @field_validator("public_url", "media_url", "telegram_api_url", mode="before")
    @classmethod
    def _no_trailing_slash(cls, value: Any) -> Any:
        return value.rstrip("/") if isinstance(value, str) else value

    @field_validator("fetch_allow_hosts", "allowed_hosts", mode="before")
    @classmethod
    def _host_list(cls, value: Any) -> Any:
        return tuple(h.strip().lower() for h in value.split(",") if h.strip()) if isinstance(value, str) else value

    @field_validator("secret_keys", mode="before")
    @classmethod
    def _key_list(cls, value: Any) -> Any:
        return tuple(k.strip() for k in value.split(",") if k.strip()) if isinstance(value, str) else value

    @field_validator("worker_enabled", mode="before")
    @classmethod
    def _worker(cls, value: Any) -> Any:
        return value.strip().lower() not in _OFF if isinstance(value, str) else value  # anything but "off" is on

    @field_validator("expect_worker", "mcp_read_only", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> Any:
        return value.strip().lower() in _ON if isinstance(value, str) else value

    @field_validator("idempotency_ttl", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value
    # --- email delivery (docs/events.md) ---
    # Holds a password: never printed or logged (so it is parsed, and refused, by tools/events/mail.py, whose
    # errors never repeat it; a validator here would echo it in pydantic's error).
    smtp_url: str | None = setting(None, "`smtp://[user:password@]host[:port]` (STARTTLS) or `smtps://...`: the "
                                   "worker emails notifications per each user's preferences "
                                   "([docs/events.md](docs/events.md)).", shown="(none: no email)")
    mail_from: str | None = setting(None, "The From address of those emails, e.g. `socialpub <noreply@example.com>`.",
                                    shown="(none)")

    @field_validator("media_store")
    @classmethod
    def _media_store_is_s3(cls, value: str | None) -> str | None:
        # Checked at start-up, not at the first upload.
        if value and not re.match(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^?#]*)?$", value):
            raise ValueError("SOCIALPUB_MEDIA_STORE must look like s3://bucket or s3://bucket/prefix")
        return value or None

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_text(cls, value: Any) -> Any:
        return parse_proxies(value) if isinstance(value, str) else value

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

    @model_validator(mode="after")
    def _rate_limit(self) -> Settings:
        if self.rate_limit:
            requests, _, window = self.rate_limit.partition("/")
            self.rate_limit_requests, self.rate_limit_window = int(requests), float(window or 60)
        return self

    @property
    def resolved_media_url(self) -> str:
        return (self.media_url or f"{self.public_url.rstrip('/')}/media").rstrip("/")

    @property
    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite+aiosqlite:///{self.home / 'socialpub.db'}"


# Fields not read from the environment: those not declared with `setting(...)` (set by code and tests).
_SET_BY_CODE = {name for name, f in Settings.model_fields.items() if not isinstance(f.json_schema_extra, dict)}
# Fields whose variable has another name (`env=`): variable -> field, so an override by field name wins.
_BY_VARIABLE = {str(choice): name for name, f in Settings.model_fields.items()
                if isinstance(f.validation_alias, AliasChoices) for choice in f.validation_alias.choices}
