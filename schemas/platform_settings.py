"""The twelve `*_settings` objects of a draft: every field, enum and default of the spec's table.

These models check shape only (types, enums, bounds, duplicates). Rules that need other fields or stored
data (commercial types when commercial, media kinds and readiness, alt_text keys) are checked by the
content routes and by preflight. Post-type enums come from the platform registry.
Capabilities derive each platform's settings fields from these models.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from schemas.ids import Id
from schemas.platforms import BY_KEY
from schemas.validators import unique_items


def media_list(max_items: int, description: str = "Media IDs in posting order.") -> Any:
    return Annotated[list[Id], Field(max_length=max_items, description=description), AfterValidator(unique_items)]


def post_types(platform: str) -> Any:
    p = BY_KEY[platform]
    return Literal[p.post_types]


AltText = Annotated[dict[Id, Annotated[str, Field(max_length=2000)]],
                    # only media-ID keys: the schema says so, as the server refuses any other key
                    Field(max_length=24, description="Alt text keyed by a media ID of the same media_ids.",
                          json_schema_extra={"additionalProperties": False})]
Tags = Annotated[list[Annotated[str, Field(min_length=1, max_length=100)]], Field(max_length=50),
                 AfterValidator(unique_items)]
Url = Annotated[str, Field(min_length=1, max_length=2000, pattern=r"^https?://\S+$")]


class Settings(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class InstagramSettings(Settings):
    media_ids: media_list(10) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("instagram") = "REEL"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    trial_reel: bool | None = None
    graduation_strategy: Literal["MANUAL", "SS_PERFORMANCE"] | None = None
    collaborators: Annotated[list[Annotated[str, Field(min_length=1, max_length=30)]], Field(max_length=3),
                             AfterValidator(unique_items)] = []


class TikTokSettings(Settings):
    media_ids: media_list(35) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("tiktok") = "VIDEO"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    privacy_level: Literal["PUBLIC_TO_EVERYONE", "FOLLOWER_OF_CREATOR", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"] | None = (
        Field(None, description="Never defaulted: choose from the target's dynamic options."))
    agreed_to_terms: bool = Field(False, description="Must be true to publish.")
    is_aigc: bool = False
    is_commercial_content: bool = False
    commercial_types: Annotated[list[Literal["YOUR_BRAND", "BRANDED_CONTENT"]], Field(max_length=2),
                                AfterValidator(unique_items)] = Field(
        [], description="Required (non-empty) when is_commercial_content is true.")
    allow_comment: bool = False
    allow_duet: bool = False
    allow_stitch: bool = False
    auto_add_music: bool = False


class FacebookSettings(Settings):
    media_ids: media_list(10) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("facebook") = "FB_REEL"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)


class YouTubeSettings(Settings):
    title: Annotated[str, Field(max_length=100)] | None = None
    description: Annotated[str, Field(max_length=5000)] | None = None
    media_ids: media_list(1) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("youtube") = "YT_SHORT"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    privacy_level: Literal["PUBLIC", "UNLISTED", "PRIVATE"] = "PUBLIC"
    tags: Tags = []
    notify_subscribers: bool = False
    made_for_kids: bool = False


class LinkedInSettings(Settings):
    media_ids: media_list(20) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("linkedin") = "LI_TEXT"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    visibility: Literal["PUBLIC", "CONNECTIONS"] = "PUBLIC"
    title: Annotated[str, Field(max_length=400)] | None = Field(None, description="Article title (LI_ARTICLE).")
    original_url: Url | None = Field(None, description="Article URL (LI_ARTICLE).")


class XThreadPart(Settings):
    text: Annotated[str, Field(min_length=1, max_length=25000)]
    media_ids: media_list(4) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)


class BlueskyThreadPart(XThreadPart):
    alt_text: AltText = {}


class ThreadsThreadPart(Settings):
    text: Annotated[str, Field(min_length=1, max_length=10000)]


class XSettings(Settings):
    media_ids: media_list(4) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    thread_parts: Annotated[list[XThreadPart], Field(max_length=24)] | None = None


class BlueskySettings(Settings):
    media_ids: media_list(4) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("bluesky") = "BS_TEXT"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    alt_text: AltText = {}
    thread_parts: Annotated[list[BlueskyThreadPart], Field(max_length=24)] | None = None


class MastodonSettings(Settings):
    media_ids: media_list(4, "Up to 4 images, or one video.") = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("mastodon") = "MA_POST"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    visibility: Literal["public", "unlisted", "private", "direct"] = "public"
    spoiler_text: Annotated[str, Field(max_length=500, description="Content warning shown before the text.")] | None \
        = None
    sensitive: bool = False
    language: Annotated[str, Field(pattern=r"^[a-z]{2}$", description="ISO 639-1 code of the text.")] | None = None
    thread_parts: Annotated[list[XThreadPart], Field(max_length=24)] | None = None


class TelegramSettings(Settings):
    media_ids: media_list(10) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("telegram") = "TG_TEXT"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    disable_link_preview: bool = False
    silent: bool = False


class DiscordSettings(Settings):
    media_ids: media_list(10) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("discord") = "DC_MESSAGE"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    publish_to_followers: bool = False


class TumblrSettings(Settings):
    media_ids: media_list(10) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("tumblr") = "TB_TEXT"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    title: Annotated[str, Field(max_length=500)] | None = None
    link: Url | None = None
    tags: Tags = []
    alt_text: AltText = {}


class PinterestSettings(Settings):
    media_ids: media_list(5, "1 to 5 images, or one video.") = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("pinterest") = "PIN_IMAGE"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    board_id: Annotated[str, Field(min_length=1, max_length=200)] | None = Field(
        None, description="Every Pin needs a board: a value from the target's pinterest_boards options.")
    board_name: Annotated[str, Field(max_length=200)] | None = None
    board_section_id: Annotated[str, Field(max_length=200)] | None = None
    title: Annotated[str, Field(max_length=100)] | None = None
    link: Url | None = None
    alt_text: Annotated[str, Field(max_length=500)] | None = None


class ThreadsFollowUpReply(Settings):
    text: Annotated[str, Field(min_length=1, max_length=10000)]


class ThreadsSettings(Settings):
    media_ids: media_list(20) = []  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    post_type: post_types("threads") = "TH_TEXT"  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    reply_control: Literal["everyone", "accounts_you_follow", "mentioned_only", "followers_only"] = "everyone"
    topic_tag: Annotated[str, Field(min_length=1, max_length=50, pattern=r"^[^#.&]+$",
                                    description="One tag without #, full stops or ampersands.")] | None = None
    thread_parts: Annotated[list[ThreadsThreadPart], Field(max_length=9)] | None = None
    follow_up_reply: ThreadsFollowUpReply | None = Field(None, description="Posted once the main post is live.")


SETTINGS_MODELS: dict[str, type[Settings]] = {
    "instagram": InstagramSettings, "tiktok": TikTokSettings, "facebook": FacebookSettings,
    "youtube": YouTubeSettings, "linkedin": LinkedInSettings, "x": XSettings, "bluesky": BlueskySettings,
    "mastodon": MastodonSettings, "telegram": TelegramSettings, "discord": DiscordSettings, "tumblr": TumblrSettings,
    "pinterest": PinterestSettings, "threads": ThreadsSettings,
}
assert set(SETTINGS_MODELS) == {p.key for p in BY_KEY.values() if p.settings_key}
