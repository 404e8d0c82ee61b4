"""The public platform capabilities document (`GET /v1/platforms/capabilities`).

Everything in it derives from the platform registry (`schemas.platforms`), the rules data and the settings
models; nothing is restated. The models are strict (extra fields forbidden) so the schema snapshot shows
every field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CountingMethod(_Doc):
    key: str = Field(description="Name used by `counting` in text rules, e.g. x_weighted.")
    description: str


class TextRule(_Doc):
    field: str = Field(description="caption, title, description, alt_text, tags, thread_part, follow_up_reply or "
                                   "topic_tag.")
    max: int
    counting: str = Field(description="How the length is counted: a key of counting_methods.")
    post_types: list[str] | None = Field(description="Post types it applies to; null for all.")
    source: str = Field(description="Public documentation the limit comes from (`spec:` = this service's spec).")
    note: str


class CountRule(_Doc):
    subject: Literal["hashtags", "mentions", "links"]
    max: int
    unique: bool = Field(description="Each distinct value counts once.")
    severity: Literal["blocker", "warning"]
    source: str
    note: str


class AspectRatio(_Doc):
    width: int
    height: int
    value: float = Field(description="width / height")


class MediaRule(_Doc):
    kind: Literal["image", "video"]
    content_types: list[str]
    max_size_bytes: int | None
    min_width: int | None
    min_height: int | None
    max_width: int | None
    max_height: int | None
    max_pixels: int | None
    min_aspect_ratio: AspectRatio | None
    max_aspect_ratio: AspectRatio | None
    min_duration_seconds: float | None
    max_duration_seconds: float | None
    source: str
    note: str


class MediaCount(_Doc):
    min: int
    max: int
    kinds: list[Literal["image", "video"]]
    max_images: int | None
    max_videos: int | None
    mixed: bool = Field(description="Images and videos may be combined.")


class PostTypeCapability(_Doc):
    key: str
    description: str
    default: bool
    text_required: bool
    media: MediaCount
    image: MediaRule | None
    video: MediaRule | None
    source: str


class RequiredSetting(_Doc):
    field: str = Field(description="Field of the platform's settings object.")
    check: Literal["set", "true", "nonempty"]
    code: str = Field(description="Preflight issue code when it is not met.")
    post_types: list[str] | None
    when: str | None = Field(description="Only when this boolean settings field is true.")
    copy_fallback: str | None = Field(description="A copy field that satisfies it too.")
    message: str
    source: str


class ThreadPartMedia(_Doc):
    max: int
    kinds: list[Literal["image", "video"]]
    max_videos: int | None


class ThreadCapability(_Doc):
    settings_field: str = Field(description="Where parts go, e.g. x_settings.thread_parts.")
    max_parts: int = Field(description="Extra posts after the main post.")
    part_text: TextRule
    part_media: ThreadPartMedia | None = Field(description="Null: parts are text only.")
    part_max_links: int | None
    source: str


class MetricsCapability(_Doc):
    supported: bool = Field(description="Whether socialpub reads this network's post metrics (issue 34).")
    fields: list[str] = Field(description="The common metrics the network reports (impressions, likes, reposts, "
                                          "replies, saves, link_clicks, video_views, watch_time_seconds).")
    source: str | None = Field(description="The network's reference for its post metrics (or for why it has none).")
    note: str | None = Field(default=None, description="What is read and how it maps to the common names; when "
                                                       "unsupported, why the network offers no post metrics.")


class PlatformCapabilities(_Doc):
    key: str
    display_name: str
    account_modes: list[str]
    settings_key: str | None
    post_types: list[str]
    default_post_type: str | None
    dynamic_options: str | None = Field(description="Kind of live choices the target dynamic-options route serves.")
    settings_in_responses: Literal["always", "when_set"] = Field(
        description="always: the settings key is present (null when unset) on every content item; when_set: only "
                    "on items that have it.")
    copy_key: str = Field(description="Key of this platform in platform_copy.")
    text_rules: list[TextRule]
    count_rules: list[CountRule]
    post_type_rules: list[PostTypeCapability]
    required_settings: list[RequiredSetting]
    thread: ThreadCapability | None
    follow_up_reply: TextRule | None
    forbidden_characters: list[str] = Field(description="Characters refused in titles and descriptions.")
    settings_fields: dict[str, Any] = Field(description="JSON Schema of the platform's settings object: fields, "
                                                        "types, enums and defaults.")
    guidance: list[str]
    sources: list[str] = Field(description="Every public page the platform's rules cite.")
    metrics: MetricsCapability = Field(description="Post metrics: read by the service after publishing, served by "
                                                   "the analytics tools.")


class RepairPolicyCapability(_Doc):
    max_crop_loss: float
    max_pad_share: float
    max_upscale: float
    aspect_tolerance: float
    kinds: list[Literal["image", "video"]]
    max_video_seconds: float = Field(description="Longest video a repair derivative is offered for.")
    modes: list[Literal["centre_crop", "pad"]]
    background: str


class Capabilities(_Doc):
    validation_version: str = Field(description="Version tag of the rules; preflight reports the same tag.")
    rules_fingerprint: str = Field(description="sha256 of the rules data this version describes.")
    counting_methods: list[CountingMethod]
    repair_policy: RepairPolicyCapability
    platforms: list[PlatformCapabilities]
