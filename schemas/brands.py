"""Agent context, brand context and the older brand shape."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Link
from schemas.paging import OlderLimit, Page
from schemas.requests import PathParam, QueryParam, RequestModel
from schemas.scopes import DEFAULT_UNDISCLOSED


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Actor(_Out):
    user_id: str


class WorkspaceRef(_Out):
    id: str
    name: str


class ApiKeyInfo(_Out):
    id: str
    name: str
    scopes: list[str]
    brand_access: str  # "all" or "restricted"
    brand_ids: list[str]


class ContextBrandLinks(_Out):
    targets: Link
    media_imports: Link
    content_items: Link


class ContextBrand(_Out):
    id: str
    name: str
    links: ContextBrandLinks


# GET /v1/context lists at most this many brands (oldest first); the rest are read with list_brands.
CONTEXT_BRANDS_MAX = 25


class ContextLinks(_Out):
    platform_capabilities: Link
    list_brands: Link | None = Field(None, description=f"Present when `brands` was cut at {CONTEXT_BRANDS_MAX}: "
                                                       "read every brand with list_brands.")


class AgentContext(_Out):
    actor: Actor
    workspace: WorkspaceRef
    api_key: ApiKeyInfo
    brands: list[ContextBrand] = Field(description=f"The first {CONTEXT_BRANDS_MAX} brands the key sees, oldest "
                                                   "first.")
    brands_has_more: bool = Field(description="True when the key sees more brands than `brands` lists.")
    links: ContextLinks


class BrandInfo(_Out):
    id: str
    name: str
    description: str | None
    website: str | None
    category: str | None
    timezone: str | None


class CallToAction(_Out):
    text: str | None
    url: str | None


class Identity(_Out):
    logo_url: str | None
    logo_light_url: str | None
    logo_dark_url: str | None
    colors: list[str] | None
    title_font: str | None
    body_font: str | None


class Voice(_Out):
    custom_instructions: str | None
    profile: str | None
    strategy: str | None
    default_call_to_action: CallToAction | None


class LinkInBio(_Out):
    status: str
    handle: str | None
    url: str | None
    published_at: str | None


class BrandContextLinks(_Out):
    self: Link
    labels: Link
    targets: Link


class BrandContext(_Out):
    brand: BrandInfo
    identity: Identity
    voice: Voice
    link_in_bio: LinkInBio
    links: BrandContextLinks


class ContentPreferences(BaseModel):
    default_cta: str | None = None
    logo_frequency: str | None = None
    cta_frequency: str | None = None


class Brand(_Out):
    """The older list/get shape."""

    id: str
    name: str
    description: str | None
    logo_url: str | None
    logo_light_url: str | None
    logo_dark_url: str | None
    timezone: str | None
    website: str | None
    business_category: str | None
    brand_kit: dict[str, Any] | None
    content_preferences: ContentPreferences | None
    image_posting: str | None
    video_posting: str | None
    created_at: str
    updated_at: str


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Brand ID, from get_context or list_brands.")]


class GetContextRequest(RequestModel):
    scope_disclosure: Literal["effective"] | None = QueryParam(
        None, f"`effective` also lists {' and '.join(DEFAULT_UNDISCLOSED)} when held (the default list leaves them "
              "out); it grants nothing.")


class BrandPath(RequestModel):
    brand_id: BrandId


class ListBrandsRequest(RequestModel):
    page: Page = 1
    limit: OlderLimit = 50
