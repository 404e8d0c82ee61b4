"""Repair derivatives (`POST .../media/{media_id}/repair-derivatives`): what a derivative records about how it
was made, and the route's response.

A derivative is a new, immutable Media item rendered from a preflight repair option; the geometry below is
the option's, copied verbatim, so the derivative can always be traced to the exact option and policy version
that produced it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.envelope import Link
from schemas.ids import Id
from schemas.media import BrandId, MediaId, MediaItem
from schemas.platforms import public_platforms
from schemas.preflight import Box, Padding, Size
from schemas.requests import RequestModel

RepairMode = Literal["centre_crop", "pad"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Derivation(_Out):
    """How a repair derivative was made (stored with the item as `derivation`)."""

    repair_option_id: str = Field(description="The preflight repair option that was applied.")
    mode: RepairMode
    integration_id: str
    platform: str
    post_type: str
    policy_version: str = Field(description="validation_version under which the option was issued and applied.")
    source_sha256: str = Field(description="SHA-256 of the source bytes the option was computed for.")
    source: Size = Field(description="Source size as displayed (EXIF orientation applied).")
    target: Size = Field(description="Size of the derivative.")
    crop: Box | None = Field(description="centre_crop: the kept region, in source pixels; null for pad.")
    resize: Size | None = Field(description="pad: the source scaled to this size before padding; null for crop.")
    pad: Padding | None = Field(description="pad: borders around the resized source, in target pixels.")
    safe_area: Box = Field(description="The region of the derivative that shows source content.")
    background: str | None = Field(description="pad: the padding colour (#rrggbb); null for centre_crop.")
    crop_loss: float = Field(description="Share of the source area cut away (0 to 1).")
    pad_share: float = Field(description="Share of the derivative's area that is padding (0 to 1).")
    scale: float = Field(description="Scale factor applied to the source.")


class RepairNextAction(_Out):
    action: Literal["read_media_again", "attach_derivative", "preflight_content"]
    guidance: str


class RepairLinks(_Out):
    self: Link = Field(description="get_media of the new derivative (media:read).")
    source: Link = Field(description="get_media of the unchanged source (media:read).")


class RepairDerivativeResult(_Out):
    media: MediaItem = Field(description="The new Media item (status processing until rendered).")
    outcome: Literal["created", "replayed"] = Field(
        description="created; replayed when the same idempotency key and input were sent again (same item).")
    derived_from_id: str = Field(description="The source media ID; the source is never changed.")
    derivation: Derivation
    next_actions: list[RepairNextAction] = Field(max_length=3)
    links: RepairLinks


# -- request models ------------------------------------------------------------------------------------------

PlatformKey = Literal[tuple(p.key for p in public_platforms())]


class RepairDerivativeRequest(RequestModel):
    brand_id: BrandId
    media_id: MediaId
    integration_id: Id = Field(description="As in the repair option.")
    platform: PlatformKey = Field(description="As in the repair option.")  # pyright: ignore[reportInvalidTypeForm]  # a Literal of values read from the platform registry at import
    post_type: str = Field(min_length=1, max_length=40, pattern=r"^[A-Z][A-Z0-9_]*$",
                           description="As in the repair option.")
    mode: RepairMode = Field(description="As in the repair option.")
    repair_option_id: str = Field(pattern=r"^ro_[0-9a-f]{32}$",
                                  description="`id` of an available entry of a preflight blocker's repair_options.")
    policy_version: str = Field(min_length=1, max_length=40, pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\.[0-9]+$",
                                description="As in the repair option.")
