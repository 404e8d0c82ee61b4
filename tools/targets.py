"""Targets (connected accounts with readiness), the older integration routes, and live dynamic options.

Dynamic options are read from the provider on every call and never cached, so a caller never sees stale
choices: every failure is an explicit error (table in docs/targets.md).

The refresh (POST) holds a provider-effect lease while it talks to the provider: a short-lived marker in
the integration's `provider_state` (`refresh_lease: {holder, expires_at}`), taken and cleared in their own
short transactions so no database lock is held during the network call. While a lease is live a second
refresh, and a plain read (the credential may be mid-rotation), get 409 CONFLICT with `Retry-After`. A
refresh that dies without clearing its lease blocks others for at most `LEASE_SECONDS`.
"""

from __future__ import annotations

import copy
import logging
import math
from datetime import datetime, timedelta
from typing import Any

import anyio
from pydantic import ValidationError
from sqlmodel import select

from providers.base import Account, Options, ProviderError
from schemas import targets as out
from schemas.errors import ApiError, issue
from schemas.platform_settings import PinterestSettings, TikTokSettings
from schemas.platforms import BY_KEY as PLATFORMS_BY_KEY
from schemas.platforms import PLATFORM_KEYS, PLATFORMS, Platform, public_platforms
from schemas.targets import BrandPath, IntegrationPath, ListIntegrationsRequest
from schemas.time import iso, parse_timestamp
from storage.pagination import older_page
from storage.tables.integrations import Integration
from tools.endpoint import Call, Endpoint, Reply
from tools.links import link
from tools.notifications import notify
from tools.operator.actions import INTEGRATION_STATUSES
from tools.services.accounts import account_of, outbound, provider_error, store_credentials

log = logging.getLogger("socialpub.targets")

LEASE_KEY = "refresh_lease"  # one of tools/services/accounts.py's SERVICE_STATE_KEYS
LEASE_SECONDS = 60
# Upper bound on one provider read; must stay well below LEASE_SECONDS so a lease never expires mid-call.
PROVIDER_TIMEOUT_SECONDS = 15.0
MAX_RETRY_AFTER = 3600

# Each kind of choice feeds one draft settings field; a returned value must be one that field accepts.
OPTION_FIELDS = {
    "creator_privacy_levels": (TikTokSettings, "privacy_level"),
    "pinterest_boards": (PinterestSettings, "board_id"),
}
# Kinds for which an empty list is a valid answer (an account may have no boards yet).
MAY_BE_EMPTY = {"pinterest_boards"}


# -- readiness ---------------------------------------------------------------------------------------------

def _platform_name(key: str) -> str:
    p = PLATFORMS_BY_KEY.get(key)
    return p.display_name if p else key


def _action(action: str, subject: str, label: str, guidance: str) -> dict[str, str]:
    return {"id": f"{action}:{subject}", "action": action, "label": label, "guidance": guidance}


def reconnect_action(integration_id: str, platform: str) -> dict[str, str]:
    name = _platform_name(platform)
    return _action("reconnect_integration", integration_id, f"Reconnect the {name} account",
                   f"This {name} account's authorisation has expired or was revoked. Accounts are managed by the "
                   "workspace operator, not through the API: ask them to reconnect it (dashboard, or `socialpub "
                   "integrations connect`), then read list_targets again.")


def connect_action(brand_id: str, platform: str) -> dict[str, str]:
    name = _platform_name(platform)
    return _action("connect_integration", f"{brand_id}:{platform}", f"Connect a {name} account",
                   f"No {name} account is connected to this brand. Ask the workspace operator to connect one "
                   f"(`socialpub integrations connect --brand {brand_id} --platform {platform}`), then read "
                   "list_targets again.")


def _blocker(code: str, scope: str, field_path: str, message: str, integration_id: str | None, platform: str,
             repair: dict[str, str]) -> dict[str, Any]:
    return {"severity": "blocker", "code": code, "scope": scope, "field_path": field_path, "message": message,
            "integration_id": integration_id, "platform": platform, "repair_action": repair}


def blockers_for(integration: Integration) -> list[dict[str, Any]]:
    """Why a Schedule may not target this account now (empty when it may). Preflight can reuse this."""
    i, p = integration, integration.platform
    name = _platform_name(p)
    found = []
    if p not in PLATFORMS_BY_KEY:
        found.append(_blocker("PLATFORM_UNSUPPORTED", "connection", "$.platform",
                              f"Platform {p!r} is not supported by this service.", i.id, p,
                              _action("contact_operator", i.id, "Ask the operator",
                                      "This account's platform is not in the platform registry; ask the "
                                      "operator to remove or replace the account.")))
    if i.status != "connected" or not i.credentials:
        found.append(_blocker("RECONNECT_REQUIRED", "connection", "$.connection_status",
                              f"The {name} account must be reconnected before anything can be scheduled to it "
                              f"(status {i.status}).", i.id, p, reconnect_action(i.id, p)))
    elif isinstance(i.permissions, dict) and i.permissions.get("publish") is False:
        found.append(_blocker("PUBLISH_PERMISSION_MISSING", "permissions", "$.permissions.publish",
                              f"The {name} account did not grant publishing permission.", i.id, p,
                              _action("reconnect_integration", i.id, f"Reconnect {name} with publishing permission",
                                      "Ask the workspace operator to reconnect this account and grant the "
                                      "publishing permission, then read list_targets again.")))
    return found[: out.MAX_BLOCKERS]


def _repair_actions(blockers: list[dict[str, Any]]) -> list[dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    for b in blockers:
        seen.setdefault(b["repair_action"]["id"], b["repair_action"])
    return list(seen.values())[: out.MAX_REPAIR_ACTIONS]


def _capabilities(key: str) -> dict[str, Any]:
    p: Platform | None = PLATFORMS_BY_KEY.get(key)
    if p is None:
        return {"platform_name": key, "account_modes": [], "post_types": [], "default_post_type": None,
                "settings_key": None, "dynamic_options": None}
    return {"platform_name": p.display_name, "account_modes": list(p.account_modes), "post_types": list(p.post_types),
            "default_post_type": p.default_post_type, "settings_key": p.settings_key,
            "dynamic_options": p.dynamic_options}


def target_row(i: Integration) -> dict[str, Any]:
    blockers = blockers_for(i)
    links: dict[str, Any] = {"integration": link("get_integration", brand_id=i.brand_id, integration_id=i.id)}
    p = PLATFORMS_BY_KEY.get(i.platform)
    if p is not None and p.dynamic_options and i.status == "connected":
        links["dynamic_options"] = link("get_target_dynamic_options", brand_id=i.brand_id, integration_id=i.id)
        links["refresh_dynamic_options"] = link("refresh_target_dynamic_options", brand_id=i.brand_id,
                                                integration_id=i.id)
    return {
        "integration_id": i.id, "platform": i.platform, "display_name": i.display_name, "username": i.username,
        "avatar_url": i.avatar_url, "connection_status": i.status, "schedulable": not blockers,
        "capabilities": _capabilities(i.platform), "blockers": blockers,
        "repair_actions": _repair_actions(blockers), "links": links,
    }


def discovery_row(brand_id: str, p: Platform) -> dict[str, Any]:
    repair = connect_action(brand_id, p.key)
    blockers = [_blocker("INTEGRATION_NOT_CONNECTED", "connection", "$.connection_status",
                         f"No {p.display_name} account is connected to this brand.", None, p.key, repair)]
    return {
        "integration_id": None, "platform": p.key, "display_name": None, "username": None, "avatar_url": None,
        "connection_status": "disconnected", "schedulable": False, "capabilities": _capabilities(p.key),
        "blockers": blockers, "repair_actions": [repair], "links": {},
    }


def _discoverable() -> tuple[Platform, ...]:
    # Hidden or internal platforms get no discovery row, as they are left out of the public capabilities.
    return public_platforms()


def _brand_integrations(call: Call) -> Any:
    assert call.caller is not None
    return select(Integration).where(Integration.workspace_id == call.caller.workspace_id,
                                     Integration.brand_id == call.brand_id)


async def list_targets(call: Call, req: BrandPath) -> out.TargetList:
    rows = list((await call.session.exec(
        _brand_integrations(call).order_by(Integration.created_at, Integration.id).limit(out.MAX_TARGETS + 1))).all())
    truncated = len(rows) > out.MAX_TARGETS
    rows = rows[: out.MAX_TARGETS]
    platforms = {r.platform for r in rows}
    if truncated:  # accounts beyond the bound still count: no discovery row for a platform the brand has
        assert call.caller is not None
        platforms |= set((await call.session.exec(
            select(Integration.platform).where(Integration.workspace_id == call.caller.workspace_id,
                                               Integration.brand_id == call.brand_id).distinct())).all())
    order = {key: n for n, key in enumerate(PLATFORM_KEYS)}
    keyed = [((order.get(r.platform, len(order)), 0, r.created_at.timestamp(), r.id), target_row(r)) for r in rows]
    keyed += [((order[p.key], 1, 0.0, ""), discovery_row(call.brand_id, p)) for p in _discoverable()
              if p.key not in platforms]
    keyed.sort(key=lambda kv: kv[0])
    return out.TargetList.model_validate({
        "brand_id": call.brand_id, "targets": [row for _, row in keyed], "truncated": truncated,
        "links": {"self": link("list_targets", brand_id=call.brand_id),
                  "integrations": link("list_integrations", brand_id=call.brand_id),
                  "platform_capabilities": link("get_platform_capabilities")},
    })


# -- older integration routes ------------------------------------------------------------------------------

def older_integration(i: Integration) -> out.Integration:
    return out.Integration.model_validate({"id": i.id, "platform": i.platform, "status": i.status, "brand_id": i.brand_id,
            "display_name": i.display_name, "username": i.username, "avatar_url": i.avatar_url,
            "permissions": i.permissions, "created_at": iso(i.created_at), "updated_at": iso(i.updated_at)})


async def list_integrations(call: Call, req: ListIntegrationsRequest) -> Reply[list[out.Integration]]:
    rows, pagination = await older_page(
        call.session, _brand_integrations(call).order_by(Integration.created_at, Integration.id), req.page, req.limit)
    return Reply(data=[older_integration(i) for i in rows], pagination=pagination)


async def _integration(call: Call, integration_id: str, *, lock: bool = False) -> Integration:
    query = _brand_integrations(call).where(Integration.id == integration_id)
    if lock:  # FOR UPDATE on PostgreSQL; SQLite write transactions are already exclusive (BEGIN IMMEDIATE)
        query = query.with_for_update().execution_options(populate_existing=True)
    found = (await call.session.exec(query)).first()
    if found is None:
        raise ApiError("NOT_FOUND", "No such integration in this brand, or not visible to this API key. "
                                    "Use an integration_id from list_targets.", next_action="list_targets")
    return found


async def get_integration(call: Call, req: IntegrationPath) -> out.Integration:
    return older_integration(await _integration(call, req.integration_id))


# -- dynamic options ---------------------------------------------------------------------------------------

def _failure(code: str, message: str, reason: str, i: Integration, *, next_action: str,
             issue_code: str | None = None, retry_after: float | None = None, retryable: bool | None = None,
             guidance: str | None = None, keep_changes: bool = False) -> ApiError:
    details: dict[str, Any] = {"reason": reason, "integration_id": i.id, "platform": i.platform}
    headers = {}
    if retry_after is not None:
        seconds = min(MAX_RETRY_AFTER, max(1, math.ceil(retry_after)))
        headers["Retry-After"] = str(seconds)
        details["retry_after_seconds"] = seconds
    issues = [issue("$.integration_id", issue_code, message)] if issue_code else []
    return ApiError(code, message, issues=issues, details=details, next_action=next_action, headers=headers,
                    retryable=retryable, repair_guidance=guidance, keep_changes=keep_changes)


def _reconnect(i: Integration, message: str, *, keep_changes: bool = False) -> ApiError:
    return _failure("DOMAIN_VALIDATION_FAILED", message, "reconnect_required", i, next_action="reconnect_integration",
                    issue_code="RECONNECT_REQUIRED", guidance=reconnect_action(i.id, i.platform)["guidance"],
                    keep_changes=keep_changes)


def _kind(i: Integration) -> str:
    p = PLATFORMS_BY_KEY.get(i.platform)
    if p is None or not p.dynamic_options:
        kinds = ", ".join(f"{q.key} ({q.dynamic_options})" for q in PLATFORMS if q.dynamic_options)
        raise _failure("DOMAIN_VALIDATION_FAILED",
                       f"{_platform_name(i.platform)} targets have no dynamic options; only {kinds} do.",
                       "dynamic_options_unsupported", i, next_action="list_targets",
                       issue_code="DYNAMIC_OPTIONS_UNSUPPORTED",
                       guidance="Call this route only for targets whose capabilities.dynamic_options is not null "
                                "(list_targets shows a dynamic_options link on those).")
    return p.dynamic_options


def _require_connected(i: Integration) -> None:
    if i.status != "connected":
        raise _reconnect(i, f"The {_platform_name(i.platform)} account must be reconnected (status {i.status}); "
                            "its choices cannot be read until then.")
    if not isinstance(i.credentials, dict) or not i.credentials:
        raise _reconnect(i, f"The {_platform_name(i.platform)} account has no stored authorisation; "
                            "it must be reconnected.")


def _lease_remaining(i: Integration, now: datetime) -> float | None:
    lease = (i.provider_state or {}).get(LEASE_KEY)
    if not isinstance(lease, dict):
        return None
    try:
        until = parse_timestamp(str(lease.get("expires_at")))
    except ValueError:
        return None  # unreadable lease: ignore it rather than block the account forever
    remaining = (until - now).total_seconds()
    return remaining if remaining > 0 else None


def _refresh_in_progress(i: Integration, remaining: float) -> ApiError:
    return _failure("CONFLICT", "Another refresh of this target's options is in progress; retry after it ends.",
                    "refresh_in_progress", i, next_action="wait_and_retry", retry_after=remaining, retryable=True,
                    guidance="Wait for the seconds in Retry-After, then send the request again.")


def _credential_expired(i: Integration, now: datetime) -> bool:
    expires = (i.credentials or {}).get("expires_at")
    if expires is None:
        return False
    try:
        return parse_timestamp(str(expires)) <= now
    except ValueError:
        return True  # fail closed: an unreadable expiry cannot support a safe read


def _provider(call: Call, i: Integration) -> Any:
    try:
        return call.rt.provider(i.provider)
    except KeyError:
        raise _failure("DEPENDENCY_UNAVAILABLE", "The provider adapter for this account is not installed.",
                       "provider_missing", i, next_action="contact_operator", retryable=False) from None


def _provider_failure(exc: ProviderError, i: Integration, *, keep_changes: bool = False) -> ApiError:
    name = _platform_name(i.platform)
    code, _ = provider_error(exc.kind)
    if exc.kind == "reauth_required":
        return _reconnect(i, f"{name} says this account's authorisation is no longer valid; it must be reconnected.",
                          keep_changes=keep_changes)
    if exc.kind == "rejected":
        return _failure(code, f"{name} refused to list this account's choices.",
                        "provider_rejected", i, next_action="reconnect_integration", issue_code="PROVIDER_REJECTED",
                        guidance="The account may lack a permission this read needs; ask the workspace operator "
                                 "to reconnect it with the requested permissions.", keep_changes=keep_changes)
    if exc.kind == "rate_limited":
        return _failure(code, f"{name} is rate limiting this account; no choices were read.",
                        "provider_rate_limited", i, next_action="wait_and_retry",
                        retry_after=exc.retry_after if exc.retry_after is not None else 60, keep_changes=keep_changes)
    if exc.kind == "malformed":
        return _malformed(i, keep_changes=keep_changes)
    return _unavailable(i, keep_changes=keep_changes, retry_after=exc.retry_after)


def _unavailable(i: Integration, *, keep_changes: bool = False, retry_after: float | None = None) -> ApiError:
    return _failure("DEPENDENCY_UNAVAILABLE", f"{_platform_name(i.platform)} did not answer; no choices were read.",
                    "provider_unavailable", i, next_action="wait_and_retry", retryable=True,
                    retry_after=retry_after if retry_after is not None else 5, keep_changes=keep_changes)


def _malformed(i: Integration, *, keep_changes: bool = False) -> ApiError:
    return _failure("DEPENDENCY_UNAVAILABLE",
                    f"{_platform_name(i.platform)} answered with data that is not valid choices; none are returned.",
                    "provider_malformed_data", i, next_action="contact_operator", retryable=False,
                    guidance="Retrying is unlikely to help until the provider answers correctly; report the "
                             "request_id to the operator. Do not reuse choices from an earlier read.",
                    keep_changes=keep_changes)


async def _ask(provider: Any, account: Account, kind: str, *, refresh: bool, i: Integration,
               keep_changes: bool = False) -> Options:
    try:
        with anyio.fail_after(PROVIDER_TIMEOUT_SECONDS):
            result = await provider.dynamic_options(account, kind, refresh=refresh)
    except ProviderError as exc:
        raise _provider_failure(exc, i, keep_changes=keep_changes) from None
    except TimeoutError:
        raise _unavailable(i, keep_changes=keep_changes) from None
    except Exception:
        log.exception("provider %s failed reading %s for %s", getattr(provider, "name", "?"), kind, i.id)
        raise _failure("DEPENDENCY_UNAVAILABLE", "The provider adapter failed; no choices were read.",
                       "provider_error", i, next_action="contact_operator", retryable=False,
                       keep_changes=keep_changes) from None
    if not isinstance(result, Options):
        raise _malformed(i, keep_changes=keep_changes)
    return result


def _clean_options(result: Options, kind: str) -> tuple[list[dict[str, str]], dict[str, bool] | None] | None:
    """The provider's answer reduced to `{value, label}` choices; None when it breaks the contract anywhere."""
    if result.kind != kind or not isinstance(result.options, list) or len(result.options) > out.MAX_OPTIONS:
        return None
    if not result.options and kind not in MAY_BE_EMPTY:
        return None
    model, field = OPTION_FIELDS[kind]
    options, seen = [], set()
    for o in result.options:
        if not isinstance(o, dict):
            return None
        value, label = o.get("value"), o.get("label")
        if not isinstance(value, str) or not isinstance(label, str) or value in seen:
            return None
        if not label.strip() or len(label) > out.OPTION_LABEL_MAX:
            return None
        try:  # a choice is only useful if the draft field it feeds accepts it
            model.model_validate({field: value})
        except ValidationError:
            return None
        seen.add(value)
        options.append({"value": value, "label": label})
    constraints = None
    if kind == "creator_privacy_levels":
        names = set(out.PrivacyConstraints.model_fields)
        raw = result.constraints
        if not isinstance(raw, dict) or set(raw) != names or not all(isinstance(raw[n], bool) for n in names):
            return None
        constraints = {n: raw[n] for n in out.PrivacyConstraints.model_fields}
    return options, constraints


def _payload(call: Call, i: Integration, kind: str, options: list[dict[str, str]],
             constraints: dict[str, bool] | None) -> out.DynamicOptions:
    body: dict[str, Any] = {"brand_id": i.brand_id, "integration_id": i.id, "platform": i.platform, "kind": kind,
                            "options": options}
    if constraints is not None:
        body["constraints"] = constraints
    body["retrieved_at"] = iso(call.rt.clock.now())
    body["links"] = {"self": link("get_target_dynamic_options", brand_id=i.brand_id, integration_id=i.id),
                     "refresh": link("refresh_target_dynamic_options", brand_id=i.brand_id, integration_id=i.id)}
    return out.DynamicOptions.model_validate(body)


async def get_target_dynamic_options(call: Call, req: IntegrationPath) -> out.DynamicOptions:
    i = await _integration(call, req.integration_id)
    kind = _kind(i)
    _require_connected(i)
    remaining = _lease_remaining(i, call.now)
    if remaining is not None:  # the credential may be mid-rotation: not a safe read
        raise _refresh_in_progress(i, remaining)
    if _credential_expired(i, call.now):
        raise _failure("DOMAIN_VALIDATION_FAILED",
                       "The stored credential for this account has expired, and a read never refreshes it.",
                       "credential_refresh_required", i, next_action="refresh_target_dynamic_options",
                       issue_code="CREDENTIAL_REFRESH_REQUIRED",
                       guidance="Call refresh_target_dynamic_options (POST, integrations:write) to refresh the "
                                "credential and read the choices.")
    provider, account = _provider(call, i), account_of(i, call.rt.settings)
    # No transaction, lock or pooled connection is held while the provider answers.
    async with call.rt.db.outside_transaction(call.session):
        with outbound(call.rt.settings):
            result = await _ask(provider, account, kind, refresh=False, i=i)
    if result.new_credentials is not None or result.new_status is not None:
        # A read must not rotate anything; the adapter broke its contract. Nothing is stored.
        log.warning("provider %s returned new credentials or status on a plain read of %s", i.provider, i.id)
    cleaned = _clean_options(result, kind)
    if cleaned is None:
        raise _malformed(i)
    return _payload(call, i, kind, *cleaned)


async def refresh_target_dynamic_options(call: Call, req: IntegrationPath) -> out.DynamicOptions:
    i = await _integration(call, req.integration_id, lock=True)
    kind = _kind(i)
    _require_connected(i)
    remaining = _lease_remaining(i, call.now)
    if remaining is not None:
        raise _refresh_in_progress(i, remaining)
    provider, account = _provider(call, i), account_of(i, call.rt.settings)

    # 1. take the lease (committed at once, so the lock is not held during the provider call)
    lease = {"holder": call.request_id, "expires_at": iso(call.now + timedelta(seconds=LEASE_SECONDS))}
    i.provider_state = {**(i.provider_state or {}), LEASE_KEY: lease}
    call.session.add(i)

    # 2. ask the provider, outside any transaction and without this process's SQLite writer turn
    failure: ApiError | None = None
    result: Options | None = None
    async with call.rt.db.outside_transaction(call.session):
        try:
            with outbound(call.rt.settings):
                result = await _ask(provider, account, kind, refresh=True, i=i, keep_changes=True)
        except ApiError as exc:
            failure = exc

    # 3. record what happened and release the lease, in one short transaction
    i = await _integration(call, req.integration_id, lock=True)
    state = dict(i.provider_state or {})
    held = state.get(LEASE_KEY)
    if not (isinstance(held, dict) and held.get("holder") == call.request_id):
        # Only reachable when the provider outlived the lease and another refresh took over.
        log.warning("refresh of %s lost its lease [%s]", i.id, call.request_id)
        raise _refresh_in_progress(i, LEASE_SECONDS)
    state.pop(LEASE_KEY)
    i.provider_state = state
    call.session.add(i)
    if failure is not None:
        if (failure.details.get("reason") == "reconnect_required") and i.status == "connected":
            i.status = "needs_reauth"
            i.updated_at = call.now
            await notify.integration_status_changed(call.session, call.now, i, "connected")
        raise failure  # keep_changes: the lease release and any reauthorisation mark are committed
    assert result is not None
    # Persist a rotated credential even when the choices are unusable: the old one may no longer work.
    if result.new_credentials is not None:
        if not isinstance(result.new_credentials, dict) or not result.new_credentials:
            raise _malformed(i, keep_changes=True)
        store_credentials(i, copy.deepcopy(result.new_credentials), call.rt.settings, call.rt.providers)
    if result.new_status is not None and result.new_status != i.status:
        if result.new_status not in INTEGRATION_STATUSES:
            raise _malformed(i, keep_changes=True)
        previous, i.status = i.status, result.new_status
        i.updated_at = call.now
        await notify.integration_status_changed(call.session, call.now, i, previous)
    cleaned = _clean_options(result, kind)
    if cleaned is None:
        raise _malformed(i, keep_changes=True)
    return _payload(call, i, kind, *cleaned)


ENDPOINTS = [
    Endpoint(
        name="list_targets", handler=list_targets, method="GET", path="/v1/brands/{brand_id}/targets",
        toolset="targets", scopes=("integrations:read",), request=BrandPath, response=out.TargetList,
        title="List targets",
        summary="List a brand's publishing targets: each account's status, schedulability, "
                "capabilities and repairs, plus unconnected platforms.",
        guidance="Read-only; calls no provider. Use a schedulable row's integration_id; for "
                 "TikTok and Pinterest read links.dynamic_options first.",
    ),
    Endpoint(
        name="list_integrations", handler=list_integrations, method="GET", path="/v1/brands/{brand_id}/integrations",
        toolset="targets", scopes=("integrations:read",), request=ListIntegrationsRequest, response=out.Integration,
        list_shape="older", title="List integrations",
        summary="List a brand's connected accounts in the older page/limit shape, oldest first.",
        guidance="Read-only; never returns tokens. list_targets adds readiness and repairs.",
    ),
    Endpoint(
        name="get_integration", handler=get_integration, method="GET",
        path="/v1/brands/{brand_id}/integrations/{integration_id}", toolset="targets", scopes=("integrations:read",),
        request=IntegrationPath, response=out.Integration, title="Get integration",
        summary="Read one connected account of a brand: platform, status, display name, username, avatar and "
                "permissions.",
        guidance="Read-only; never returns tokens or provider account IDs.",
    ),
    Endpoint(
        name="get_target_dynamic_options", handler=get_target_dynamic_options, method="GET",
        path="/v1/brands/{brand_id}/targets/{integration_id}/dynamic-options", toolset="targets",
        scopes=("integrations:read",), request=IntegrationPath, response=out.DynamicOptions, open_world=True,
        title="Get target dynamic options",
        summary="Read a TikTok target's privacy levels, or a Pinterest target's boards, live from "
                "the provider.",
        guidance="Never cached or guessed; changes nothing. Carry the chosen value into the "
                 "draft. Expired: refresh_target_dynamic_options.",
    ),
    Endpoint(
        name="refresh_target_dynamic_options", handler=refresh_target_dynamic_options, method="POST",
        path="/v1/brands/{brand_id}/targets/{integration_id}/dynamic-options", toolset="targets",
        scopes=("integrations:write",), request=IntegrationPath, response=out.DynamicOptions, open_world=True,
        title="Refresh target dynamic options",
        summary="Refresh a TikTok or Pinterest target's live choices, rotating its credential if "
                "the provider issues one.",
        guidance="Body {}. Changes no content, never returns a credential. Prefer "
                 "get_target_dynamic_options.",
    ),
]
