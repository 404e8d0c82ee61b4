"""Admin marketing (prospect brands): enums, bounds, request parts and response shapes.

Everything the spec leaves open here (onboarding steps, modes, scan steps, the sample pack's bounds, the
claim link's shape) is chosen in this module and explained in docs/admin.md and docs/decisions.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from schemas.brands import Brand
from schemas.envelope import Link
from schemas.requests import PathParam, QueryParam, RequestModel

# -- bounds -----------------------------------------------------------------------------------------------------

NAME_MAX = 200  # the brands table's name column
DESCRIPTION_MAX = 5_000  # the brands table's description column
WEBSITE_MAX = 2_000
BUSINESS_CATEGORY_MAX = 200
TIMEZONE_MAX = 64
CROSS_POSTS_PER_WEEK_MAX = 21  # three a day
PROSPECTS_PER_WORKSPACE_MAX = 1_000
SAMPLE_PACK_LIMIT_MIN, SAMPLE_PACK_LIMIT_MAX, SAMPLE_PACK_LIMIT_DEFAULT = 1, 10, 3
SAMPLES_PER_RUN = 5
SAMPLES_PER_BRAND_MAX = 50  # pipeline runs stop adding samples here; every sample read stays bounded
CLAIM_TTL_HOURS_MAX = 8_760.0  # one year

# -- enums ------------------------------------------------------------------------------------------------------

# Onboarding of a prospect, in order. The service moves the step forward (never back) when the matching event
# happens; an admin may set any step but `claimed`, which only the claim itself sets.
ONBOARDING_STEPS = ("created", "website_added", "website_scanned", "content_generated", "sample_pack_ready",
                    "claim_link_sent", "claimed")
OnboardingStep = Literal["created", "website_added", "website_scanned", "content_generated", "sample_pack_ready",
                         "claim_link_sent", "claimed"]
# `automatic`: the content pipeline may generate sample content; `manual` (the default): content is made by hand.
MODES = ("manual", "automatic")
Mode = Literal["manual", "automatic"]

SCAN_STEPS = ("fetch_site", "extract_identity", "extract_colors", "categorise", "import_logo", "import_images")
StepName = Literal["fetch_site", "extract_identity", "extract_colors", "categorise", "import_logo", "import_images"]
StepStatus = Literal["pending", "running", "completed", "failed"]
ScanStatus = Literal["queued", "running", "completed", "failed"]
RunStatus = Literal["queued", "running", "completed", "failed"]
GenerationStatus = Literal["not_started", "queued", "running", "completed", "failed"]
ClaimLinkStatus = Literal["active", "expired", "used", "revoked"]


# -- request parts ----------------------------------------------------------------------------------------------

class _In(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def optional(**kwargs: Any) -> Any:
    """A patch field that may be omitted (unchanged); the None default is not part of the public schema."""
    return Field(default=None, json_schema_extra=_no_default, **kwargs)


def _timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise PydanticCustomError("invalid_timezone", "must be an IANA time zone name such as Europe/Paris",
                                  {"issue_code": "INVALID_TIMEZONE"}) from None
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("string_too_short", "must contain a character besides spaces",
                                  {"issue_code": "TOO_SHORT"})
    return value


Timezone = Annotated[str, Field(min_length=1, max_length=TIMEZONE_MAX, description="IANA time zone, e.g. "
                                                                                    "Europe/Paris."),
                     AfterValidator(_timezone)]
ProspectName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, description="Brand name; trimmed, 1 to 200 "
                                                                                 "characters."),
                         AfterValidator(_not_blank)]
BusinessCategory = Annotated[str, Field(min_length=1, max_length=BUSINESS_CATEGORY_MAX), AfterValidator(_not_blank)]


class PostingPatch(_In):
    """Cross-posting of one media kind; omitted fields are unchanged."""

    cross_post: bool = optional(description="True: samples of this kind are also prepared for Facebook.")
    cross_posts_per_week: int = optional(ge=0, le=CROSS_POSTS_PER_WEEK_MAX,
                                         description=f"0 to {CROSS_POSTS_PER_WEEK_MAX}.")


class ConfigPatch(_In):
    """Onboarding configuration; omitted fields are unchanged, null clears website and business_category."""

    mode: Mode = optional(description="`automatic` lets the content pipeline generate samples; `manual` does not.")
    website: str | None = optional(min_length=1, max_length=WEBSITE_MAX,
                                   description="Public http(s) URL of the prospect's site (stored on the brand).")
    business_category: BusinessCategory | None = optional(description="Free text, up to 200 characters; stored as "
                                                                      "the brand's category.")
    timezone: Timezone = optional()
    image_posting: PostingPatch = optional()
    video_posting: PostingPatch = optional()


# -- responses --------------------------------------------------------------------------------------------------

class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Posting(_Out):
    cross_post: bool
    cross_posts_per_week: int


class Config(_Out):
    mode: Mode
    website: str | None
    business_category: str | None
    timezone: str
    image_posting: Posting
    video_posting: Posting


class ProspectLinks(_Out):
    status: Link
    update: Link
    website_scan: Link
    content_pipeline: Link
    sample_pack: Link
    claim_link: Link


class ProspectBrand(Brand):
    """The older Brand shape plus the prospect's admin fields."""

    prospect: bool = Field(description="Always true: admin routes act on prospect brands only.")
    onboarding_step: OnboardingStep
    config: Config
    colors: list[str] = Field(description="Brand colours (hex), e.g. from the website scan.")
    claimed_at: str | None
    links: ProspectLinks


class StepError(_Out):
    code: str
    message: str


class ScanStep(_Out):
    name: StepName
    status: StepStatus
    summary: str | None = Field(description="What the step found or did, when it finished.")
    error: StepError | None = Field(description="Why the step failed (safe text); null unless failed.")
    started_at: str | None
    finished_at: str | None


class ScanFound(_Out):
    title: str | None
    description: str | None
    category: str | None
    colors: list[str]
    logo_media_id: str | None
    logo_url: str | None
    media_ids: list[str] = Field(description="Media items the scan imported (logo first), any status.")


class ScanLinks(_Out):
    self: Link
    status: Link


class WebsiteScan(_Out):
    id: str
    brand_id: str
    status: ScanStatus
    done: bool = Field(description="True once every step completed or one failed: stop polling.")
    website_url: str
    steps: list[ScanStep]
    found: ScanFound
    created_at: str
    updated_at: str
    started_at: str | None
    finished_at: str | None
    links: ScanLinks


class PipelineRun(_Out):
    id: str
    status: RunStatus
    samples_created: int
    error: StepError | None
    created_at: str
    started_at: str | None
    finished_at: str | None


class PipelineLinks(_Out):
    status: Link
    sample_pack: Link


class PipelineResult(_Out):
    queued: bool = Field(description="True when this request queued a new run; false when one was already queued "
                                     "or running (that run is returned).")
    reason: str
    run: PipelineRun
    links: PipelineLinks


class Generation(_Out):
    status: GenerationStatus
    run: PipelineRun | None = Field(description="The latest pipeline run.")


class Automation(_Out):
    pipeline_runs: int
    last_pipeline_run_at: str | None
    sample_content_items: int
    usable_samples: int
    samples_max: int
    completed_media: int


class ClaimLinkInfo(_Out):
    status: ClaimLinkStatus
    token_hint: str
    expires_at: str | None
    created_at: str
    used_at: str | None


class Claim(_Out):
    status: Literal["unclaimed", "claimed"]
    claimed_at: str | None
    link: ClaimLinkInfo | None = Field(description="The latest claim link (never its token).")


class ProspectStatus(_Out):
    brand_id: str
    name: str
    prospect: bool
    onboarding_step: OnboardingStep
    mode: Mode
    website_scan: WebsiteScan | None
    generation: Generation
    automation: Automation
    claim: Claim
    links: ProspectLinks


class SampleMedia(_Out):
    media_id: str
    download_url: str
    content_type: str
    file_name: str


class Sample(_Out):
    content_item_id: str
    name: str
    caption: str
    hashtags: list[str]
    title: str | None
    media: list[SampleMedia]
    created_at: str


class SampleBrand(_Out):
    id: str
    name: str
    website: str | None


class SamplePackLinks(_Out):
    status: Link
    content_pipeline: Link


class SamplePack(_Out):
    ready: bool
    reason: str
    limit: int
    brand: SampleBrand
    samples: list[Sample] = Field(description="Up to `limit` usable samples, newest first.")
    links: SamplePackLinks


class ClaimLinks(_Out):
    status: Link


class ClaimLink(_Out):
    claim_url: str = Field(description="Shown once: the service keeps only a hash of its token.")
    token_hint: str
    expires_at: str | None = Field(description="Null: the link never expires.")
    created_at: str
    single_use: bool
    links: ClaimLinks


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Prospect brand ID, from create_prospect_brand.")]


class CreateProspectRequest(RequestModel):
    name: ProspectName
    description: str | None = Field(None, max_length=DESCRIPTION_MAX,
                                    description="Up to 5,000 characters; a website scan fills it when empty.")


class BrandPath(RequestModel):
    brand_id: BrandId


class UpdateProspectRequest(RequestModel):
    brand_id: BrandId
    onboarding_step: OnboardingStep = optional(
        description="Any step but `claimed` (set only by claiming): " + ", ".join(ONBOARDING_STEPS) + ".")
    config: ConfigPatch = optional(description="Only the fields sent change.")


class StartScanRequest(RequestModel):
    brand_id: BrandId
    website_url: str | None = Field(None, min_length=1, max_length=WEBSITE_MAX,
                                    description="Public http(s) URL to scan; omitted: the brand's website.")


class SamplePackRequest(RequestModel):
    brand_id: BrandId
    limit: int = QueryParam(SAMPLE_PACK_LIMIT_DEFAULT, "Samples wanted, 1 to 10 (default 3); `ready` needs "
                                                           "this many usable samples.",
                            ge=SAMPLE_PACK_LIMIT_MIN, le=SAMPLE_PACK_LIMIT_MAX)


class ClaimLinkRequest(RequestModel):
    brand_id: BrandId
    ttl_hours: float | None = Field(None, gt=0, le=CLAIM_TTL_HOURS_MAX, allow_inf_nan=False,
                                    description="Hours until the link expires (more than 0, up to 8,760); omitted or "
                                                "null: it never expires.")
