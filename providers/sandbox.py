"""The sandbox provider: deterministic, no network, with faults injected per integration.

Faults live in the integration's provider state: `{"faults": {"<operation>": "<kind>[:<times>]"}}`, where
operation is `dynamic_options`, `publish` or `delete_post` and kind is a provider error kind
(`reauth_required` or its alias `expired_credentials`, `rate_limited`, `transient`, `unavailable`,
`malformed`, `rejected`), or one of two behaviours that raise nothing: `malformed_data` (dynamic_options
answers with data that breaks the contract, which the caller must catch; other operations ignore it) and
`hang` (the call never answers, which the caller's timeout must catch). With `:<times>` the fault fires that many times, then the
call succeeds (a transient failure that heals). docs/targets.md documents the format for operators.
Every call is appended to `calls`, so tests can prove an operation called no provider.
"""

from __future__ import annotations

import hashlib
from typing import Any

import anyio

from providers.base import ERROR_KINDS, Account, Options, PostRequest, PostResult, ProviderError

PRIVACY_LEVELS = [
    {"value": "PUBLIC_TO_EVERYONE", "label": "Everyone"},
    {"value": "MUTUAL_FOLLOW_FRIENDS", "label": "Friends"},
    {"value": "FOLLOWER_OF_CREATOR", "label": "Followers"},
    {"value": "SELF_ONLY", "label": "Only me"},
]
# What `provider_state["faults"]` may hold: {operation: "kind[:times]"}.
FAULT_OPERATIONS = ("dynamic_options", "publish", "delete_post")
FAULT_KINDS = (*ERROR_KINDS, "expired_credentials", "malformed_data", "hang")
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


class SandboxProvider:
    name = "sandbox"

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._fired: dict[tuple[str, str], int] = {}

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
        if kind == "malformed_data":
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
        return PostResult(publish_id=f"sbx_{digest}",
                          permalink_url=f"https://sandbox.socialpub.invalid/{post.platform}/posts/{digest}")

    async def delete_post(self, account: Account, publish_id: str) -> None:
        self.calls.append({"op": "delete_post", "integration_id": account.integration_id, "publish_id": publish_id})
        await self._fault(account, "delete_post")
