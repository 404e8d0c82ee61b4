"""Response shapes of publications, History, the publish receipt and provider cleanup.

Nothing here has a field for a provider's words, tokens, payloads or idempotency tokens; the receipt and
cleanup shapes have no field for provider post IDs either (the spec's Publication has `publish_id`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Link
from schemas.paging import OlderLimit, Page, SortDir
from schemas.requests import PathParam, QueryParam, RequestModel
from schemas.states import TargetState

HISTORY_MAX = 50
HISTORY_DEFAULT = 20
RECEIPT_TARGETS_MAX = 20  # a Schedule has 1 to 20 targets, so one run has at most 20
CLEANUP_AUTHORITY_PATTERN = r"^cla_[0-9]{10}\.[A-Za-z0-9_-]{43}$"

PublicationStatus = Literal["processing", "published", "failed"]
CleanupStatus = Literal["queued", "done", "failed"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReceiptNextAction(_Out):
    action: str
    guidance: str


# -- publications and History ------------------------------------------------------------------------------


class Publication(_Out):
    """Spec: Publication. Exactly its fields."""

    id: str
    platform: str
    post_id: str = Field(description="The content item that was published.")
    post_name: str | None
    post_type: str | None
    media_type: str | None = Field(description="image, video, carousel, or null for text.")
    status: PublicationStatus
    source: Literal["calendar", "queue"] | None
    failure_reason: str | None = Field(description="Safe text; never the platform's own error message.")
    integration_id: str
    publish_id: str | None = Field(description="The platform-specific post ID (spec), or null before publishing.")
    published_at: str | None
    created_at: str
    updated_at: str


class HistoryItem(_Out):
    id: str = Field(description="The publication ID.")
    platform: str
    integration_id: str
    post_id: str
    post_name: str | None
    post_type: str | None
    media_type: str | None
    status: PublicationStatus
    failure_reason: str | None
    permalink_url: str | None = Field(
        description="Public http(s) link to the post; null unless published (and not since removed by provider "
                    "cleanup).")
    published_at: str | None
    created_at: str
    updated_at: str


class HistoryPage(_Out):
    items: list[HistoryItem]
    has_more: bool


# -- publish receipt -----------------------------------------------------------------------------------------


class ReceiptTarget(_Out):
    integration_id: str
    platform: str
    state: TargetState = Field(description="pending, attempting or retry_wait while the run works on it; then "
                                           "published, failed or action_required.")
    attempts: int
    attempted_at: str | None = Field(description="When the latest attempt started.")
    settled_at: str | None = Field(description="When the target reached its final state.")
    failure_reason: str | None = Field(description="Safe text; never the platform's own error message.")
    next_action: str | None = Field(description="What to do about a failed or action_required target.")
    has_permalink: bool = Field(description="True when a public link exists; read it from list_history.")
    cleanup_status: CleanupStatus | None = Field(description="Provider cleanup of this post: queued, done, failed, "
                                                             "or null when never requested.")


class ReceiptSummary(_Out):
    total: int
    published: int
    failed: int
    action_required: int
    in_progress: int = Field(description="Targets still pending, attempting or waiting to retry.")


class Receipt(_Out):
    execution_id: str = Field(description="The run's opaque correlation handle (the Schedule's latest_execution.id); "
                                          "not a provider ID.")
    status: Literal["processing", "published", "partially_published", "failed"]
    started_at: str
    finished_at: str | None
    bounded: bool = Field(description="True when the run has finished: no target is pending, attempting or "
                                      "waiting to retry.")
    summary: ReceiptSummary
    targets: list[ReceiptTarget] = Field(max_length=RECEIPT_TARGETS_MAX)


class ReceiptLinks(_Out):
    self: Link
    history: Link
    provider_cleanup: Link | None = Field(
        default=None, description="Present only with cleanup_authority.", exclude_if=lambda v: v is None)


class ReceiptResult(_Out):
    schedule_id: str
    receipt: Receipt | None = Field(description="The latest run of the Schedule; null while none has started.")
    cleanup_authority: str | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="Present only when the run is bounded and has published posts not yet cleaned up: an opaque, "
                    "expiring capability for request_provider_cleanup on exactly this run.")
    cleanup_authority_expires_at: str | None = Field(default=None, exclude_if=lambda v: v is None)
    next_actions: list[ReceiptNextAction] = Field(max_length=5)
    links: ReceiptLinks


# -- provider cleanup ----------------------------------------------------------------------------------------


class CleanupTarget(_Out):
    integration_id: str
    platform: str
    state: TargetState
    cleanup: Literal["queued", "skipped"]
    skip_reason: Literal["not_published", "cleanup_in_progress", "already_cleaned_up"] | None


class CleanupLinks(_Out):
    receipt: Link


class CleanupResult(_Out):
    schedule_id: str
    execution_id: str
    outcome: Literal["cleanup_queued", "replayed"]
    queued: int
    skipped: int
    targets: list[CleanupTarget] = Field(max_length=RECEIPT_TARGETS_MAX)
    links: CleanupLinks


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Brand ID, from get_context.")]


class ListPublicationsRequest(RequestModel):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50
    sort_by: Literal["created_at", "updated_at"] = QueryParam("created_at", "Sort key.")
    sort_dir: SortDir = "desc"


class ListHistoryRequest(RequestModel):
    brand_id: BrandId
    limit: int = QueryParam(HISTORY_DEFAULT, f"Items per page, 1 to {HISTORY_MAX}.", ge=1,
                            le=HISTORY_MAX)
    page: Page = 1

ScheduleId = Annotated[str, PathParam("Schedule ID, from create_schedule or list_schedules.")]


class ReceiptRequest(RequestModel):
    brand_id: BrandId
    schedule_id: ScheduleId


class ProviderCleanupRequest(RequestModel):
    brand_id: BrandId
    schedule_id: ScheduleId
    cleanup_authority: str = Field(
        max_length=64, pattern=CLEANUP_AUTHORITY_PATTERN,
        description="From this Schedule's receipt, unchanged and opaque; provider post IDs are refused.")
