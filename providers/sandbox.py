"""The sandbox provider: deterministic, no network, with faults injected per integration.

Faults live in the integration's provider state: `{"faults": {"<operation>": "<kind>[:<times>]"}}`, where
operation is `dynamic_options`, `publish`, `delete_post` or `check` and kind is a provider error kind
(`reauth_required` or its alias `expired_credentials`, `rate_limited`, `transient`, `unavailable`,
`malformed`, `rejected`), or one of two behaviours that raise nothing: `malformed_data` (dynamic_options
answers with data that breaks the contract, which the caller must catch; other operations ignore it) and
`hang` (the call never answers, which the caller's timeout must catch), and `missing_scope` (`check` reports
the account without one scope that publishing needs; other operations ignore it). With `:<times>` the fault fires that many times, then the
call succeeds (a transient failure that heals). docs/targets.md documents the format for operators.
Every call is appended to `calls`, so tests can prove an operation called no provider.

Published posts are remembered in a ledger keyed by (integration, idempotency token), as a real network
remembers posts: `find_post` answers from it, and a second `publish` with a known token returns the same post
(counted, so tests can prove the worker never published twice). With a home directory
(`use_home`, done by the Runtime) the ledger is a SQLite file `{home}/sandbox/ledger.db` shared by every
process on that home; without one it lives in memory.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from providers.base import ERROR_KINDS, Account, CheckResult, Options, PostRequest, PostResult, ProviderError
from providers.metrics import PostMetrics
from providers.metrics import support as metrics_support

PRIVACY_LEVELS = [
    {"value": "PUBLIC_TO_EVERYONE", "label": "Everyone"},
    {"value": "MUTUAL_FOLLOW_FRIENDS", "label": "Friends"},
    {"value": "FOLLOWER_OF_CREATOR", "label": "Followers"},
    {"value": "SELF_ONLY", "label": "Only me"},
]
# What `provider_state["faults"]` may hold: {operation: "kind[:times]"}.
FAULT_OPERATIONS = ("dynamic_options", "publish", "delete_post", "check", "post_metrics")
FAULT_KINDS = (*ERROR_KINDS, "expired_credentials", "malformed_data", "hang", "missing_scope")
# Account facts the sandbox reads from provider_state (besides faults).
STATE_KEYS = ("privacy_levels", "comments_disabled", "duets_disabled", "stitches_disabled", "boards")
DEFAULT_BOARDS = [
    {"value": "board_recipes", "label": "Recipes"},
    {"value": "board_inspiration", "label": "Inspiration"},
]

# What the `malformed_data` fault answers: a value no draft accepts, a missing label, a repeated value.
MALFORMED_OPTIONS = [
    {"value": "EVERYONE_AND_THEIR_DOG", "label": None},
    {"value": "SELF_ONLY"},
    {"value": "SELF_ONLY", "label": "Only me"},
]


LEDGER_BUSY_TIMEOUT_S = 30
# Sandbox metrics: the range each field's ceiling is drawn from (post_metrics).
SANDBOX_CEILINGS: dict[str, tuple[int, int]] = {
    "impressions": (800, 9000), "likes": (20, 600), "reposts": (2, 90), "replies": (1, 60), "saves": (1, 120),
    "link_clicks": (5, 300), "video_views": (300, 6000), "watch_time_seconds": (3000, 90000),
}


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the ledger to WAL. While another process holds a lock on a ledger not yet in WAL (two workers opening a
    new home at once), SQLite answers the switch "database is locked" at once, without its busy handler: wait for
    that process here, as the busy timeout would for any other statement."""
    deadline = time.monotonic() + LEDGER_BUSY_TIMEOUT_S
    while True:
        try:
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class SandboxLedger:
    """Posts the sandbox has published: (integration_id, token) -> post, and how many publish calls hit it."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._memory: dict[tuple[str, str], tuple[str, str | None, int]] = {}
        self._conn: sqlite3.Connection | None = None

    def _connect(self) -> sqlite3.Connection:
        """One connection per ledger, opened on first use and kept (under `_lock`): opening a SQLite file per
        call cost more than the write itself. WAL lets every process on the home share the file."""
        assert self.path is not None
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=LEDGER_BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            _use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")  # durable across a killed process; no fsync per post
            conn.execute("CREATE TABLE IF NOT EXISTS posts (integration_id TEXT NOT NULL, token TEXT NOT NULL, "
                         "publish_id TEXT NOT NULL, permalink_url TEXT, publishes INTEGER NOT NULL, "
                         "PRIMARY KEY (integration_id, token))")
            self._conn = conn
        return self._conn

    def find(self, integration_id: str, token: str) -> PostResult | None:
        if self.path is None:
            found = self._memory.get((integration_id, token))
            return PostResult(found[0], found[1]) if found else None
        with self._lock:
            row = self._connect().execute("SELECT publish_id, permalink_url FROM posts WHERE integration_id = ? "
                                          "AND token = ?", (integration_id, token)).fetchone()
        return PostResult(row[0], row[1]) if row else None

    def record(self, integration_id: str, token: str, post: PostResult) -> PostResult:
        """Store a new post, or count one more publish of a known token and return the post it made."""
        if self.path is None:
            with self._lock:
                known = self._memory.get((integration_id, token))
                if known:
                    self._memory[(integration_id, token)] = (known[0], known[1], known[2] + 1)
                    return PostResult(known[0], known[1])
                self._memory[(integration_id, token)] = (post.publish_id, post.permalink_url, 1)
                return post
        with self._lock:
            conn = self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("INSERT INTO posts VALUES (?, ?, ?, ?, 1) ON CONFLICT (integration_id, token) DO "
                             "UPDATE SET publishes = publishes + 1",
                             (integration_id, token, post.publish_id, post.permalink_url))
                row = conn.execute("SELECT publish_id, permalink_url FROM posts WHERE integration_id = ? AND "
                                   "token = ?", (integration_id, token)).fetchone()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return PostResult(row[0], row[1])

    def publishes(self) -> dict[tuple[str, str], int]:
        """(integration_id, token) -> publish calls that reached the network for it (1 means exactly once)."""
        if self.path is None:
            return {k: v[2] for k, v in self._memory.items()}
        if not self.path.exists():
            return {}
        with self._lock:
            rows = self._connect().execute("SELECT integration_id, token, publishes FROM posts").fetchall()
        return {(r[0], r[1]): r[2] for r in rows}


class SandboxProvider:
    name = "sandbox"
    refresh_ahead = None  # the token tick leaves sandbox accounts alone
    needed_scopes: dict[str, tuple[str, ...]] = {}  # a sandbox account answers for its platform's adapter

    def __init__(self, home: Path | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self._fired: dict[tuple[str, str], int] = {}
        self.ledger = SandboxLedger()
        if home is not None:
            self.use_home(home)

    def use_home(self, home: Path) -> None:
        """Keep the ledger in `{home}/sandbox/ledger.db`, shared by every process using that home."""
        self.ledger = SandboxLedger(Path(home) / "sandbox" / "ledger.db")

    async def _fault(self, account: Account, operation: str) -> str | None:
        """Raises the injected error, waits forever for `hang`, or returns a behaviour kind (`malformed_data`)."""
        spec = (account.state.get("faults") or {}).get(operation)
        if not spec:
            return None
        kind, _, times = str(spec).partition(":")
        key = (account.integration_id, operation)
        if times:
            if self._fired.get(key, 0) >= int(times):
                return None
            self._fired[key] = self._fired.get(key, 0) + 1
        if kind in ("malformed_data", "missing_scope"):
            return kind
        if kind == "hang":
            await anyio.sleep_forever()
        if kind == "expired_credentials":
            kind = "reauth_required"
        raise ProviderError(kind, f"sandbox fault: {kind}", retry_after=1.0 if kind == "rate_limited" else None)

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        self.calls.append({"op": "dynamic_options", "integration_id": account.integration_id, "refresh": refresh})
        if account.status != "connected":
            raise ProviderError("reauth_required", "the account's credentials are no longer valid")
        if await self._fault(account, "dynamic_options") == "malformed_data":
            return Options(kind, list(MALFORMED_OPTIONS), {"comments_disabled": "no"})
        if kind == "creator_privacy_levels":
            allowed = account.state.get("privacy_levels")
            options = [o for o in PRIVACY_LEVELS if allowed is None or o["value"] in allowed]
            constraints = {
                "comments_disabled": bool(account.state.get("comments_disabled", False)),
                "duets_disabled": bool(account.state.get("duets_disabled", False)),
                "stitches_disabled": bool(account.state.get("stitches_disabled", False)),
            }
            result = Options(kind, options, constraints)
        elif kind == "pinterest_boards":
            result = Options(kind, list(account.state.get("boards") or DEFAULT_BOARDS))
        else:
            raise ProviderError("malformed", f"no dynamic options of kind {kind}")
        if refresh:
            # A refresh rotates the sandbox token, as real providers do on a token refresh. The new token is
            # derived from the old one, so runs are repeatable; sandbox tokens from a refresh do not expire.
            old = dict(account.credentials or {})
            generation = int(old.get("generation", 0)) + 1
            digest = hashlib.sha256(f"{old.get('access_token', '')}|{generation}".encode()).hexdigest()[:32]
            old.pop("expires_at", None)
            result.new_credentials = {**old, "access_token": f"sbx_token_{digest}", "generation": generation}
        return result

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        self.calls.append({"op": "publish", "integration_id": account.integration_id,
                           "token": post.idempotency_token, "platform": post.platform})
        if account.status != "connected":
            raise ProviderError("reauth_required", "the account's credentials are no longer valid")
        await self._fault(account, "publish")
        digest = hashlib.sha256(f"{account.integration_id}|{post.idempotency_token}".encode()).hexdigest()[:16]
        made = PostResult(publish_id=f"sbx_{digest}",
                          permalink_url=f"https://sandbox.socialpub.invalid/{post.platform}/posts/{digest}")
        if not post.idempotency_token:
            return made
        return self.ledger.record(account.integration_id, post.idempotency_token, made)

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        self.calls.append({"op": "find_post", "integration_id": account.integration_id, "token": idempotency_token})
        if account.status != "connected":
            raise ProviderError("reauth_required", "the account's credentials are no longer valid")
        return self.ledger.find(account.integration_id, idempotency_token)

    async def delete_post(self, account: Account, publish_id: str) -> None:
        self.calls.append({"op": "delete_post", "integration_id": account.integration_id, "publish_id": publish_id})
        await self._fault(account, "delete_post")

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """Deterministic, growing numbers: each field's ceiling comes from a hash of the post and the field, and
        the value approaches it as the post ages (63% after a day and a half), so the same post read at the same
        age gives the same figures, a later reading never gives less, and charts look like real ones. Only the
        fields the real network of the account's platform offers (providers/metrics.SUPPORT)."""
        self.calls.append({"op": "post_metrics", "integration_id": account.integration_id, "publish_id": publish_id})
        if account.status != "connected":
            raise ProviderError("reauth_required", "the account's credentials are no longer valid")
        await self._fault(account, "post_metrics")
        known = metrics_support(account.platform)
        hours = max((now - published_at).total_seconds() / 3600, 0.0)
        growth = 1 - math.exp(-hours / 36)
        values: dict[str, int] = {}
        for name in known.fields if known else ():
            low, high = SANDBOX_CEILINGS[name]
            seed = int.from_bytes(hashlib.sha256(f"{publish_id}|{name}".encode()).digest()[:4], "big")
            values[name] = int((low + seed % (high - low)) * growth)
        return PostMetrics(values=values, raw={f"sandbox_{k}": v for k, v in values.items()})

    async def check(self, account: Account) -> CheckResult:
        """Answers from the sandbox: a connected account is valid and reachable and holds every scope its
        platform's adapter declares (`declared_scopes`); the `check` faults fail it, and `missing_scope` leaves
        out the first scope only publishing needs (the first one when every operation needs them all)."""
        from providers import declared_scopes  # the package imports this module

        self.calls.append({"op": "check", "integration_id": account.integration_id})
        creds = account.credentials or {}
        result = CheckResult(scopes_source="sandbox", expires_at=creds.get("expires_at"), refreshable=False)
        if account.status != "connected":
            result.failed(ProviderError("reauth_required", "the account's credentials are no longer valid"))
            return result
        try:
            behaviour = await self._fault(account, "check")
        except ProviderError as exc:
            result.failed(exc)
            return result
        needed = declared_scopes(account.platform, account) if account.platform else {}
        granted = list(dict.fromkeys(s.split("|")[0] for scopes in needed.values() for s in scopes))
        if behaviour == "missing_scope" and granted:
            others = {s for op, scopes in needed.items() if not op.startswith("publish:") for s in scopes}
            publishing = [s for op, scopes in needed.items() if op.startswith("publish:") for s in scopes]
            dropped = next((s for s in publishing if s not in others), publishing[0] if publishing else granted[0])
            granted.remove(dropped.split("|")[0])
        result.granted_scopes = tuple(granted)
        result.token_valid = result.reachable = True
        result.account = str(account.state.get("username") or account.provider_account_id or account.integration_id)
        return result

    async def refresh_credentials(self, account: Account, now: Any) -> dict[str, Any] | None:
        return None  # sandbox tokens never expire
