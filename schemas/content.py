"""Content items (drafts): request bodies and response shapes, released and older.

Request bodies are strict (conventions rule 2): unknown keys and camelCase aliases, padded or malformed IDs,
duplicate IDs and ID sets not in ascending order are refused with field-level issues, never corrected.
Rules that need several fields at once are checked by `tools.content.rules` (still 400: they need no data);
rules that need stored data (labels, integrations, media) are 422 there too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, LiteralString, Optional, cast, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic_core import PydanticCustomError

from schemas.envelope import Link
from schemas.ids import Id
from schemas.paging import OlderLimit, Page, SortDir
from schemas.platform_settings import (
    SETTINGS_MODELS,
    BlueskySettings,
    BlueskyThreadPart,
    MastodonSettings,
    Settings,
    ThreadsSettings,
    ThreadsThreadPart,
    TikTokSettings,
    XSettings,
    XThreadPart,
)
from schemas.platforms import MAIN_SETTINGS_KEYS, PLATFORM_KEYS, PLATFORMS, SETTINGS_KEYS
from schemas.requests import PathParam, QueryParam, RequestModel
from schemas.validators import SINGLE_LINE_PATTERN, canonical_ids, single_line, unique_items

NAME_MAX = 500
LABEL_IDS_MAX = 50  # the Limits table's "label_ids (older) max 50"; applied to both shapes
INTENDED_MAX = 20
CAPTION_MAX = 20_000  # the draft edit limit; no platform takes more
HASHTAGS_MAX = 60
HASHTAG_MAX = 100
TITLE_MAX = 500
THUMBNAIL_TIMESTAMP_MAX = 86_400.0  # seconds; a day of video is a generous bound
PREVIEW_MAX = 280  # caption previews in lists and drafts
PINTEREST_COPY_MAX = 800
SETTINGS_BY_KEY: dict[str, type[Settings]] = {p.settings_key: SETTINGS_MODELS[p.key] for p in PLATFORMS
                                              if p.settings_key}
OPTIONAL_SETTINGS_KEYS: tuple[str, ...] = tuple(k for k in SETTINGS_KEYS if k not in MAIN_SETTINGS_KEYS)
TIKTOK_PRIVACY_LEVELS: tuple[str, ...] = tuple(
    a for a in get_args(get_args(TikTokSettings.model_fields["privacy_level"].annotation)[0]))


def _absent_when_none(value: Any) -> bool:
    return value is None


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


def no_default(description: str | None = None) -> Any:
    """Omitted means unchanged (partial updates): the None default is not part of the public schema."""
    return Field(None, description=description, json_schema_extra=_no_default)


# -- field types -------------------------------------------------------------------------------------------

def id_set(max_items: int, description: str) -> Any:
    return Annotated[list[Id], Field(max_length=max_items, description=description), AfterValidator(canonical_ids)]


class _StatesPattern:
    """Schema-only metadata: adds a `pattern` to the field's JSON schema, leaving validation to the validators (whose
    issue codes, e.g. INVALID_CHARACTER, a pattern check would replace)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        schema["pattern"] = self.pattern
        return schema


_SINGLE_LINE_SCHEMA = _StatesPattern(SINGLE_LINE_PATTERN)


def trimmed(limit: int, description: str) -> Any:
    """A name that is stored trimmed and must be 1..limit characters after trimming."""

    def check(value: str) -> str:
        single_line(value)
        text = value.strip()
        if not text:
            raise PydanticCustomError("string_too_short", "must contain at least one character besides spaces",
                                      {"issue_code": "TOO_SHORT"})
        if len(text) > limit:
            raise PydanticCustomError("string_too_long", "must be at most {max_length} characters after trimming",
                                      {"max_length": limit, "issue_code": "TOO_LONG"})
        return value  # the handler stores the trimmed text; the request hash covers what was sent

    return Annotated[str, AfterValidator(check), _SINGLE_LINE_SCHEMA,
                     Field(description=f"{description} Trimmed; 1 to {limit} characters.")]



def _hashtag(value: str) -> str:
    if value.startswith("#"):
        raise PydanticCustomError("leading_hash", "send hashtags without the leading #: `tag`, not `#tag`",
                                  {"issue_code": "LEADING_HASH"})
    if any(c.isspace() or c == "#" for c in value):
        raise PydanticCustomError("invalid_hashtag", "a hashtag is one word: no spaces and no #",
                                  {"issue_code": "INVALID_FORMAT"})
    return value


Hashtags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=HASHTAG_MAX), AfterValidator(_hashtag)]],
    Field(max_length=HASHTAGS_MAX, description="Hashtags without the leading #, in posting order."),
    AfterValidator(unique_items),
]
ThumbnailTimestamp = Annotated[float, Field(ge=0, le=THUMBNAIL_TIMESTAMP_MAX, allow_inf_nan=False,
                                            description="Seconds into the video for the cover frame; >= 0.")]


# -- request parts -----------------------------------------------------------------------------------------

def _camel_to_snake(name: str) -> str:
    out = "".join("_" + c.lower() if c.isupper() else c for c in name)
    return out.lstrip("_")


class StrictBody(RequestModel):
    """A request whose unknown keys that look like camelCase aliases are named as such (issue
    CAMEL_CASE_KEY, e.g. `copyMode` -> use `copy_mode`), so an agent sees why a familiar name was refused."""

    @model_validator(mode="wrap")
    @classmethod
    def _name_camel_case_keys(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            errors = exc.errors()
            if not any(_is_camel_error(e) for e in errors):
                raise
            rebuilt = []
            for e in errors:
                if _is_camel_error(e):
                    snake = _camel_to_snake(str(e["loc"][-1]))
                    err = PydanticCustomError("camel_case_key", "camelCase names are not accepted; use `{snake}`",
                                              {"snake": snake, "issue_code": "CAMEL_CASE_KEY"})
                else:
                    # pydantic's own error type and message, re-raised (not a literal template)
                    err = PydanticCustomError(cast(LiteralString, e["type"]),
                                              cast(LiteralString, e["msg"].replace("{", "(").replace("}", ")")),
                                              e.get("ctx") or None)
                rebuilt.append({"type": err, "loc": e["loc"], "input": e.get("input")})
            raise ValidationError.from_exception_data(exc.title, rebuilt) from None


def _is_camel_error(e: Any) -> bool:
    key = e["loc"][-1] if e["loc"] else None
    return e["type"] == "extra_forbidden" and isinstance(key, str) and any(c.isupper() for c in key)


class CopyPart(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Copy(CopyPart):
    """Text of a post: the caption, hashtags (without #) and an optional title."""

    caption: str = Field("", max_length=CAPTION_MAX)
    hashtags: Hashtags = []
    title: Annotated[str, Field(max_length=TITLE_MAX)] | None = None


class OlderCopy(CopyPart):
    """The older shape's single copy: no title."""

    caption: str = Field("", max_length=CAPTION_MAX)
    hashtags: Hashtags = []


# Field tables are typed `dict[str, Any]` so that create_model's overloads take them as field definitions.
_PLATFORM_COPY_FIELDS: dict[str, Any] = {k: (Copy | None, None) for k in PLATFORM_KEYS}
PlatformCopy = create_model(
    "PlatformCopy", __base__=CopyPart, __doc__="Copy per platform key; a platform without copy is omitted or null.",
    **_PLATFORM_COPY_FIELDS,
)

BrandId = Annotated[str, PathParam("Brand ID, from get_context.")]
ContentItemId = Annotated[str, PathParam("Content item ID, from create_content_item or list_content_items.")]

_COMMON_FIELDS: dict[str, Any] = {
    "copy_mode": (Literal["single", "per_platform"], Field(
        "single", description="`single`: one copy for every platform (single_copy). `per_platform`: platform_copy.")),
    "platform_copy": (PlatformCopy | None, Field(None, description="Used only when copy_mode is per_platform.")),
    **{key: (SETTINGS_BY_KEY[key] | None, Field(None, description="Null or omitted: the platform is skipped."))
       for key in SETTINGS_KEYS},
    "label_ids": (id_set(LABEL_IDS_MAX, "Labels of this brand: unique, ascending, at most 50."), []),
    "thumbnail_timestamp": (ThumbnailTimestamp, 0.0),
}
_RELEASED_FIELDS: dict[str, Any] = {
    "single_copy": (Copy | None, Field(None, description="Used only when copy_mode is single.")),
    "intended_integration_ids": (id_set(INTENDED_MAX, "Integrations of this brand the draft is meant for: up to "
                                                      "20, unique, ascending."), []),
    # Optional[]: pyright does not apply `|` to an Annotated alias used as a value
    "thumbnail_media_id": (Optional[Id], Field(None, description="A ready media item of this brand.")),  # noqa: UP045
}


def _partial(fields: dict[str, Any]) -> dict[str, Any]:
    """Partial-update fields: omitted means unchanged. A field that admits null takes an explicit null
    (clears it); the others refuse null, since there is nothing to clear."""
    out = {}
    for name, (annotation, default) in fields.items():
        out[name] = (annotation, Field(None, description=getattr(default, "description", None),
                                       json_schema_extra=_no_default))
    return out


CreateContentItemRequest = create_model(
    "CreateContentItemRequest", __base__=StrictBody,
    brand_id=(BrandId, ...),
    name=(trimmed(NAME_MAX, "Draft name."), ...),
    **_COMMON_FIELDS, **_RELEASED_FIELDS,
)

CreateContentItemOlderRequest = create_model(
    "CreateContentItemOlderRequest", __base__=StrictBody,
    brand_id=(BrandId, ...),
    name=(trimmed(NAME_MAX, "Draft name."), ...),
    single_copy=(OlderCopy | None, Field(None, description="Used only when copy_mode is single (no title).")),
    **_COMMON_FIELDS,
)

UpdateContentItemRequest = create_model(
    "UpdateContentItemRequest", __base__=StrictBody,
    brand_id=(BrandId, ...), content_item_id=(ContentItemId, ...),
    **_partial({"name": (trimmed(NAME_MAX, "Draft name."), None), **_COMMON_FIELDS, **_RELEASED_FIELDS}),
)


class ContentItemPath(RequestModel):
    brand_id: BrandId
    content_item_id: ContentItemId


# -- responses ---------------------------------------------------------------------------------------------

def only_when_set(description: str = "") -> Any:
    """A response field that is absent, not null, when unset (older clients reject unknown platforms)."""
    return Field(None, exclude_if=_absent_when_none, json_schema_extra=_no_default, description=description or None)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CopyOut(_Out):
    caption: str
    hashtags: list[str]
    title: str | None


class OlderCopyOut(_Out):
    caption: str
    hashtags: list[str]


_PLATFORM_COPY_OUT_FIELDS: dict[str, Any] = {k: (CopyOut, only_when_set()) for k in PLATFORM_KEYS}
PlatformCopyOut = create_model(
    "PlatformCopyOut", __base__=_Out, __doc__="Only the platforms that have copy are present.",
    **_PLATFORM_COPY_OUT_FIELDS,
)


class XSettingsOut(XSettings):
    thread_parts: list[XThreadPart] = only_when_set(  # pyright: ignore[reportIncompatibleVariableOverride]  # never null in a response: absent instead
        "Present only for an item that has a thread.")


class BlueskySettingsOut(BlueskySettings):
    thread_parts: list[BlueskyThreadPart] = only_when_set(  # pyright: ignore[reportIncompatibleVariableOverride]  # never null in a response: absent instead
        "Present only for an item that has a thread.")


class MastodonSettingsOut(MastodonSettings):
    thread_parts: list[XThreadPart] = only_when_set(  # pyright: ignore[reportIncompatibleVariableOverride]  # never null in a response: absent instead
        "Present only for an item that has a thread.")


class ThreadsSettingsOut(ThreadsSettings):
    thread_parts: list[ThreadsThreadPart] = only_when_set(  # pyright: ignore[reportIncompatibleVariableOverride]  # never null in a response: absent instead
        "Present only for an item that has a thread.")


SETTINGS_OUT: dict[str, type[Settings]] = {
    **SETTINGS_BY_KEY, "x_settings": XSettingsOut, "bluesky_settings": BlueskySettingsOut,
    "threads_settings": ThreadsSettingsOut, "mastodon_settings": MastodonSettingsOut,
}
_SETTINGS_OUT_FIELDS: dict[str, Any] = {
    **{k: (SETTINGS_OUT[k] | None, Field(description="Always present; null when the platform is not set."))
       for k in MAIN_SETTINGS_KEYS},
    **{k: (SETTINGS_OUT[k], only_when_set("Present only for an item that has these settings."))
       for k in OPTIONAL_SETTINGS_KEYS},
}

_CONTENT_ITEM_FIELDS: dict[str, Any] = {
    "id": (str, ...), "brand_id": (str, ...), "name": (str, ...),
    "label_ids": (list[str], ...),
    "thumbnail_media_id": (str | None, ...),
    "thumbnail_timestamp": (float, ...),
    "intended_integration_ids": (list[str], ...),
    "copy_mode": (Literal["single", "per_platform"], ...),
    "single_copy": (CopyOut | None, ...),
    "platform_copy": (PlatformCopyOut | None, ...),
    **_SETTINGS_OUT_FIELDS,
    "created_at": (str, ...), "updated_at": (str, ...),
}
ContentItem = create_model(
    "ContentItem", __base__=_Out, __doc__="A content item (draft), released shape.", **_CONTENT_ITEM_FIELDS)

_OLDER_CONTENT_ITEM_FIELDS: dict[str, Any] = {
    "id": (str, ...), "brand_id": (str, ...), "name": (str, ...), "created_by": (str, ...),
    "label_ids": (list[str], ...),
    "thumbnail_timestamp": (float, ...),
    "copy_mode": (Literal["single", "per_platform"], ...),
    "single_copy": (OlderCopyOut | None, ...),
    "platform_copy": (PlatformCopyOut | None, ...),
    **_SETTINGS_OUT_FIELDS,
    "created_at": (str, ...), "updated_at": (str, ...),
}
OlderContentItem = create_model(
    "OlderContentItem", __base__=_Out,
    __doc__="A content item in the older shape: created_by; no thumbnail_media_id, intended_integration_ids or "
            "single_copy title.",
    **_OLDER_CONTENT_ITEM_FIELDS,
)


class PreflightNextAction(_Out):
    action: Literal["preflight_content"]
    integration_ids: list[str]


class CreateLinks(_Out):
    targets: Link = Field(description="list_targets (integrations:read).")
    preflight: Link = Field(description="preflight_content (POST, schedule:write).")


class CreatedContentItem(_Out):
    content_item: ContentItem  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
    outcome: Literal["created"]
    intended_integration_ids: list[str]
    next_actions: list[PreflightNextAction]
    links: CreateLinks


class ContentItemLinks(_Out):
    self: Link
    targets: Link = Field(description="list_targets (integrations:read).")
    preflight: Link = only_when_set("preflight_content; only when the item has intended integration IDs.")


class ContentItemRead(_Out):
    content_item: ContentItem  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
    links: ContentItemLinks


class SelfLink(_Out):
    self: Link


class ContentItemSummary(_Out):
    id: str
    brand_id: str
    name: str
    caption_preview: str = Field(description=f"The caption, cut to {PREVIEW_MAX} characters ('…' when cut).")
    copy_mode: Literal["single", "per_platform"]
    platforms: list[str] = Field(description="Platforms with settings or platform copy, in registry order.")
    media_ids: list[str] = Field(description="Every attached media ID (settings, then thread parts), once each.")
    intended_integration_ids: list[str]
    label_ids: list[str]
    created_at: str
    updated_at: str
    links: SelfLink


class ContentItemPage(_Out):
    items: list[ContentItemSummary]
    has_more: bool
    next_cursor: str | None = Field(description="ID of the last returned item; send it back as `cursor`.")


class DeletedContentItem(_Out):
    id: str
    outcome: Literal["deleted"]


# -- drafts ------------------------------------------------------------------------------------------------

DRAFTS_MAX = 50
DRAFT_NAME_MAX = 200


class DraftItem(_Out):
    id: str
    name: str
    caption_preview: str = Field(description=f"Up to {PREVIEW_MAX} characters ('…' when cut).")
    media_count: int
    thumbnail_media_id: str | None = Field(
        description="The chosen thumbnail, else the first attached media item, else null.")
    intended_integration_ids: list[str] = Field(description="The accounts (integration IDs) the draft is meant for.")
    updated_at: str
    links: SelfLink


class DraftList(_Out):
    items: list[DraftItem]
    has_more: bool = Field(description="More unused drafts exist beyond these 50.")


class DraftWrite(_Out):
    id: str
    outcome: Literal["updated", "deleted"]


DraftId = Annotated[str, PathParam("Draft (content item) ID, from list_drafts.")]


class UpdateDraftRequest(StrictBody):
    brand_id: BrandId
    draft_id: DraftId
    confirm_draft_id: Id = Field(description="Must equal the draft ID in the path.")
    name: trimmed(DRAFT_NAME_MAX, "New name.") = no_default()  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    caption: Annotated[str, Field(max_length=CAPTION_MAX)] = no_default(
        "New shared caption (single copy only); an empty string clears it.")


class DeleteDraftRequest(StrictBody):
    brand_id: BrandId
    draft_id: DraftId
    confirm_draft_id: Id = Field(description="Must equal the draft ID in the path.")


# -- TikTok privacy ----------------------------------------------------------------------------------------

class UpdateTikTokPrivacyRequest(StrictBody):
    brand_id: BrandId
    content_item_id: ContentItemId
    integration_id: Id = Field(description="One of the draft's intended TikTok integrations.")
    privacy_level: Literal[TIKTOK_PRIVACY_LEVELS] = Field(  # pyright: ignore[reportInvalidTypeForm]  # a Literal of values read at import
        description="A value the target's live dynamic options return now.")


class PreflightAction(_Out):
    action: Literal["preflight_content"]


class TikTokPrivacyLinks(_Out):
    self: Link
    preflight: Link = Field(description="preflight_content (POST, schedule:write).")
    dynamic_options: Link = Field(description="The target's live privacy options (integrations:read).")


class TikTokPrivacyResult(_Out):
    content_item_id: str
    brand_id: str
    integration_id: str
    privacy_level: str
    outcome: Literal["updated", "unchanged"]
    next_action: PreflightAction
    links: TikTokPrivacyLinks


# -- request models ------------------------------------------------------------------------------------------

LIST_MAX = 50
LIST_DEFAULT = 20


class ListContentItemsRequest(RequestModel):
    brand_id: BrandId
    limit: int = QueryParam(LIST_DEFAULT, f"Items per page, 1 to {LIST_MAX}.", ge=1, le=LIST_MAX)
    cursor: str | None = QueryParam(None, "next_cursor of the previous page (the ID of its last item).",
                                    max_length=64)
    order_direction: Literal["desc", "asc"] = QueryParam(
        "desc", "desc: most recently updated first (default); asc: least recently updated first.")


class ListContentItemsOlderRequest(RequestModel):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50
    sort_by: Literal["created_at", "updated_at", "name"] = QueryParam("created_at", "Sort key.")
    sort_dir: SortDir = "desc"


class ListDraftsRequest(RequestModel):
    brand_id: BrandId
    label: Id | None = QueryParam(None, "Only drafts with this label (an id from list_labels); applied before "
                                        "the 50-draft cut.")
