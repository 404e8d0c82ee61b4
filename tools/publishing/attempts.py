"""Provider attempts of the publishing worker: what one target sends (`prepare`), the call itself outside any
transaction (`call`), and the safe words a failure is stored with (`reason`).

A target attempted before (a crash, a timeout or a retry) first asks the provider for its idempotency token
(`find_post`, or an exact match among the account's posts for networks without one) and publishes again, with
the same token, only when the provider knows no such post. A provider's own words never reach the tables:
failure reasons are our own safe text (tools/services/redaction.py).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
from sqlmodel import col, select

from providers.base import Account, PostRequest, PostResult, ProviderError
from schemas.platforms import BY_KEY
from schemas.textcount import compose_text
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.media import Media
from storage.tables.publishing import PublishTarget, Schedule
from storage.vault import VaultError
from tools.media.items import asset_url
from tools.notifications import notify
from tools.publishing.steps import Tx
from tools.runtime import Runtime
from tools.services.accounts import account_of, outbound
from tools.services.accounts import store_credentials as store_sealed
from tools.services.redaction import ADAPTER_MARK, FAILURE_MAX, GENERIC_FAILURE, SAFE_FAILURES
from tools.services.telemetry import observe_provider_call

log = logging.getLogger("socialpub.publishing")

PROVIDER_TIMEOUT_SECONDS = 120.0  # a provider call that does not answer counts as a transient failure
READY_MEDIA = "completed"

# Safe failure text per provider error kind: never the provider's own words. The same sentences the receipt,
# publications and History show (tools/services/redaction.py), so what is stored is what clients read.
FAILURE_TEXT = {kind: text for kind, (text, _action) in SAFE_FAILURES.items()}
VAULT_LOCKED = ("The account's stored credentials cannot be opened by this service (its vault key is missing or "
                "changed); nothing was sent. The operator must restore the vault key, then schedule the post anew.")


def target_token(execution_id: str, integration_id: str) -> str:
    """Stable for every attempt of one target, unique across targets: what the provider dedupes on."""
    return "sp_" + hashlib.sha256(f"{execution_id}|{integration_id}".encode()).hexdigest()[:40]


@dataclass
class Attempt:
    """One recorded attempt of a target, ready to send."""

    provider: Any
    account: Account
    post: PostRequest
    recover: bool  # attempted before: ask the provider for the token before publishing again
    since: datetime | None = None  # when the run's target was made: the window an earlier post can be in
    schedule_id: str | None = None


@dataclass
class Outcome:
    """What the provider answered: a post, or an error (never both)."""

    result: PostResult | None
    error: ProviderError | None
    seconds: float


class Skip(Exception):
    """A target that cannot be attempted: settle it at once with this state and safe reason."""

    def __init__(self, state: str, reason: str) -> None:
        super().__init__(reason)
        self.state, self.reason = state, reason


def platform_settings(item: ContentItem | None, platform: str) -> dict[str, Any] | None:
    known = BY_KEY.get(platform)
    if item is None or known is None or not known.settings_key:
        return None
    return item.settings.get(known.settings_key)


async def media_rows(s: Any, brand_id: str, ids: list[str]) -> dict[str, Media]:
    if not ids:
        return {}
    rows = (await s.exec(select(Media).where(Media.brand_id == brand_id, col(Media.id).in_(ids)))).all()
    return {m.id: m for m in rows}


def build_post(item: ContentItem, integration: Integration, media: dict[str, Media], rt: Runtime,
               token: str) -> PostRequest:
    platform = integration.platform
    known = BY_KEY.get(platform)
    name = known.display_name if known else platform
    settings: dict[str, Any] = {}
    if known is not None and known.settings_key:
        found = item.settings.get(known.settings_key)
        if found is None:
            raise Skip("failed", f"The content item has no {known.settings_key}, so {name} was skipped.")
        settings = dict(found)
    copy = ((item.platform_copy or {}).get(platform) if item.copy_mode == "per_platform" else item.single_copy)
    if copy is None:
        raise Skip("failed", f"The content item has no copy for {name}, so it was skipped.")

    def media_list(ids: list[str]) -> list[dict[str, Any]]:
        out = []
        for media_id in ids:
            m = media.get(media_id)
            if m is None or m.status != READY_MEDIA:
                raise Skip("failed", f"Media {media_id} of this post is missing or not ready, so {name} was "
                                     f"skipped.")
            out.append({"url": asset_url(rt.settings, m.asset_id), "content_type": m.content_type,
                        "width": m.width, "height": m.height, "duration": m.duration})
        return out

    parts = [{**part, "media": media_list(list(part.get("media_ids") or []))}
             for part in settings.get("thread_parts") or []]
    return PostRequest(
        platform=platform, post_type=settings.get("post_type") or (known.default_post_type if known else None),
        text=compose_text(copy.get("caption"), tuple(copy.get("hashtags") or ())),
        title=settings.get("title") or copy.get("title"), media=media_list(list(settings.get("media_ids") or [])),
        settings=settings, thread_parts=parts, idempotency_token=token)


async def prepare(tx: Tx, rt: Runtime, target: PublishTarget, schedule: Schedule) -> Attempt:
    """What this target's attempt sends, to whom; `Skip` when it cannot be attempted (nothing is sent)."""
    integration = await tx.get(Integration, target.integration_id)
    if integration is None or integration.brand_id != target.brand_id:
        raise Skip("action_required", "The account is no longer connected to this brand; connect it again and "
                                      "schedule the post anew.")
    if integration.status != "connected":
        if integration.status in notify.NEEDS_REFRESH_STATUSES:
            await notify.integration_needs_refresh(tx.session, rt.clock.now(), integration)
        raise Skip("action_required", "The account needs reconnecting before it can publish; nothing was sent.")
    provider = rt.providers.get(integration.provider)
    if provider is None:
        raise Skip("failed", "No publishing adapter is available for this account; nothing was sent.")
    item = await tx.get(ContentItem, schedule.content_item_id)
    if item is None:
        raise Skip("failed", "The content item no longer exists; nothing was sent.")
    settings = platform_settings(item, integration.platform) or {}
    ids = list(settings.get("media_ids") or [])
    for part in settings.get("thread_parts") or []:
        ids.extend(part.get("media_ids") or [])
    post = build_post(item, integration, await media_rows(tx.session, schedule.brand_id, ids), rt,
                      target.idempotency_token)
    try:
        account = account_of(integration, rt.settings)
    except VaultError:
        # This process cannot open the stored credentials (e.g. a replica without the shared
        # SOCIALPUB_SECRET_KEYS): settled once, not retried in a loop, and said plainly to the operator.
        log.error("integration %s: its stored credentials cannot be decrypted with this process's vault keys; "
                  "restore the vault key (SOCIALPUB_SECRET_KEYS or the key file) that encrypted them",
                  integration.id)
        raise Skip("action_required", VAULT_LOCKED) from None
    return Attempt(provider, account, post, recover=target.state == "attempting" or target.attempts > 0,
                   since=target.created_at, schedule_id=schedule.id)


async def call(rt: Runtime, attempt: Attempt, target_id: str) -> Outcome:
    """Send the attempt (after looking for an earlier one's post when recovering), within
    PROVIDER_TIMEOUT_SECONDS and the address policy (`outbound`); whatever goes wrong is a ProviderError of the
    outcome, never raised."""
    result: PostResult | None = None
    error: ProviderError | None = None
    started = time.perf_counter()
    try:
        with anyio.fail_after(PROVIDER_TIMEOUT_SECONDS), outbound(rt.settings):
            if attempt.recover:
                result = await find_earlier(attempt)
            if result is None:
                result = await attempt.provider.publish(attempt.account, attempt.post)
    except ProviderError as exc:
        error = exc
    except TimeoutError:
        error = ProviderError("transient", "provider call timed out")
    except Exception:
        log.exception("provider %s failed on target %s", attempt.account.platform, target_id)
        error = ProviderError("transient", "provider call raised")
    seconds = time.perf_counter() - started
    observe_provider_call(attempt.account.platform, error.kind if error else None, seconds)
    return Outcome(result, error, seconds)


async def find_earlier(attempt: Attempt) -> PostResult | None:
    """The post an earlier attempt made: by token, or (networks without idempotency keys, providers/base.py
    `find_post_matching`) by an exact match of the post among the account's posts since the run began."""
    found = await attempt.provider.find_post(attempt.account, attempt.post.idempotency_token)
    matching = getattr(attempt.provider, "find_post_matching", None)
    if found is None and matching is not None and attempt.since is not None:
        found = await matching(attempt.account, attempt.post, attempt.since)
    return found


def reason(error: ProviderError | None, kind: str) -> str:
    """The adapter's own safe sentence when it wrote one, else the fixed text of the kind."""
    if error is not None and error.safe_reason:
        return (ADAPTER_MARK + error.safe_reason)[:FAILURE_MAX]
    return FAILURE_TEXT.get(kind, GENERIC_FAILURE)


async def store_credentials(tx: Tx, rt: Runtime, now: datetime, account: Account) -> None:
    """Credentials the provider rotated during the call (the old ones may no longer work), sealed again."""
    integration = await tx.get(Integration, account.integration_id)
    if integration is not None and isinstance(account.credentials, dict) and account.credentials:
        store_sealed(integration, account.credentials, rt.settings, rt.providers)
        integration.updated_at = now
