"""Targets (connected accounts with readiness), the older Integration shape and live dynamic options.

No model here has a field for a provider token, provider account ID or provider profile: what is not
declared cannot be returned (tests validate every success payload against these models).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Link
from schemas.ids import Id
from schemas.paging import OlderLimit, Page
from schemas.platforms import PLATFORMS
from schemas.requests import PathParam, RequestModel

# Bounds of the per-target lists (a target has at most a few problems; the bound keeps replies small).
MAX_BLOCKERS = 10
MAX_REPAIR_ACTIONS = 5
# Integrations listed by list_targets; beyond this `truncated` is true and list_integrations pages the rest.
MAX_TARGETS = 100
# Choices one dynamic-options read may return; a provider answering more is treated as malformed.
MAX_OPTIONS = 1000
OPTION_LABEL_MAX = 300
DynamicOptionsKind = Literal[tuple(p.dynamic_options for p in PLATFORMS if p.dynamic_options)]


def _drop_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TargetRepairAction(_Out):
    id: str = Field(description="Stable identifier of this action for this target, e.g. `reconnect_integration:int_...`.")
    action: str = Field(description="Machine-readable action, e.g. `reconnect_integration`, `connect_integration`.")
    label: str
    guidance: str = Field(description="What to do, and who can do it (integrations are managed by the operator).")


class TargetIssue(_Out):
    """The issue object of preflight, for one target."""

    severity: str = Field(description="`blocker` for targets that cannot be scheduled.")
    code: str
    scope: str = Field(description="`connection` or `permissions`.")
    field_path: str = Field(description="Field of the target the issue is about, e.g. `$.connection_status`.")
    message: str
    integration_id: str | None
    platform: str | None
    repair_action: TargetRepairAction


class TargetCapabilities(_Out):
    """From the platform registry (the same facts as GET /v1/platforms/capabilities)."""

    platform_name: str
    account_modes: list[str]
    post_types: list[str]
    default_post_type: str | None
    settings_key: str | None = Field(description="Name of the draft settings object for this platform, or null.")
    dynamic_options: str | None = Field(
        description="Kind of live choices the dynamic-options route serves (`creator_privacy_levels`, "
                    "`pinterest_boards`), or null.")


def _absent_when_none() -> Any:
    return Field(None, exclude_if=lambda v: v is None)


class TargetLinks(_Out):
    """Present only where they apply: none on discovery rows, dynamic options only on connected accounts of
    platforms that have them."""

    integration: Link | None = _absent_when_none()
    dynamic_options: Link | None = _absent_when_none()
    refresh_dynamic_options: Link | None = _absent_when_none()


class Target(_Out):
    integration_id: str | None = Field(description="Null for a disconnected discovery row.")
    platform: str
    display_name: str | None
    username: str | None
    avatar_url: str | None
    connection_status: str = Field(
        description="`connected`, `expired`, `needs_reauth` (reconnect the account), or `disconnected` "
                    "(discovery row: no account on this platform).")
    schedulable: bool = Field(description="True when a Schedule may target this account now.")
    capabilities: TargetCapabilities
    blockers: Annotated[list[TargetIssue], Field(max_length=MAX_BLOCKERS)]
    repair_actions: Annotated[list[TargetRepairAction], Field(max_length=MAX_REPAIR_ACTIONS)]
    links: TargetLinks


class TargetListLinks(_Out):
    self: Link
    integrations: Link
    platform_capabilities: Link


class TargetList(_Out):
    brand_id: str
    targets: list[Target]
    truncated: bool = Field(
        description=f"True when the brand has more than {MAX_TARGETS} accounts; page them with list_integrations.")
    links: TargetListLinks


class Integration(_Out):
    """The older Integration resource: exactly the spec's fields."""

    id: str
    platform: str
    status: str
    brand_id: str
    display_name: str | None
    username: str | None
    avatar_url: str | None
    permissions: dict[str, Any] | None
    created_at: str
    updated_at: str


class Option(_Out):
    value: str
    label: str


class PrivacyConstraints(_Out):
    comments_disabled: bool
    duets_disabled: bool
    stitches_disabled: bool


class DynamicOptionsLinks(_Out):
    self: Link
    refresh: Link


class DynamicOptions(_Out):
    brand_id: str
    integration_id: str
    platform: str
    kind: DynamicOptionsKind = Field(  # pyright: ignore[reportInvalidTypeForm]  # a Literal of values read from the platform registry at import
        description="`creator_privacy_levels` (TikTok) or `pinterest_boards` (Pinterest).")
    options: Annotated[list[Option], Field(max_length=MAX_OPTIONS)]
    # Present only for the kind that has it (absent, never null), as the spec's optional platform fields are.
    constraints: PrivacyConstraints = Field(
        None, description="TikTok only: what the creator has disabled. Absent for other kinds.",
        exclude_if=lambda v: v is None, json_schema_extra=_drop_default)  # pyright: ignore[reportAssignmentType]  # pydantic accepts None as the default of a field left absent
    retrieved_at: str = Field(description="When the provider was read (this request); options are never cached.")
    links: DynamicOptionsLinks


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Brand ID, from get_context or list_brands.")]
IntegrationId = Annotated[Id, PathParam("Integration ID (`integration_id` of a row of list_targets).")]


class BrandPath(RequestModel):
    brand_id: BrandId


class IntegrationPath(RequestModel):
    brand_id: BrandId
    integration_id: IntegrationId


class ListIntegrationsRequest(RequestModel):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50
