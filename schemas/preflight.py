"""Input and output types of the pure preflight rules engine (`tools.schedules.rules_engine.evaluate`).

Inputs are plain facts the caller has already loaded: the content item's copy and settings, the
integrations and media found in the brand, the requested time and approval, the clock, the caller's scopes
and optional plan facts. Outputs are the issue objects of the spec's Preflight result. No database types
appear here, so the engine runs anywhere (preflight, the Schedule routes, tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.content import id_set
from schemas.envelope import Link
from schemas.media import MediaKind
from schemas.platform_settings import SETTINGS_MODELS, Settings
from schemas.platforms import BY_KEY
from schemas.requests import PathParam, RequestModel
from schemas.states import ApprovalStatus

Severity = Literal["blocker", "warning"]
IssueScope = Literal["target", "copy", "settings", "media", "schedule", "approval", "policy", "plan"]


class _Facts(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, arbitrary_types_allowed=True)


# --- inputs -----------------------------------------------------------------------------------------------

class CopyFacts(_Facts):
    """One copy object (`single_copy` or `platform_copy[platform]`)."""

    caption: str | None = None
    hashtags: tuple[str, ...] = ()
    title: str | None = None


class ContentFacts(_Facts):
    """What preflight checks of a content item. `settings` maps a platform key (`tiktok`) to its validated
    settings model, or None when the item has no settings object for that platform."""

    id: str
    brand_id: str | None = None
    updated_at: datetime | None = None
    copy_mode: Literal["single", "per_platform"] = "single"
    single_copy: CopyFacts | None = None
    platform_copy: Mapping[str, CopyFacts | None] | None = None
    settings: Mapping[str, Settings | None] = Field(default_factory=dict)

    @classmethod
    def from_content_item(cls, item: Mapping[str, Any]) -> ContentFacts:
        """Build from a content item in its released JSON shape (`{..., "tiktok_settings": {...}}`).
        Settings objects are validated with the platform's settings model."""
        settings: dict[str, Settings | None] = {}
        for key, model in SETTINGS_MODELS.items():
            raw = item.get(BY_KEY[key].settings_key or "")
            settings[key] = None if raw is None else raw if isinstance(raw, Settings) else model.model_validate(raw)
        platform_copy = item.get("platform_copy")
        return cls(
            id=item["id"], brand_id=item.get("brand_id"), updated_at=item.get("updated_at"),
            copy_mode=item.get("copy_mode") or "single",
            single_copy=CopyFacts.model_validate(item["single_copy"]) if item.get("single_copy") else None,
            platform_copy=None if platform_copy is None else {
                k: (CopyFacts.model_validate(v) if v is not None else None) for k, v in platform_copy.items()},
            settings=settings,
        )


class IntegrationFacts(_Facts):
    id: str
    platform: str
    status: str  # connected | expired | needs_reauth | disconnected | ...
    display_name: str | None = None
    # The account's own text limit where the network sets it per account (a Mastodon instance's
    # configuration.statuses.max_characters, read at connect time); None: the registry's limit.
    text_max: int | None = None


class MediaFacts(_Facts):
    """A media row as preflight needs it. `status` is the media status (`completed` is ready)."""

    id: str
    status: str
    kind: MediaKind | None = None
    content_type: str | None = None
    width: int | None = None
    height: int | None = None
    duration: float | None = None  # seconds
    size: int | None = None  # bytes
    sha256: str | None = None


class PlanFacts(_Facts):
    """Plan limits that apply within a brand (from the plans route). None means no limit."""

    plan_id: str | None = None
    max_networks_per_brand: int | None = None
    max_media_per_post: int | None = None
    # Platforms the brand already publishes to (connected integrations); counted with the requested ones.
    connected_networks: tuple[str, ...] = ()
    upgrade_url: str | None = None


class PreflightFacts(_Facts):
    content: ContentFacts
    integration_ids: tuple[str, ...]  # as requested, in order
    integrations: Mapping[str, IntegrationFacts]  # those found in the brand, by ID
    media: Mapping[str, MediaFacts]  # media of the brand referenced by the item, by ID
    now: datetime
    scheduled_at: datetime | str | None = None  # a string is parsed (malformed -> SCHEDULED_AT_MALFORMED)
    approval_status: ApprovalStatus | None = None
    scopes: frozenset[str] = frozenset()
    plan: PlanFacts | None = None


# --- outputs ----------------------------------------------------------------------------------------------

class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RepairAction(_Out):
    id: str = Field(description="Stable for the same issue: `ra_` + a hash of code, integration and field path.")
    action: str = Field(description="Bounded action identifier, e.g. reconnect_integration, shorten_text.")
    label: str
    guidance: str


class Size(_Out):
    width: int
    height: int


class Box(_Out):
    x: int
    y: int
    width: int
    height: int


class Padding(_Out):
    left: int
    top: int
    right: int
    bottom: int


class RepairOption(_Out):
    """One deterministic transform for one media item and target, or the reason none is safe."""

    available: bool
    mode: Literal["centre_crop", "pad"]
    id: str | None = Field(None, description="`ro_` + hash of every input below; send it to the media "
                                             "repair-derivative route. Null when unavailable.")
    integration_id: str
    platform: str
    post_type: str
    media_id: str
    source_sha256: str | None
    policy_version: str
    source: Size | None = None
    target: Size | None = Field(None, description="Size of the derived media.")
    crop: Box | None = Field(None, description="centre_crop: the kept region, in source pixels.")
    resize: Size | None = Field(None, description="pad: the source scaled to this size before padding.")
    pad: Padding | None = Field(None, description="pad: borders added around the resized source, in target "
                                                  "pixels.")
    safe_area: Box | None = Field(None, description="The region of the target that shows source content.")
    crop_loss: float | None = Field(None, description="Share of the source area cut away (0 to 1).")
    pad_share: float | None = Field(None, description="Share of the target area that is padding (0 to 1).")
    scale: float | None = Field(None, description="Scale factor applied to the source.")
    unavailable_code: str | None = None
    explanation: str | None = None


class Issue(_Out):
    severity: Severity
    code: str
    scope: IssueScope
    field_path: str
    message: str
    integration_id: str | None
    platform: str | None
    repair_action: RepairAction
    repair_options: list[RepairOption] | None = Field(
        None, exclude_if=lambda v: v is None, description="On aspect-ratio and dimension blockers only: deterministic transforms (or why none "
                          "is safe).")

    def to_dict(self) -> dict[str, Any]:
        """The API shape: `repair_options` appears only where the issue has them."""
        return self.model_dump(mode="json")


class TargetReport(_Out):
    integration_id: str
    platform: str | None
    display_name: str | None
    connection_status: str  # the integration status, or `not_found`
    post_type: str | None
    can_schedule: bool
    issues: list[Issue]
    blockers: list[Issue]
    warnings: list[Issue]
    issues_omitted: int = 0


class EngineResult(_Out):
    validation_version: str
    can_schedule: bool
    scheduling_allowed: bool = Field(description="False when a policy blocker (authority) stops scheduling.")
    targets: list[TargetReport]
    issues: list[Issue] = Field(description="Every issue: the targets' and the request-wide ones.")
    blockers: list[Issue]
    warnings: list[Issue]
    next_actions: list[str]


# --- the endpoint's request and result ------------------------------------------------------------------

class PreflightContentRef(_Out):
    id: str
    brand_id: str
    updated_at: str


class PreflightRequestEcho(_Out):
    integration_ids: list[str]
    scheduled_at: str | None = Field(description="Normalised to UTC with milliseconds; null when absent or "
                                                  "malformed (a malformed time is a blocker).")
    approval_status: ApprovalStatus | None


class PreflightPolicy(_Out):
    scheduling_allowed: bool


class PreflightTarget(_Out):
    integration_id: str
    platform: str | None
    display_name: str | None
    connection_status: str
    post_type: str | None
    can_schedule: bool
    issues: list[Issue]
    blockers: list[Issue]
    warnings: list[Issue]


class PreflightLinks(_Out):
    self: Link
    targets: Link
    create_schedule: Link | None = Field(None, exclude_if=lambda v: v is None,
                                        description="Only when can_schedule; its required scopes follow the "
                                                    "requested approval (approved also needs publish:execute).")


class PreflightResult(_Out):
    validation_version: str
    fingerprint: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    content_item: PreflightContentRef
    request: PreflightRequestEcho
    policy: PreflightPolicy
    can_schedule: bool
    target_count: int
    targets: list[PreflightTarget]
    issues: list[Issue]
    blockers: list[Issue]
    warnings: list[Issue]
    next_actions: list[str]
    links: PreflightLinks


# -- request models ------------------------------------------------------------------------------------------

IntegrationIds = Annotated[
    id_set(20, "1 to 20 integration IDs of this brand, unique, ascending."), Field(min_length=1)]


class PreflightRequest(RequestModel):
    brand_id: Annotated[str, PathParam("Brand ID.")]
    content_item_id: Annotated[str, PathParam("Content item ID, from create_content_item.")]
    integration_ids: IntegrationIds
    scheduled_at: Annotated[str, Field(max_length=64, description=(
        "ISO 8601 with an explicit offset or Z. A time without one, or in the past, is a blocker."))] | None = None
    approval_status: ApprovalStatus | None = Field(
        None, description="The approval the Schedule would carry: pending_review for a held workflow; approved "
                          "also needs publish:execute.")
