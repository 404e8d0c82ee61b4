"""`socialpub integrations check` and the console's Check button: a read-only check of one connected account.

The account's adapter asks its network (`Provider.check`: token introspection or the profile lookup, never a
post, never a stored change) and this module judges the answer against what the service needs: the scopes
each operation needs come from one source, the adapter's declared `needed_scopes` (per post type of the platform
registry, and for recovery, deletion and refresh), compared with the scopes the network says were granted.

The report is a stable object (docs/networks.md, "Checking an account"):
`status` is `ok`, `problem` (something the operator must fix: a refused or expired token, a missing scope, an
account the network no longer shows) or `inconclusive` (the network could not be asked: unreachable, rate
limited, timed out). Nothing in it is a credential: adapters report usernames, IDs and their own sentences.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import anyio
from sqlmodel import select

from providers import ADAPTERS, adapter_class, declared_scopes
from providers.base import SCOPE_SOURCES, CheckResult, ProviderError
from schemas.platforms import BY_KEY
from schemas.time import iso, parse_timestamp
from storage import vault
from storage.tables.integrations import Integration
from tools.runtime import Runtime
from tools.services.accounts import account_of, outbound

CHECK_TIMEOUT_S = 30.0  # the whole check: every lookup of one adapter
EXPIRY_WARNING_DAYS = 7  # a token that cannot refresh and expires this soon is a warning
STATUSES = ("ok", "problem", "inconclusive")
# What an adapter's failed lookup means for the operator (never the adapter's own failure text, which speaks of
# posts; these are our sentences about a check).
FAILURES: dict[str, tuple[str, str]] = {
    "reauth_required": ("token_invalid", "The network refused the stored credentials (expired, revoked or "
                                         "changed): reconnect the account."),
    "rejected": ("account_unreachable", "The network refused the account lookup: the account, Page, channel or "
                                        "chat may be gone, or the app lost access to it."),
    "malformed": ("network_malformed", "The network answered something unexpected to the account lookup."),
    "rate_limited": ("network_unavailable", "The network asked us to slow down; try the check again later."),
    "transient": ("network_unavailable", "The network could not be reached; try the check again later."),
    "unavailable": ("network_unavailable", "The network is unavailable; try the check again later."),
}
INCONCLUSIVE = {"network_unavailable", "timed_out"}


class CheckError(Exception):
    """A check that cannot start (no such account in this workspace); the message is safe to print."""


def _covers(platform: str) -> Callable[[set[str], str], bool]:
    """The platform's scope hierarchy (`covers` on its adapter, e.g. Mastodon's), else equality."""
    covers: Callable[[set[str], str], bool] | None = (
        getattr(adapter_class(platform), "covers", None) if platform in ADAPTERS else None)
    return covers if callable(covers) else (lambda granted, needed: needed in granted)


def _missing(needed: tuple[str, ...], granted: set[str], covers: Callable[[set[str], str], bool]) -> list[str]:
    """The needed scopes not granted; `a|b` is satisfied by either (YouTube's delete: youtube or force-ssl)."""
    return [n for n in needed if not any(covers(granted, alt) for alt in n.split("|"))]


def evaluate(integration: Integration, result: CheckResult, needed: Mapping[str, tuple[str, ...]],
             covers: Callable[[set[str], str], bool], now: datetime, *, timed_out: bool = False) -> dict[str, Any]:
    """The report of one check (the stable object `--json` prints)."""
    problems: list[dict[str, str]] = []
    warnings: list[str] = []

    def problem(code: str, message: str) -> None:
        if all(p["code"] != code for p in problems):
            problems.append({"code": code, "message": message})

    if timed_out:
        problem("timed_out", f"The network did not answer within {int(CHECK_TIMEOUT_S)} seconds; try again later.")
    if result.failure is not None:
        problem(*FAILURES.get(result.failure.kind, FAILURES["unavailable"]))
    if result.token_valid is False:
        problem(*FAILURES["reauth_required"])
    if integration.status != "connected":
        problem("not_connected", f"The account's status is {integration.status}: it does not publish until it is "
                                 "reconnected.")
    expires_in: int | None = None
    if result.expires_at:
        try:
            expires_in = int((parse_timestamp(result.expires_at) - now).total_seconds())
        except ValueError:
            expires_in = None
    if expires_in is not None and expires_in <= 0 and not result.refreshable:
        problem("token_expired", "The access token has expired and cannot be refreshed: reconnect the account.")
    elif expires_in is not None and expires_in <= 0:
        warnings.append("The access token has expired; the token tick refreshes it (if this stays, the refresh "
                        "is failing).")
    elif expires_in is not None and expires_in < EXPIRY_WARNING_DAYS * 86400 and not result.refreshable:
        warnings.append(f"The access token expires in {expires_in // 3600} hours and cannot be refreshed: "
                        "reconnect the account before then.")
    if result.reachable is False and result.failure is None and result.token_valid is not False:
        problem("account_unreachable", "The network no longer shows the connected account to these credentials.")

    granted = set(result.granted_scopes) if result.granted_scopes is not None else None
    platform = BY_KEY.get(integration.platform)
    post_kinds, operations = [], []
    for post_type in platform.post_types if platform else ():
        scopes = tuple(needed.get(f"publish:{post_type}", ()))
        missing = _missing(scopes, granted, covers) if granted is not None else None
        post_kinds.append({"post_type": post_type, "needed": list(scopes), "missing": missing,
                           "ok": None if missing is None else not missing})
    for operation, scopes in needed.items():
        if operation.startswith("publish:"):
            continue
        missing = _missing(tuple(scopes), granted, covers) if granted is not None else None
        operations.append({"operation": operation, "needed": list(scopes), "missing": missing,
                           "ok": None if missing is None else not missing})
    lacking = sorted({m for row in (*post_kinds, *operations) for m in row["missing"] or ()})
    if lacking:
        kinds = [row["post_type"] for row in post_kinds if row["missing"]]
        problem("missing_scopes", f"Not granted: {', '.join(lacking)}"
                + (f" (needed to publish {', '.join(kinds)})" if kinds else "")
                + ". Reconnect the account and grant them.")
    if granted is None and any(needed.values()) and result.failure is None and not timed_out:
        warnings.append("The granted scopes are not known (" + SCOPE_SOURCES["unknown"].split(": ", 1)[1]
                        + "); reconnecting records them.")
    if all(p["code"] in INCONCLUSIVE for p in problems) and problems:
        status = "inconclusive"
    else:
        status = "problem" if problems else "ok"
    return {
        "integration_id": integration.id, "platform": integration.platform, "provider": integration.provider,
        "status": status, "checked_at": iso(now),
        "account": {"id": integration.provider_account_id, "name": result.account, "reachable": result.reachable},
        "token": {"valid": result.token_valid, "expires_at": result.expires_at, "expires_in_seconds": expires_in,
                  "refreshable": result.refreshable},
        "scopes": {"source": result.scopes_source, "granted": sorted(granted) if granted is not None else None},
        "post_kinds": post_kinds, "operations": operations,
        "problems": problems, "warnings": warnings, "notes": list(result.notes)[:10],
    }


async def check_integration(rt: Runtime, integration_id: str, *, workspace_id: str | None = None,
                            brand_id: str | None = None) -> dict[str, Any]:
    """Check one account read-only. `workspace_id` / `brand_id` confine the lookup (the console passes both; an
    account of another workspace is "no such account", never a hint that it exists)."""
    if not integration_id or len(integration_id) > 100:
        raise CheckError("no such integration")
    async with rt.db.session(write=False) as s:
        query = select(Integration).where(Integration.id == integration_id)
        if workspace_id is not None:
            query = query.where(Integration.workspace_id == workspace_id)
        if brand_id is not None:
            query = query.where(Integration.brand_id == brand_id)
        integration = (await s.exec(query)).first()
    if integration is None:
        raise CheckError(f"no integration {integration_id}")
    now = rt.clock.now()
    if integration.provider not in rt.providers:
        raise CheckError(f"integration {integration.id} uses provider {integration.provider}, which this service "
                         "does not have")
    provider = rt.providers[integration.provider]
    try:
        account = account_of(integration, rt.settings)
    except vault.VaultError:
        result = CheckResult()
        result.failed(ProviderError("reauth_required", "stored credentials cannot be decrypted"))
        result.notes.append("The stored credentials cannot be decrypted with this service's vault keys.")
        return evaluate(integration, result, {}, _covers(""), now)
    # for a sandbox account too: the scopes its platform's adapter declares
    needed = declared_scopes(integration.platform, account) if integration.platform in ADAPTERS else {}
    covers = _covers(integration.platform)
    if account.credentials is None and integration.provider != "sandbox":
        result = CheckResult()
        result.failed(ProviderError("reauth_required", "no stored credentials"))
        result.notes.append("No credentials are stored (the account was disconnected).")
        return evaluate(integration, result, needed, covers, now)
    timed_out = False
    result = CheckResult()
    # outside any transaction: network calls, through the same address policy as every adapter call
    with anyio.move_on_after(CHECK_TIMEOUT_S) as scope, outbound(rt.settings):
        result = await provider.check(account)
    if scope.cancelled_caught:
        timed_out = True
    return evaluate(integration, result, needed, covers, now, timed_out=timed_out)


def exit_code(report: dict[str, Any]) -> int:
    """The CLI's exit status: 0 ok, 1 a problem found, 3 inconclusive (2 is every refusal, as in every command)."""
    return {"ok": 0, "problem": 1, "inconclusive": 3}[report["status"]]
