"""Types of the platform rules registry: text limits and how they are counted, media bounds per post type,
thread rules and required settings. Pure data; the rules engine (`tools.schedules.rules_engine`) and the
capabilities document read it. Every numeric rule carries `source`: the public documentation page it comes
from (or `spec:` for limits this service's own specification sets).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

MB = 1024 * 1024  # platform docs say "MB"; we read it as MiB (the lenient reading)
GB = 1024 * MB

Kind = Literal["image", "video"]
Severity = Literal["blocker", "warning"]

# Text fields a limit can apply to. Captions, hashtags and titles come from the copy; alt_text, tags,
# thread parts and the follow-up reply come from settings.
TextField = Literal["caption", "title", "description", "alt_text", "tags", "thread_part", "follow_up_reply",
                    "topic_tag"]


@dataclass(frozen=True)
class TextLimit:
    field: TextField
    max: int
    counting: str  # a key of schemas.textcount.COUNTERS
    source: str
    post_types: tuple[str, ...] | None = None  # None: every post type of the platform
    note: str = ""


@dataclass(frozen=True)
class CountLimit:
    """A maximum number of hashtags, mentions or links in one post (or one thread part)."""

    subject: Literal["hashtags", "mentions", "links"]
    max: int
    source: str
    unique: bool = False  # count each distinct value once
    severity: Severity = "blocker"
    note: str = ""


@dataclass(frozen=True)
class MediaSpec:
    """Bounds for one media kind within a post type. Ratios are width:height as (w, h)."""

    kind: Kind
    source: str
    content_types: tuple[str, ...] = ()
    max_size: int | None = None  # bytes
    min_width: int | None = None
    min_height: int | None = None
    max_width: int | None = None
    max_height: int | None = None
    min_aspect: tuple[int, int] | None = None
    max_aspect: tuple[int, int] | None = None
    min_duration: float | None = None  # seconds
    max_duration: float | None = None
    max_pixels: int | None = None
    note: str = ""

    @property
    def aspect_bounds(self) -> tuple[Fraction | None, Fraction | None]:
        lo = Fraction(*self.min_aspect) if self.min_aspect else None
        hi = Fraction(*self.max_aspect) if self.max_aspect else None
        return lo, hi


@dataclass(frozen=True)
class PostTypeRules:
    key: str
    description: str
    source: str  # where the media counts come from
    min_media: int = 0
    max_media: int = 0
    kinds: tuple[Kind, ...] = ()  # media kinds allowed (empty: no media)
    max_images: int | None = None
    max_videos: int | None = None
    mixed: bool = False  # images and videos together
    image: MediaSpec | None = None
    video: MediaSpec | None = None
    text_required: bool = False  # the post is text (a caption must not be empty)

    def spec(self, kind: str) -> MediaSpec | None:
        return self.image if kind == "image" else self.video if kind == "video" else None


@dataclass(frozen=True)
class Requirement:
    """A settings field that must be set before publishing (never inferred)."""

    field: str  # field of the platform's settings object
    check: Literal["set", "true", "nonempty"]
    code: str
    message: str
    action: str
    label: str
    guidance: str
    source: str
    post_types: tuple[str, ...] | None = None
    when: str | None = None  # only when this boolean settings field is true
    copy_fallback: str | None = None  # a copy field that satisfies it too (e.g. `title`)


@dataclass(frozen=True)
class ThreadRules:
    max_parts: int  # extra posts after the main post
    part_text: TextLimit
    source: str
    part_media: PostTypeRules | None = None  # media rules of one part; None: text-only parts
    part_links: CountLimit | None = None


@dataclass(frozen=True)
class RepairPolicy:
    """Limits on the transforms preflight may offer as repair options (versioned with the rules)."""

    max_crop_loss: float  # share of the source area a centre crop may cut away
    max_pad_share: float  # share of the output area that may be padding
    max_upscale: float  # largest scale factor applied to the source
    aspect_tolerance: float  # relative tolerance when checking an aspect ratio against its bounds
    kinds: tuple[Kind, ...]  # media kinds the repair-derivative route can transform
    # Longest video a derivative is rendered for: one render must finish well inside the worker's job lease
    # (re-encoding runs at roughly real time or faster on one core at the preset used).
    max_video_seconds: float
    background: str  # pad colour
    source: str


@dataclass(frozen=True)
class PlatformRules:
    post_types: tuple[PostTypeRules, ...]
    text: tuple[TextLimit, ...] = ()
    counts: tuple[CountLimit, ...] = ()
    requirements: tuple[Requirement, ...] = ()
    thread: ThreadRules | None = None
    follow_up_reply: TextLimit | None = None
    forbidden_characters: tuple[str, ...] = ()  # in title and description (YouTube: < and >)
    forbidden_source: str = ""
    guidance: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def post_type(self, key: str) -> PostTypeRules | None:
        return next((p for p in self.post_types if p.key == key), None)

    def text_limit(self, name: str, post_type: str) -> TextLimit | None:
        for t in self.text:
            if t.field == name and (t.post_types is None or post_type in t.post_types):
                return t
        return None
