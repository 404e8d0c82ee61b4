"""Media: the supported content types, size and probing limits, and the response shapes of the media routes.

The allow-list and limits here are the one source of truth: request models, processing, the docs and the
tests all read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from schemas.envelope import Link
from schemas.ids import Id
from schemas.paging import Cursor
from schemas.requests import PathParam, QueryParam, RequestModel

MiB = 1024 * 1024
MediaKind = Literal["image", "video"]
MEDIA_KINDS: tuple[MediaKind, ...] = get_args(MediaKind)


@dataclass(frozen=True)
class MediaType:
    content_type: str
    kind: MediaKind
    # What the leading bytes must be (see tools.media.probe.sniff): one family may serve several types.
    family: Literal["jpeg", "png", "gif", "webp", "isobmff", "webm"]
    extensions: tuple[str, ...]


MEDIA_TYPES: tuple[MediaType, ...] = (
    MediaType("image/jpeg", "image", "jpeg", (".jpg", ".jpeg")),
    MediaType("image/png", "image", "png", (".png",)),
    MediaType("image/gif", "image", "gif", (".gif",)),
    MediaType("image/webp", "image", "webp", (".webp",)),
    MediaType("video/mp4", "video", "isobmff", (".mp4", ".m4v")),
    MediaType("video/quicktime", "video", "isobmff", (".mov",)),
    MediaType("video/webm", "video", "webm", (".webm",)),
)
BY_CONTENT_TYPE: dict[str, MediaType] = {t.content_type: t for t in MEDIA_TYPES}
ContentType = Literal["image/jpeg", "image/png", "image/gif", "image/webp", "video/mp4", "video/quicktime",
                      "video/webm"]
assert set(ContentType.__args__) == set(BY_CONTENT_TYPE)

# Largest file accepted, by kind (uploads declare it; imports must announce it in Content-Length).
MAX_BYTES: dict[str, int] = {"image": 50 * MiB, "video": 1024 * MiB}
MAX_ANY_BYTES = max(MAX_BYTES.values())

# Probing limits: decompression-bomb and runaway-decode guards.
MAX_IMAGE_PIXELS = 64_000_000  # e.g. 8000 x 8000
MAX_IMAGE_SIDE = 16_384
MAX_IMAGE_FRAMES = 1_000  # animated GIF / WebP
MAX_VIDEO_SIDE = 8_192
MAX_VIDEO_SECONDS = 4 * 3600
THUMBNAIL_LARGE = 1280  # longest side, pixels; thumbnails are JPEG and never upscaled
THUMBNAIL_SMALL = 320
THUMBNAIL_CONTENT_TYPE = "image/jpeg"

# Upload capabilities (upload sessions and the legacy upload URL) are valid this long after they are issued.
UPLOAD_TTL_SECONDS = 15 * 60

LIST_MAX_LIMIT = 24
LIST_DEFAULT_LIMIT = 12
FILENAME_MAX = 500
DESCRIPTION_MAX = 10_000
URL_MAX = 2_000

# Media `status` values. Attachable to content only in READY_STATUSES (storage.tables.media).
MediaStatus = Literal["pending_upload", "ready_for_processing", "processing", "completed", "failed"]
MediaSource = Literal["upload", "legacy_upload", "remote_import", "repair_derivative"]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NextAction(_Out):
    action: str = Field(description="Bounded action identifier: read_media_again, repair_media, upload_media_bytes, "
                                    "mark_ready_for_processing.")
    guidance: str
    # Absent (not null) on other actions, as the handlers have always written it.
    reason_code: str | None = Field(default=None, description="Machine code of a failure (repair_media only).",
                                    exclude_if=lambda v: v is None)


class Readiness(_Out):
    ready_for_content: bool = Field(description="True only when the item may be attached to content.")
    next_actions: list[NextAction] = Field(max_length=3)


class MediaLinks(_Out):
    self: Link


class MediaItem(_Out):
    id: str
    file_name: str
    content_type: str
    size: int | None = Field(description="Bytes; null until the bytes of an import have arrived.")
    duration: float | None = Field(description="Seconds (video); null for images and before probing.")
    status: MediaStatus
    label_ids: list[str]
    folder_id: str | None
    download_url: str = Field(description="Opaque capability URL under {media_url}/assets/; served once completed.")
    thumbnail_large_url: str | None
    thumbnail_small_url: str | None
    source: MediaSource
    description: str | None
    last_used_at: str | None
    created_at: str
    updated_at: str
    readiness: Readiness
    links: MediaLinks


class MediaList(_Out):
    items: list[MediaItem]
    has_more: bool
    next_cursor: str | None = Field(default=None, description="Present with pagination=cursor; send back as cursor.")

    # No return annotation: pydantic then keeps the fields' serialization schema (an annotation would replace it).
    @model_serializer(mode="wrap")
    def _cursor_only_when_asked(self, handler: SerializerFunctionWrapHandler):
        """The default list has no next_cursor at all (spec: pagination=cursor opts in); with pagination=cursor
        it is present, null on the last page. So it is written only when the handler set it."""
        data = handler(self)
        if "next_cursor" not in self.model_fields_set:
            data.pop("next_cursor", None)
        return data


class ImportResult(_Out):
    id: str
    status: MediaStatus
    replayed: bool
    download_url: str
    links: MediaLinks


class UploadInstructions(_Out):
    url: str = Field(description="Signed, single-use PUT capability on this service; needs no API key.")
    method: Literal["PUT"]
    headers: dict[str, str] = Field(description="Headers to send with the PUT (Content-Type, Content-Length).")
    expires_at: str


class UploadSession(_Out):
    id: str
    status: MediaStatus
    upload: UploadInstructions
    download_url: str
    links: MediaLinks


class UploadUrl(_Out):
    id: str
    upload_url: str = Field(description="PUT the bytes here with the same Content-Type; needs no API key.")
    expires_at: str
    status: MediaStatus
    links: MediaLinks


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Brand ID, from get_context.")]
MediaId = Annotated[str, PathParam("Media ID, from list_media, an upload or an import.")]
# Printable, no path separators; trimmed by the handler.
Filename = Annotated[str, Field(min_length=1, max_length=FILENAME_MAX, pattern=r"^[^\x00-\x1f\x7f/\\]+$",
                                description="File name (no slashes), up to 500 characters.")]


FolderId = Annotated[Id | None, Field(description="An existing media folder of this brand.")]
Description = Annotated[str | None, Field(max_length=DESCRIPTION_MAX, description="Free text, e.g. alt text.")]


class BrandPath(RequestModel):
    brand_id: BrandId


class MediaPath(RequestModel):
    brand_id: BrandId
    media_id: MediaId


class CreateUploadSessionRequest(RequestModel):
    brand_id: BrandId
    filename: Filename
    content_type: ContentType
    size: int = Field(ge=1, le=MAX_ANY_BYTES, description="Exact size of the file in bytes (images up to 50 MiB, "
                                                          "videos up to 1 GiB).")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="64 lower-case hex digits.")
    folder_id: FolderId = None
    description: Description = None


class ImportMediaRequest(RequestModel):
    brand_id: BrandId
    url: str = Field(min_length=1, max_length=URL_MAX,
                     description="Public http(s) URL of an image or video; its server must send Content-Length.")
    filename: Filename | None = None
    folder_id: FolderId = None


class RequestUploadUrlRequest(RequestModel):
    brand_id: BrandId
    filename: Filename
    content_type: ContentType
    folder_id: FolderId = None


class ListMediaRequest(RequestModel):
    brand_id: BrandId
    limit: int = QueryParam(LIST_DEFAULT_LIMIT, "Items per page, 1 to 24.", ge=1, le=LIST_MAX_LIMIT)
    pagination: Literal["cursor"] | None = QueryParam(None, "`cursor` adds next_cursor to the response.")
    cursor: Cursor = None


class UpdateMediaRequest(RequestModel):
    brand_id: BrandId
    media_id: MediaId
    status: Literal["ready_for_processing"] | None = Field(
        None, description="Legacy flow: set after PUTting the bytes to upload_url; starts processing.")
    description: Description = None
    folder_id: FolderId = None
