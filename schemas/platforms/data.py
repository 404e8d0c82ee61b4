"""The platform rules: one entry per platform. Every number carries the public page it comes from.

Changing anything here changes the rules fingerprint checked by `tests/schedules/test_rules_registry.py`: bump
`VALIDATION_VERSION` in `schemas/platforms/__init__.py` and record the new fingerprint there.
Where a platform documents a range we apply the documented hard limits, not the recommendations; where a
documented limit depends on the account (TikTok's per-creator video length, X Premium's longer posts), we
apply the limit every account has.
"""

from __future__ import annotations

from schemas.platforms.rules import (
    GB,
    MB,
    CountLimit,
    MediaSpec,
    PlatformRules,
    PostTypeRules,
    RepairPolicy,
    Requirement,
    TextLimit,
    ThreadRules,
)

JPEG = ("image/jpeg",)
JPEG_PNG = ("image/jpeg", "image/png")
IMAGES = ("image/jpeg", "image/png", "image/gif", "image/webp")
MP4_MOV = ("video/mp4", "video/quicktime")
VIDEOS = ("video/mp4", "video/quicktime", "video/webm")
SPEC = "spec:"  # limits set by this service's own specification (Limits table)

# --- Instagram (Instagram Graph API content publishing) ----------------------------------------------------
IG_MEDIA = "https://developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media"
IG_PUBLISHING = "https://developers.facebook.com/docs/instagram-platform/content-publishing"
_ig_image = MediaSpec("image", IG_MEDIA, JPEG, max_size=8 * MB, min_aspect=(4, 5), max_aspect=(191, 100),
                      note="Feed images: JPEG only, 4:5 to 1.91:1 (other ratios are refused); widths outside "
                           "320-1440 are rescaled by Instagram, so they are not a bound.")
_ig_reel = MediaSpec("video", IG_MEDIA, MP4_MOV, max_size=300 * MB, max_width=1920, min_aspect=(1, 100),
                     max_aspect=(10, 1), min_duration=3, max_duration=900,
                     note="Reels: 3 s to 15 min, up to 300 MB; 9:16 recommended.")
_ig_story_image = MediaSpec("image", IG_MEDIA, JPEG, max_size=8 * MB, min_aspect=(1, 10), max_aspect=(10, 1))
_ig_story_video = MediaSpec("video", IG_MEDIA, MP4_MOV, max_size=100 * MB, max_width=1920, min_aspect=(1, 10),
                            max_aspect=(10, 1), min_duration=3, max_duration=60)
INSTAGRAM = PlatformRules(
    post_types=(
        PostTypeRules("GRID_POST", "Feed post: one image, or a carousel of 2 to 10 images and videos.", IG_PUBLISHING,
                      min_media=1, max_media=10, kinds=("image", "video"), mixed=True, image=_ig_image,
                      video=_ig_reel),
        PostTypeRules("STORY", "Story: one image or one video.", IG_PUBLISHING, min_media=1, max_media=1,
                      kinds=("image", "video"), image=_ig_story_image, video=_ig_story_video),
        PostTypeRules("REEL", "Reel: one video.", IG_PUBLISHING, min_media=1, max_media=1, kinds=("video",),
                      video=_ig_reel),
    ),
    text=(TextLimit("caption", 2200, "characters", IG_MEDIA),),
    counts=(CountLimit("hashtags", 30, IG_MEDIA), CountLimit("mentions", 20, IG_MEDIA)),
    guidance=(
        "Every Instagram post needs media: REEL takes one video, STORY one image or video, GRID_POST one image "
        "or a 2-10 item carousel.",
        "Feed images must be JPEG between 4:5 and 1.91:1; use the repair options preflight offers for others.",
        "Keep hashtags (inline and in `hashtags`) to 30 and @mentions to 20.",
    ),
)

# --- TikTok (Content Posting API) -------------------------------------------------------------------------
TT_DIRECT = "https://developers.tiktok.com/doc/content-posting-api-reference-direct-post"
TT_MEDIA = "https://developers.tiktok.com/doc/content-posting-api-media-transfer-guide"
TT_GUIDELINES = "https://developers.tiktok.com/doc/content-sharing-guidelines"
_tt_video = MediaSpec("video", TT_MEDIA, VIDEOS, max_size=4 * GB, min_width=360, min_height=360, max_width=4096,
                      max_height=4096, min_duration=3, max_duration=600,
                      note="Up to 10 minutes; a creator's own maximum (creator_info) may be shorter.")
_tt_photo = MediaSpec("image", TT_MEDIA, ("image/jpeg", "image/webp"), max_size=20 * MB, max_width=1080,
                      max_height=1920, note="JPEG or WEBP, up to 1080p, 20 MB each.")
TIKTOK = PlatformRules(
    post_types=(
        PostTypeRules("VIDEO", "One video.", TT_DIRECT, min_media=1, max_media=1, kinds=("video",), video=_tt_video),
        PostTypeRules("IMAGE", "One photo.", TT_DIRECT, min_media=1, max_media=1, kinds=("image",), image=_tt_photo),
        PostTypeRules("CAROUSEL", "Photo post with 2 to 35 photos.", TT_DIRECT, min_media=2, max_media=35,
                      kinds=("image",), image=_tt_photo),
    ),
    text=(
        TextLimit("caption", 2200, "utf16", TT_DIRECT, post_types=("VIDEO",),
                  note="Video title/caption: 2,200 UTF-16 code units."),
        TextLimit("caption", 4000, "utf16", TT_DIRECT, post_types=("IMAGE", "CAROUSEL"),
                  note="Photo posts: the caption is the description, 4,000 UTF-16 code units."),
        TextLimit("title", 90, "utf16", TT_DIRECT, post_types=("IMAGE", "CAROUSEL"), note="Photo post title."),
    ),
    requirements=(
        Requirement("privacy_level", "set", "TIKTOK_PRIVACY_LEVEL_REQUIRED",
                    "TikTok needs a privacy level chosen by the user; it is never inferred or defaulted.",
                    "choose_privacy_level", "Choose a TikTok privacy level",
                    "Read this target's dynamic options (creator_privacy_levels), let the user choose, then set it "
                    "with the TikTok privacy route (PUT .../tiktok-privacy).", TT_GUIDELINES),
        Requirement("agreed_to_terms", "true", "TIKTOK_TERMS_NOT_AGREED",
                    "TikTok requires the user's explicit consent to its Music Usage Confirmation before posting.",
                    "agree_to_terms", "Confirm TikTok's terms",
                    "Show the user TikTok's Music Usage Confirmation; only after they agree set "
                    "tiktok_settings.agreed_to_terms to true.", TT_GUIDELINES),
        Requirement("commercial_types", "nonempty", "TIKTOK_COMMERCIAL_TYPES_REQUIRED",
                    "Commercial content must say whether it promotes your brand, branded content, or both.",
                    "set_commercial_types", "Choose the commercial content types",
                    "Set tiktok_settings.commercial_types to YOUR_BRAND and/or BRANDED_CONTENT, or set "
                    "is_commercial_content to false.", TT_GUIDELINES, when="is_commercial_content"),
    ),
    guidance=(
        "Privacy level is never defaulted: read the target's dynamic options and carry the user's choice into "
        "the draft with the TikTok privacy route.",
        "agreed_to_terms must be the user's own consent; never set it on their behalf without asking.",
        "VIDEO takes one video (3 s to 10 min); IMAGE one photo; CAROUSEL 2 to 35 photos.",
    ),
)

# --- Facebook (Pages) -------------------------------------------------------------------------------------
FB_FEED = "https://developers.facebook.com/docs/graph-api/reference/page/feed/"
FB_PHOTOS = "https://developers.facebook.com/docs/graph-api/reference/page/photos/"
FB_VIDEO = "https://developers.facebook.com/docs/video-api/guides/publishing"
FB_REELS = "https://developers.facebook.com/docs/video-api/guides/reels-publishing"
FB_STORIES = "https://developers.facebook.com/docs/page-stories-api"
_fb_photo = MediaSpec("image", FB_PHOTOS, ("image/jpeg", "image/png", "image/gif", "image/bmp", "image/tiff"),
                      max_size=10 * MB)
_fb_video = MediaSpec("video", FB_VIDEO, VIDEOS, max_size=10 * GB, max_duration=240 * 60)
_fb_reel = MediaSpec("video", FB_REELS, ("video/mp4",), min_width=540, min_height=960, min_aspect=(9, 16),
                     max_aspect=(9, 16), min_duration=3, max_duration=90,
                     note="Reels: 9:16, at least 540x960, 3 to 90 seconds.")
_fb_story_video = MediaSpec("video", FB_STORIES, ("video/mp4",), min_width=540, min_height=960, min_aspect=(9, 16),
                            max_aspect=(9, 16), min_duration=3, max_duration=60)
_fb_story_photo = MediaSpec("image", FB_STORIES, JPEG_PNG, max_size=4 * MB)
FACEBOOK = PlatformRules(
    post_types=(
        PostTypeRules("FB_POST", "Feed post with 1 to 10 photos or one video.", FB_FEED, min_media=1, max_media=10,
                      kinds=("image", "video"), max_videos=1, image=_fb_photo, video=_fb_video),
        PostTypeRules("FB_STORY", "Page story: one photo or one video.", FB_STORIES, min_media=1, max_media=1,
                      kinds=("image", "video"), image=_fb_story_photo, video=_fb_story_video),
        PostTypeRules("FB_REEL", "Reel: one vertical video.", FB_REELS, min_media=1, max_media=1, kinds=("video",),
                      video=_fb_reel),
        PostTypeRules("FB_TEXT", "Text-only feed post (links get a preview).", FB_FEED, text_required=True),
    ),
    text=(TextLimit("caption", 63206, "characters", FB_FEED,
                    note="The 63,206-character post limit is enforced by Facebook but not stated on Meta's "
                         "developer pages; the feed reference is the endpoint it applies to."),),
    guidance=(
        "FB_REEL (the default) needs one 9:16 video of 3 to 90 seconds; use FB_TEXT for text-only posts.",
        "FB_POST takes up to 10 photos or a single video, not both.",
    ),
)

# --- YouTube (Data API v3) --------------------------------------------------------------------------------
YT_VIDEOS = "https://developers.google.com/youtube/v3/docs/videos"
YT_INSERT = "https://developers.google.com/youtube/v3/docs/videos/insert"
YT_SHORTS = "https://support.google.com/youtube/answer/10059070"
YT_LONG = "https://support.google.com/youtube/answer/71673"
YT_HASHTAGS = "https://support.google.com/youtube/answer/6390658"
_yt_short = MediaSpec("video", YT_SHORTS, VIDEOS, max_size=256 * GB, max_aspect=(1, 1), max_duration=180,
                      note="Shorts are square or vertical and up to 3 minutes.")
_yt_video = MediaSpec("video", YT_INSERT, VIDEOS, max_size=256 * GB, max_duration=12 * 3600,
                      note="Up to 256 GB or 12 hours; over 15 minutes needs a verified channel.")
YOUTUBE = PlatformRules(
    post_types=(
        PostTypeRules("YT_SHORT", "Short: one square or vertical video up to 3 minutes.", YT_SHORTS, min_media=1,
                      max_media=1, kinds=("video",), video=_yt_short),
        PostTypeRules("YT_VIDEO", "Video: one video.", YT_INSERT, min_media=1, max_media=1, kinds=("video",),
                      video=_yt_video),
    ),
    text=(
        TextLimit("title", 100, "characters", YT_VIDEOS, note="snippet.title: up to 100 characters."),
        TextLimit("description", 5000, "utf8_bytes", YT_VIDEOS,
                  note="snippet.description: up to 5,000 bytes (UTF-8), not characters."),
        TextLimit("tags", 500, "characters", YT_VIDEOS,
                  note="snippet.tags: 500 characters in total, counted as the comma-joined list."),
    ),
    counts=(CountLimit("hashtags", 60, YT_HASHTAGS, severity="warning",
                       note="With more than 60 hashtags YouTube ignores all of them."),),
    requirements=(
        Requirement("title", "set", "YOUTUBE_TITLE_REQUIRED", "A YouTube video needs a title.", "set_title",
                    "Add a YouTube title",
                    "Set youtube_settings.title, or a title in the copy used for YouTube (up to 100 characters).",
                    YT_VIDEOS, copy_fallback="title"),
    ),
    forbidden_characters=("<", ">"),
    forbidden_source=YT_VIDEOS,
    guidance=(
        "The title is youtube_settings.title, else the copy's title; the description is "
        "youtube_settings.description, else the copy's caption with hashtags.",
        "Titles and descriptions may not contain < or >; the description limit is 5,000 UTF-8 bytes.",
        "YT_SHORT needs a square or vertical video up to 3 minutes.",
    ),
)

# --- LinkedIn (Community Management API) ------------------------------------------------------------------
LI_POSTS = "https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api"
LI_IMAGES = "https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api"
LI_VIDEOS = "https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/videos-api"
LI_MULTI = "https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api"
_li_image = MediaSpec("image", LI_IMAGES, ("image/jpeg", "image/png", "image/gif"), max_pixels=36_152_320)
_li_video = MediaSpec("video", LI_VIDEOS, ("video/mp4",), max_size=500 * MB, min_duration=3, max_duration=30 * 60)
LINKEDIN = PlatformRules(
    post_types=(
        PostTypeRules("LI_TEXT", "Text post.", LI_POSTS, text_required=True),
        PostTypeRules("LI_IMAGE", "One image, or 2 to 20 images (multi-image).", LI_MULTI, min_media=1,
                      max_media=20, kinds=("image",), image=_li_image),
        PostTypeRules("LI_VIDEO", "One video.", LI_VIDEOS, min_media=1, max_media=1, kinds=("video",),
                      video=_li_video),
        PostTypeRules("LI_ARTICLE", "Article link post with an optional thumbnail image.", LI_POSTS, max_media=1,
                      kinds=("image",), image=_li_image),
    ),
    text=(TextLimit("caption", 3000, "characters", LI_POSTS, note="Post commentary."),
          TextLimit("title", 400, "characters", LI_POSTS, post_types=("LI_ARTICLE",), note="Article title.")),
    requirements=(
        Requirement("original_url", "set", "LINKEDIN_ARTICLE_URL_REQUIRED", "A LinkedIn article post needs its URL.",
                    "set_article_url", "Add the article URL",
                    "Set linkedin_settings.original_url (and optionally title), or choose another post_type.",
                    LI_POSTS, post_types=("LI_ARTICLE",)),
    ),
    guidance=(
        "LI_TEXT (the default) takes no media: choose LI_IMAGE or LI_VIDEO when attaching media.",
        "LI_ARTICLE needs linkedin_settings.original_url.",
    ),
)

# --- X ----------------------------------------------------------------------------------------------------
X_COUNTING = "https://docs.x.com/resources/fundamentals/counting-characters"
X_TWITTER_TEXT = "https://github.com/twitter/twitter-text/blob/master/config/v3.json"
X_MEDIA = "https://docs.x.com/x-api/media/quickstart/best-practices"
_x_image = MediaSpec("image", X_MEDIA, IMAGES, max_size=5 * MB, note="GIFs up to 15 MB are posted as video.")
_x_video = MediaSpec("video", X_MEDIA, ("video/mp4", "video/quicktime"), max_size=512 * MB, min_width=32,
                     min_height=32, max_width=1920, max_height=1200, min_aspect=(1, 3), max_aspect=(3, 1),
                     min_duration=0.5, max_duration=140)
_x_text = TextLimit("caption", 280, "x_weighted", X_COUNTING,
                    note="Weighted per twitter-text v3; longer posts need X Premium, which we do not assume.")
X = PlatformRules(
    post_types=(
        PostTypeRules("X_POST", "Post with up to 4 images or one video.", X_MEDIA, max_media=4,
                      kinds=("image", "video"), max_videos=1, image=_x_image, video=_x_video),
    ),
    text=(_x_text,),
    thread=ThreadRules(24, TextLimit("thread_part", 280, "x_weighted", X_COUNTING), SPEC + "Limits (X / Bluesky "
                       "thread)", part_media=PostTypeRules("X_THREAD_PART", "Thread part: up to 4 images or one "
                                                           "video.", X_MEDIA, max_media=4, kinds=("image", "video"),
                                                           max_videos=1, image=_x_image, video=_x_video)),
    guidance=(
        "Text counts as X weighted characters: CJK and emoji weigh 2, every link counts as 23.",
        "Split long text into x_settings.thread_parts (up to 24), each within 280 and up to 4 media.",
        "A post needs text or media.",
    ),
)

# --- Bluesky (AT Protocol lexicons) -----------------------------------------------------------------------
BSKY_POST = "https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/feed/post.json"
BSKY_IMAGES = "https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/embed/images.json"
BSKY_VIDEO = "https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/embed/video.json"
BSKY_VIDEO_BLOG = "https://bsky.social/about/blog/09-11-2024-video"
_bs_image = MediaSpec("image", BSKY_IMAGES, ("image/jpeg", "image/png", "image/webp"), max_size=1_000_000)
_bs_video = MediaSpec("video", BSKY_VIDEO, ("video/mp4", "video/quicktime", "video/webm", "video/mpeg"),
                      max_size=100_000_000, max_duration=180,
                      note="100 MB per the lexicon; up to 3 minutes (Bluesky video announcement, updated 2025).")
BLUESKY = PlatformRules(
    post_types=(
        PostTypeRules("BS_TEXT", "Text post (links get a card).", BSKY_POST, text_required=True),
        PostTypeRules("BS_IMAGE", "Post with 1 to 4 images.", BSKY_IMAGES, min_media=1, max_media=4,
                      kinds=("image",), image=_bs_image),
        PostTypeRules("BS_VIDEO", "Post with one video.", BSKY_VIDEO, min_media=1, max_media=1, kinds=("video",),
                      video=_bs_video),
    ),
    text=(TextLimit("caption", 300, "graphemes", BSKY_POST, note="text: maxGraphemes 300."),
          TextLimit("alt_text", 1000, "graphemes", BSKY_VIDEO, note="alt: maxGraphemes 1000.")),
    thread=ThreadRules(24, TextLimit("thread_part", 300, "graphemes", BSKY_POST), SPEC + "Limits (X / Bluesky "
                       "thread)", part_media=PostTypeRules("BS_THREAD_PART", "Thread part: up to 4 images or one "
                                                           "video.", BSKY_IMAGES, max_media=4,
                                                           kinds=("image", "video"), max_videos=1, image=_bs_image,
                                                           video=_bs_video)),
    guidance=(
        "Text is counted in graphemes (one emoji = 1) up to 300; split longer text into thread_parts (up to 24).",
        "Images are at most 1,000,000 bytes each; add alt_text keyed by media ID.",
        "BS_TEXT (the default) takes no media: choose BS_IMAGE or BS_VIDEO when attaching media.",
    ),
)

# --- Mastodon (REST API; per instance) --------------------------------------------------------------------
MA_STATUSES = "https://docs.joinmastodon.org/methods/statuses/#create"
MA_MEDIA = "https://docs.joinmastodon.org/methods/media/#v2"
MA_INSTANCE = "https://docs.joinmastodon.org/entities/Instance/#statuses-max_characters"
_ma_image = MediaSpec("image", MA_INSTANCE, ("image/jpeg", "image/png", "image/gif", "image/webp"),
                      max_size=16 * MB, note="configuration.media_attachments.image_size_limit: 16 MB on a "
                                            "default instance; an instance may set less.")
_ma_video = MediaSpec("video", MA_INSTANCE, ("video/mp4", "video/quicktime", "video/webm"), max_size=99 * MB,
                      note="configuration.media_attachments.video_size_limit: 99 MB on a default instance.")
MASTODON = PlatformRules(
    post_types=(
        PostTypeRules("MA_POST", "Status: text with up to 4 images, or one video.", MA_STATUSES, max_media=4,
                      kinds=("image", "video"), max_videos=1, image=_ma_image, video=_ma_video),
    ),
    text=(TextLimit("caption", 500, "characters", MA_INSTANCE,
                    note="configuration.statuses.max_characters: 500 on a default instance (read per instance at "
                         "connect time); Mastodon counts each link as 23, this count is the stricter plain one."),),
    thread=ThreadRules(24, TextLimit("thread_part", 500, "characters", MA_INSTANCE), SPEC + "Limits (X / Bluesky "
                       "thread)", part_media=PostTypeRules("MA_THREAD_PART", "Thread part: up to 4 images or one "
                                                           "video.", MA_STATUSES, max_media=4,
                                                           kinds=("image", "video"), max_videos=1, image=_ma_image,
                                                           video=_ma_video)),
    guidance=(
        "A status is up to 500 characters on a default instance (the account's instance may allow more or less); "
        "split longer text into mastodon_settings.thread_parts (up to 24 replies).",
        "Up to 4 images or one video per status; spoiler_text is the content warning shown before the text.",
        "visibility is public, unlisted, private (followers only) or direct.",
    ),
)

# --- Telegram (Bot API) -----------------------------------------------------------------------------------
TG_MESSAGE = "https://core.telegram.org/bots/api#sendmessage"
TG_PHOTO = "https://core.telegram.org/bots/api#sendphoto"
TG_VIDEO = "https://core.telegram.org/bots/api#sendvideo"
TG_ALBUM = "https://core.telegram.org/bots/api#sendmediagroup"
TG_FILES = "https://core.telegram.org/bots/api#sending-files"
_tg_photo = MediaSpec("image", TG_PHOTO, IMAGES, max_size=10 * MB, max_width=10000, max_height=10000,
                      min_aspect=(1, 20), max_aspect=(20, 1),
                      note="Width plus height at most 10,000; ratio at most 20.")
_tg_video = MediaSpec("video", TG_FILES, ("video/mp4",), max_size=50 * MB, note="Bots upload files up to 50 MB.")
TELEGRAM = PlatformRules(
    post_types=(
        PostTypeRules("TG_TEXT", "Text message.", TG_MESSAGE, text_required=True),
        PostTypeRules("TG_PHOTO", "One photo with a caption.", TG_PHOTO, min_media=1, max_media=1, kinds=("image",),
                      image=_tg_photo),
        PostTypeRules("TG_VIDEO", "One video with a caption.", TG_VIDEO, min_media=1, max_media=1, kinds=("video",),
                      video=_tg_video),
        PostTypeRules("TG_ALBUM", "Album of 2 to 10 photos and videos.", TG_ALBUM, min_media=2, max_media=10,
                      kinds=("image", "video"), mixed=True, image=_tg_photo, video=_tg_video),
    ),
    text=(TextLimit("caption", 4096, "utf16", TG_MESSAGE, post_types=("TG_TEXT",),
                    note="Message text: 1 to 4,096 characters after entity parsing."),
          TextLimit("caption", 1024, "utf16", TG_PHOTO, post_types=("TG_PHOTO", "TG_VIDEO", "TG_ALBUM"),
                    note="Media caption: up to 1,024 characters.")),
    guidance=(
        "A media caption is limited to 1,024 characters, a text message to 4,096: post long text as TG_TEXT.",
        "Albums take 2 to 10 photos and videos.",
    ),
)

# --- Discord ----------------------------------------------------------------------------------------------
DC_MESSAGE = "https://discord.com/developers/docs/resources/message#create-message"
DC_UPLOADS = "https://discord.com/developers/docs/reference#uploading-files"
DC_CROSSPOST = "https://discord.com/developers/docs/resources/message#crosspost-message"
_dc_image = MediaSpec("image", DC_UPLOADS, IMAGES, max_size=25 * MB, note="25 MiB per message by default.")
_dc_video = MediaSpec("video", DC_UPLOADS, VIDEOS, max_size=25 * MB, note="25 MiB per message by default.")
DISCORD = PlatformRules(
    post_types=(
        PostTypeRules("DC_MESSAGE", "Channel message with up to 10 attachments.", DC_MESSAGE, max_media=10,
                      kinds=("image", "video"), mixed=True, image=_dc_image, video=_dc_video),
        PostTypeRules("DC_ANNOUNCEMENT", "Announcement channel message, optionally published to following servers.",
                      DC_CROSSPOST, max_media=10, kinds=("image", "video"), mixed=True, image=_dc_image,
                      video=_dc_video),
    ),
    text=(TextLimit("caption", 2000, "characters", DC_MESSAGE, note="content: up to 2,000 characters."),),
    guidance=(
        "Messages are up to 2,000 characters with up to 10 attachments (25 MiB per message).",
        "A message needs text or media; publish_to_followers applies to announcement channels.",
    ),
)

# --- Tumblr (Neue Post Format) ----------------------------------------------------------------------------
TB_NPF = "https://www.tumblr.com/docs/npf"
TB_API = "https://www.tumblr.com/docs/en/api/v2"
_tb_image = MediaSpec("image", TB_NPF, IMAGES, max_size=20 * MB)
_tb_video = MediaSpec("video", TB_NPF, ("video/mp4", "video/quicktime"), max_size=500 * MB, max_duration=600)
TUMBLR = PlatformRules(
    post_types=(
        PostTypeRules("TB_TEXT", "Text post.", TB_NPF, max_media=10, kinds=("image",), image=_tb_image,
                      text_required=True),
        PostTypeRules("TB_PHOTO", "Photo post with 1 to 10 images.", TB_NPF, min_media=1, max_media=10,
                      kinds=("image",), image=_tb_image),
        PostTypeRules("TB_VIDEO", "Video post.", TB_NPF, min_media=1, max_media=1, kinds=("video",), video=_tb_video),
        PostTypeRules("TB_LINK", "Link post.", TB_NPF, max_media=1, kinds=("image",), image=_tb_image),
    ),
    text=(TextLimit("title", 500, "characters", TB_API, note="Heading block; this service bounds it at 500."),),
    requirements=(
        Requirement("link", "set", "TUMBLR_LINK_REQUIRED", "A Tumblr link post needs its URL.", "set_link",
                    "Add the link", "Set tumblr_settings.link, or choose another post_type.", TB_NPF,
                    post_types=("TB_LINK",)),
    ),
    guidance=(
        "TB_LINK needs tumblr_settings.link; TB_PHOTO 1 to 10 images; TB_VIDEO one video.",
        "Tags go in tumblr_settings.tags; the copy's hashtags are added to the text.",
    ),
)

# --- Pinterest (API v5) -----------------------------------------------------------------------------------
PIN_CREATE = "https://developers.pinterest.com/docs/api/v5/pins-create"
PIN_SPECS = "https://help.pinterest.com/en/business/article/pinterest-product-specs"
_pin_image = MediaSpec("image", PIN_SPECS, ("image/jpeg", "image/png", "image/webp"), max_size=20 * MB,
                       note="2:3 (1000x1500) recommended.")
_pin_video = MediaSpec("video", PIN_SPECS, ("video/mp4", "video/quicktime"), max_size=2 * GB, min_aspect=(1, 2),
                       max_aspect=(191, 100), min_duration=4, max_duration=15 * 60)
PINTEREST = PlatformRules(
    post_types=(
        PostTypeRules("PIN_IMAGE", "Image Pin (1 image) or carousel Pin (2 to 5 images).", PIN_CREATE, min_media=1,
                      max_media=5, kinds=("image",), image=_pin_image),
        PostTypeRules("PIN_VIDEO", "Video Pin: one video.", PIN_CREATE, min_media=1, max_media=1, kinds=("video",),
                      video=_pin_video),
    ),
    text=(TextLimit("caption", 800, "characters", PIN_CREATE, note="The Pin description."),
          TextLimit("title", 100, "characters", PIN_CREATE),
          TextLimit("alt_text", 500, "characters", PIN_CREATE)),
    requirements=(
        Requirement("board_id", "set", "PINTEREST_BOARD_REQUIRED", "Every Pin needs a board.", "choose_board",
                    "Choose a Pinterest board",
                    "Read this target's dynamic options (pinterest_boards) and set pinterest_settings.board_id to "
                    "one of the returned values.", PIN_CREATE),
    ),
    guidance=(
        "Every Pin needs pinterest_settings.board_id from the target's pinterest_boards dynamic options.",
        "The copy's caption is the Pin description (800); title up to 100; alt_text up to 500.",
    ),
)

# --- Threads ----------------------------------------------------------------------------------------------
TH_POSTS = "https://developers.facebook.com/documentation/threads/posts"
TH_LINKS = "https://developers.facebook.com/documentation/threads/create-posts/text-attachments"
TH_MEDIA = "https://developers.facebook.com/docs/threads/overview"
TH_REPLIES = "https://developers.facebook.com/docs/threads/reply-management"
_th_image = MediaSpec("image", TH_MEDIA, JPEG_PNG, max_size=8 * MB, min_aspect=(1, 10), max_aspect=(10, 1),
                      note="Widths outside 320-1440 are rescaled by Threads, so they are not a bound.")
_th_video = MediaSpec("video", TH_MEDIA, MP4_MOV, max_size=1 * GB, max_width=1920, min_aspect=(1, 100),
                      max_aspect=(10, 1), max_duration=300)
_th_text = TextLimit("caption", 500, "threads", TH_POSTS, note="Emoji count as their UTF-8 bytes.")
_th_links = CountLimit("links", 5, TH_LINKS, unique=True, note="Unique URLs in the text.")
THREADS = PlatformRules(
    post_types=(
        PostTypeRules("TH_TEXT", "Text post.", TH_POSTS, text_required=True),
        PostTypeRules("TH_IMAGE", "One image.", TH_POSTS, min_media=1, max_media=1, kinds=("image",), image=_th_image),
        PostTypeRules("TH_VIDEO", "One video.", TH_POSTS, min_media=1, max_media=1, kinds=("video",), video=_th_video),
        PostTypeRules("TH_CAROUSEL", "Carousel of 2 to 20 images and videos.", TH_POSTS, min_media=2, max_media=20,
                      kinds=("image", "video"), mixed=True, image=_th_image, video=_th_video),
    ),
    text=(_th_text, TextLimit("topic_tag", 50, "characters", TH_POSTS)),
    counts=(_th_links,),
    thread=ThreadRules(9, TextLimit("thread_part", 500, "threads", TH_POSTS), SPEC + "Limits (Threads app)",
                       part_links=_th_links),
    follow_up_reply=TextLimit("follow_up_reply", 500, "threads", TH_REPLIES),
    guidance=(
        "Text is up to 500 characters with each emoji counted as its UTF-8 bytes (most emoji 4), and at most "
        "5 distinct links.",
        "Up to 9 text-only thread_parts; the follow_up_reply is posted once the main post is live.",
        "TH_CAROUSEL takes 2 to 20 images and videos.",
    ),
)

# --- Google Business Profile ------------------------------------------------------------------------------
GBP_POSTS = "https://developers.google.com/my-business/reference/rest/v4/accounts.locations.localPosts"
GBP_HELP = "https://support.google.com/business/answer/7662907"
GOOGLE_BUSINESS = PlatformRules(
    post_types=(PostTypeRules("GBP_UPDATE", "Update (What's new) post: text only in this service.", GBP_POSTS,
                              text_required=True),),
    text=(TextLimit("caption", 1500, "characters", GBP_HELP, note="localPosts.summary: up to 1,500 characters."),),
    guidance=(
        "Text only (copy from platform_copy.google_business or single_copy), up to 1,500 characters.",
        "Google rejects posts that contain phone numbers.",
    ),
)

RULES: dict[str, PlatformRules] = {
    "instagram": INSTAGRAM, "tiktok": TIKTOK, "facebook": FACEBOOK, "youtube": YOUTUBE, "linkedin": LINKEDIN,
    "x": X, "bluesky": BLUESKY, "mastodon": MASTODON, "telegram": TELEGRAM, "discord": DISCORD, "tumblr": TUMBLR,
    "pinterest": PINTEREST, "threads": THREADS, "google_business": GOOGLE_BUSINESS,
}

# Repair options (preflight) and the media repair-derivative route use these limits; they are versioned with
# the rules. Video geometry is even (H.264 4:2:0) and bounded in duration (one render per job lease).
REPAIR_POLICY = RepairPolicy(max_crop_loss=0.25, max_pad_share=0.5, max_upscale=2.0, aspect_tolerance=0.01,
                             kinds=("image", "video"), max_video_seconds=120.0, background="#000000",
                             source=SPEC + "Versioning 2 (repair options under a versioned policy)")
