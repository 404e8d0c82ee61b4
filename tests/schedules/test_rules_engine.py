"""The pure preflight rules engine, table-driven per platform: each rule has a passing case (the platform's
good baseline, or an exact-limit case) and a failing case checked for code, field_path, severity and repair
action. No database: the engine takes plain facts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from schemas.platform_settings import SETTINGS_MODELS
from schemas.platforms import BY_KEY, PLATFORMS, REPAIR_POLICY, VALIDATION_VERSION
from schemas.preflight import ContentFacts, IntegrationFacts, MediaFacts, PlanFacts, PreflightFacts
from tools.schedules.rules_engine import ACTIONS, evaluate

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
IID = "int_01JABCDEFGHJKMNPQRSTVWXY00"
MB = 1024 * 1024


def mid(n: int) -> str:
    return f"med_01J{n:023d}"


I1, I2, I3, V1, V2 = mid(1), mid(2), mid(3), mid(11), mid(12)


def image(id_: str, w: int = 1080, h: int = 1350, ct: str = "image/jpeg", size: int = 200_000, **kw) -> MediaFacts:
    return MediaFacts(**{"id": id_, "status": "completed", "kind": "image", "content_type": ct, "width": w,
                         "height": h, "size": size, "sha256": "ab" * 32, **kw})


def video(id_: str, w: int | None = 1080, h: int | None = 1920, duration: float | None = 30,
          ct: str = "video/mp4", size: int | None = 10 * MB, **kw) -> MediaFacts:
    return MediaFacts(**{"id": id_, "status": "completed", "kind": "video", "content_type": ct, "width": w,
                         "height": h, "duration": duration, "size": size, "sha256": "cd" * 32, **kw})


# A passing baseline per platform: settings, copy and media that raise no blocker.
GOOD: dict[str, dict[str, Any]] = {
    "instagram": {"settings": {"post_type": "REEL", "media_ids": [V1]}, "media": [video(V1)]},
    "tiktok": {"settings": {"post_type": "VIDEO", "media_ids": [V1], "privacy_level": "SELF_ONLY",
                            "agreed_to_terms": True}, "media": [video(V1)]},
    "facebook": {"settings": {"post_type": "FB_REEL", "media_ids": [V1]}, "media": [video(V1)]},
    "youtube": {"settings": {"post_type": "YT_SHORT", "media_ids": [V1], "title": "A short"}, "media": [video(V1)]},
    "linkedin": {"settings": {"post_type": "LI_TEXT"}},
    "x": {"settings": {}},
    "bluesky": {"settings": {}},
    "mastodon": {"settings": {}},
    "telegram": {"settings": {}},
    "discord": {"settings": {}},
    "tumblr": {"settings": {}},
    "pinterest": {"settings": {"post_type": "PIN_IMAGE", "media_ids": [I1], "board_id": "board-1"},
                  "media": [image(I1, 1000, 1500)]},
    "threads": {"settings": {}},
    "google_business": {"settings": None},
}
assert set(GOOD) == {p.key for p in PLATFORMS}


def facts(platform: str, *, settings: Any = "good", copy: Any = "good", media: Any = "good",
          status: str = "connected", per_platform: bool = False, **extra: Any) -> PreflightFacts:
    base = GOOD[platform]
    settings = base["settings"] if settings == "good" else settings
    copy = {"caption": "Hello world"} if copy == "good" else copy
    media = base.get("media", []) if media == "good" else media
    item: dict[str, Any] = {"id": "ci_01JABCDEFGHJKMNPQRSTVWXY00", "copy_mode": "per_platform" if per_platform
                            else "single"}
    if per_platform:
        item["platform_copy"] = {platform: copy} if copy is not None else {}
    else:
        item["single_copy"] = copy
    sk = BY_KEY[platform].settings_key
    if sk and settings is not None:
        item[sk] = settings
    return PreflightFacts(content=ContentFacts.from_content_item(item), integration_ids=(IID,),
                          integrations={IID: IntegrationFacts(id=IID, platform=platform, status=status,
                                                              display_name="Acme")},
                          media={m.id: m for m in media}, now=NOW, **extra)


def with_settings(platform: str, **changes: Any) -> dict[str, Any]:
    return {**GOOD[platform]["settings"], **changes}


@pytest.mark.parametrize("platform", list(GOOD))
def test_good_baseline_passes(platform: str) -> None:
    result = evaluate(facts(platform))
    assert result.blockers == [], [(i.code, i.field_path, i.message) for i in result.blockers]
    assert result.can_schedule and result.targets[0].can_schedule
    assert result.validation_version == VALIDATION_VERSION


def _max_caption(platform: str) -> tuple[int, str]:
    p = BY_KEY[platform]
    settings = GOOD[platform]["settings"] or {}
    pt = settings.get("post_type") or p.default_post_type
    assert pt is not None
    limit = p.rules.text_limit("caption", pt) or p.rules.text_limit("description", pt)
    assert limit is not None
    return limit.max, "DESCRIPTION_TOO_LONG" if limit.field == "description" else "CAPTION_TOO_LONG"


@pytest.mark.parametrize("platform", [k for k in GOOD if k != "tumblr"])  # Tumblr documents no text limit
def test_caption_limit_exact_passes_one_more_fails(platform: str) -> None:
    n, code = _max_caption(platform)
    ok = evaluate(facts(platform, copy={"caption": "a" * n}))
    assert not [i for i in ok.blockers if i.code == code]
    bad = evaluate(facts(platform, copy={"caption": "a" * (n + 1)}))
    issue = next(i for i in bad.blockers if i.code == code)
    assert issue.field_path == "$.single_copy.caption" and issue.scope == "copy"
    assert issue.repair_action.action == "shorten_text"
    assert issue.integration_id == IID and issue.platform == platform
    assert str(n) in issue.message


@pytest.mark.parametrize("platform", list(GOOD))
def test_copy_missing_for_per_platform_mode(platform: str) -> None:
    ok = evaluate(facts(platform, per_platform=True))
    assert not [i for i in ok.blockers if i.code == "COPY_MISSING"]
    bad = evaluate(facts(platform, per_platform=True, copy=None))
    issue = next(i for i in bad.blockers if i.code == "COPY_MISSING")
    assert issue.field_path == f"$.platform_copy.{platform}" and issue.repair_action.action == "add_platform_copy"


@pytest.mark.parametrize("platform", [p.key for p in PLATFORMS if p.settings_key])
def test_settings_missing(platform: str) -> None:
    bad = evaluate(facts(platform, settings=None))
    issue = next(i for i in bad.blockers if i.code == "SETTINGS_MISSING")
    assert issue.field_path == f"$.{BY_KEY[platform].settings_key}" and issue.scope == "settings"
    assert issue.repair_action.action == "add_platform_settings"


@pytest.mark.parametrize(("status", "code"), [("expired", "TARGET_EXPIRED"), ("needs_reauth", "TARGET_EXPIRED"),
                                              ("disconnected", "TARGET_DISCONNECTED")])
@pytest.mark.parametrize("platform", ["tiktok", "x", "google_business"])
def test_target_connection(platform: str, status: str, code: str) -> None:
    bad = evaluate(facts(platform, status=status))
    issue = bad.blockers[0]
    assert (issue.code, issue.field_path, issue.scope) == (code, "$.integration_ids[0]", "target")
    assert issue.repair_action.action == "reconnect_integration"
    assert bad.targets[0].connection_status == status and not bad.targets[0].can_schedule


def test_target_not_in_brand() -> None:
    f = facts("x").model_copy(update={"integration_ids": (IID, "int_01JABCDEFGHJKMNPQRSTVWXY99")})
    result = evaluate(f)
    missing = result.targets[1]
    assert missing.connection_status == "not_found" and missing.platform is None and not missing.can_schedule
    assert missing.blockers[0].code == "TARGET_NOT_FOUND" and missing.blockers[0].field_path == "$.integration_ids[1]"
    assert missing.blockers[0].repair_action.action == "remove_target"
    assert result.targets[0].can_schedule and not result.can_schedule


# (platform, name, facts overrides, expected code, field_path, action, severity)
CASES: list[tuple[str, str, dict[str, Any], str, str, str, str]] = [
    # Instagram
    ("instagram", "reel needs media", {"settings": with_settings("instagram", media_ids=[]), "media": []},
     "MEDIA_REQUIRED", "$.instagram_settings.media_ids", "attach_media", "blocker"),
    ("instagram", "reel takes video", {"settings": with_settings("instagram", media_ids=[I1]), "media": [image(I1)]},
     "MEDIA_KIND_NOT_ALLOWED", "$.instagram_settings.media_ids[0]", "change_post_type", "blocker"),
    ("instagram", "media processing", {"media": [video(V1, status="processing")]},
     "MEDIA_NOT_READY", "$.instagram_settings.media_ids[0]", "read_media_again", "blocker"),
    ("instagram", "media failed", {"media": [video(V1, status="failed")]},
     "MEDIA_FAILED", "$.instagram_settings.media_ids[0]", "repair_media", "blocker"),
    ("instagram", "media not in brand", {"media": []},
     "MEDIA_NOT_FOUND", "$.instagram_settings.media_ids[0]", "replace_media", "blocker"),
    ("instagram", "reel over 300 MB", {"media": [video(V1, size=301 * MB)]},
     "MEDIA_FILE_TOO_LARGE", "$.instagram_settings.media_ids[0]", "replace_media", "blocker"),
    ("instagram", "reel under 3 s", {"media": [video(V1, duration=2.5)]},
     "MEDIA_DURATION_TOO_SHORT", "$.instagram_settings.media_ids[0]", "replace_media", "blocker"),
    ("instagram", "reel over 15 min", {"media": [video(V1, duration=901)]},
     "MEDIA_DURATION_TOO_LONG", "$.instagram_settings.media_ids[0]", "replace_media", "blocker"),
    ("instagram", "grid image too tall", {"settings": {"post_type": "GRID_POST", "media_ids": [I1]},
                                          "media": [image(I1, 1000, 2000)]},
     "MEDIA_ASPECT_RATIO_OUT_OF_RANGE", "$.instagram_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    ("instagram", "grid image png", {"settings": {"post_type": "GRID_POST", "media_ids": [I1]},
                                     "media": [image(I1, ct="image/png")]},
     "MEDIA_FORMAT_NOT_SUPPORTED", "$.instagram_settings.media_ids[0]", "replace_media", "blocker"),
    ("instagram", "31 hashtags", {"copy": {"caption": "Hi", "hashtags": [f"t{i}" for i in range(31)]}},
     "HASHTAG_LIMIT_EXCEEDED", "$.single_copy.hashtags", "remove_hashtags", "blocker"),
    ("instagram", "inline hashtags count", {"copy": {"caption": " ".join(f"#t{i}" for i in range(31))}},
     "HASHTAG_LIMIT_EXCEEDED", "$.single_copy.caption", "remove_hashtags", "blocker"),
    ("instagram", "21 mentions", {"copy": {"caption": " ".join(f"@user{i}" for i in range(21))}},
     "MENTION_LIMIT_EXCEEDED", "$.single_copy.caption", "remove_mentions", "blocker"),
    # TikTok
    ("tiktok", "privacy unset", {"settings": with_settings("tiktok", privacy_level=None)},
     "TIKTOK_PRIVACY_LEVEL_REQUIRED", "$.tiktok_settings.privacy_level", "choose_privacy_level", "blocker"),
    ("tiktok", "terms not agreed", {"settings": with_settings("tiktok", agreed_to_terms=False)},
     "TIKTOK_TERMS_NOT_AGREED", "$.tiktok_settings.agreed_to_terms", "agree_to_terms", "blocker"),
    ("tiktok", "commercial without types", {"settings": with_settings("tiktok", is_commercial_content=True)},
     "TIKTOK_COMMERCIAL_TYPES_REQUIRED", "$.tiktok_settings.commercial_types", "set_commercial_types", "blocker"),
    ("tiktok", "carousel of one", {"settings": with_settings("tiktok", post_type="CAROUSEL", media_ids=[I1]),
                                   "media": [image(I1)]},
     "MEDIA_TOO_FEW", "$.tiktok_settings.media_ids", "attach_media", "blocker"),
    ("tiktok", "video under 3 s", {"media": [video(V1, duration=2)]},
     "MEDIA_DURATION_TOO_SHORT", "$.tiktok_settings.media_ids[0]", "replace_media", "blocker"),
    ("tiktok", "video caption in UTF-16", {"copy": {"caption": "👍" * 1101}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("tiktok", "photo title over 90", {"settings": with_settings("tiktok", post_type="IMAGE", media_ids=[I1]),
                                       "media": [image(I1)], "copy": {"caption": "x", "title": "t" * 91}},
     "TITLE_TOO_LONG", "$.single_copy.title", "shorten_text", "blocker"),
    # Facebook
    ("facebook", "text post with media", {"settings": {"post_type": "FB_TEXT", "media_ids": [I1]},
                                          "media": [image(I1)]},
     "MEDIA_NOT_ALLOWED", "$.facebook_settings.media_ids", "change_post_type", "blocker"),
    ("facebook", "empty text post", {"settings": {"post_type": "FB_TEXT"}, "copy": {"caption": " "}},
     "TEXT_REQUIRED", "$.single_copy.caption", "add_text", "blocker"),
    ("facebook", "square reel", {"media": [video(V1, 1080, 1080)]},
     "MEDIA_ASPECT_RATIO_OUT_OF_RANGE", "$.facebook_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    ("facebook", "small reel", {"media": [video(V1, 480, 854)]},
     "MEDIA_DIMENSIONS_TOO_SMALL", "$.facebook_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    ("facebook", "post mixes photos and video", {"settings": {"post_type": "FB_POST", "media_ids": [I1, V1]},
                                                 "media": [image(I1), video(V1)]},
     "MEDIA_MIX_NOT_ALLOWED", "$.facebook_settings.media_ids", "remove_media", "blocker"),
    # YouTube
    ("youtube", "no title anywhere", {"settings": with_settings("youtube", title=None)},
     "YOUTUBE_TITLE_REQUIRED", "$.youtube_settings.title", "set_title", "blocker"),
    ("youtube", "title with angle bracket", {"settings": with_settings("youtube", title="a <b>")},
     "TEXT_INVALID_CHARACTERS", "$.youtube_settings.title", "edit_text", "blocker"),
    ("youtube", "description over 5000 bytes", {"copy": {"caption": "é" * 2501}},
     "DESCRIPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("youtube", "own description over 5000 bytes",
     {"settings": with_settings("youtube", description="中" * 1667)},
     "DESCRIPTION_TOO_LONG", "$.youtube_settings.description", "shorten_text", "blocker"),
    ("youtube", "landscape short", {"media": [video(V1, 1920, 1080)]},
     "MEDIA_ASPECT_RATIO_OUT_OF_RANGE", "$.youtube_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    ("youtube", "short over 3 min", {"media": [video(V1, duration=181)]},
     "MEDIA_DURATION_TOO_LONG", "$.youtube_settings.media_ids[0]", "replace_media", "blocker"),
    ("youtube", "61 hashtags", {"copy": {"caption": "x", "hashtags": [f"h{i}" for i in range(61)]}},
     "HASHTAG_LIMIT_EXCEEDED", "$.single_copy.hashtags", "remove_hashtags", "warning"),
    ("youtube", "tags over 500", {"settings": with_settings("youtube", tags=[f"{i:02d}" + "t" * 20 for i in range(25)])},
     "TAGS_TOO_LONG", "$.youtube_settings.tags", "shorten_text", "blocker"),
    # LinkedIn
    ("linkedin", "article without url", {"settings": {"post_type": "LI_ARTICLE"}},
     "LINKEDIN_ARTICLE_URL_REQUIRED", "$.linkedin_settings.original_url", "set_article_url", "blocker"),
    ("linkedin", "text post with media", {"settings": {"post_type": "LI_TEXT", "media_ids": [I1]},
                                          "media": [image(I1)]},
     "MEDIA_NOT_ALLOWED", "$.linkedin_settings.media_ids", "change_post_type", "blocker"),
    ("linkedin", "image over pixel cap", {"settings": {"post_type": "LI_IMAGE", "media_ids": [I1]},
                                          "media": [image(I1, 9000, 6000)]},
     "MEDIA_DIMENSIONS_TOO_LARGE", "$.linkedin_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    # X
    ("x", "CJK weighs 2", {"copy": {"caption": "中" * 141}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("x", "links count 23", {"copy": {"caption": "a" * 257 + " https://example.com/" + "p" * 100}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("x", "no text no media", {"copy": {"caption": ""}},
     "TEXT_REQUIRED", "$.single_copy.caption", "add_text", "blocker"),
    ("x", "two videos", {"settings": {"media_ids": [V1, V2]}, "media": [video(V1, 1280, 720), video(V2, 1280, 720)]},
     "MEDIA_TOO_MANY", "$.x_settings.media_ids", "remove_media", "blocker"),
    ("x", "thread part too long", {"settings": {"thread_parts": [{"text": "ok"}, {"text": "a" * 281}]}},
     "THREAD_PART_TOO_LONG", "$.x_settings.thread_parts[1].text", "shorten_text", "blocker"),
    ("x", "thread part media not ready", {"settings": {"thread_parts": [{"text": "ok", "media_ids": [I1]}]},
                                          "media": [image(I1, status="processing")]},
     "MEDIA_NOT_READY", "$.x_settings.thread_parts[0].media_ids[0]", "read_media_again", "blocker"),
    ("x", "video over 140 s", {"settings": {"media_ids": [V1]}, "media": [video(V1, 1280, 720, duration=141)]},
     "MEDIA_DURATION_TOO_LONG", "$.x_settings.media_ids[0]", "replace_media", "blocker"),
    # Mastodon
    ("mastodon", "501 characters", {"copy": {"caption": "a" * 501}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("mastodon", "two videos", {"settings": {"media_ids": [V1, V2]}, "media": [video(V1), video(V2)]},
     "MEDIA_TOO_MANY", "$.mastodon_settings.media_ids", "remove_media", "blocker"),
    ("mastodon", "video over 99 MB", {"settings": {"media_ids": [V1]}, "media": [video(V1, size=100 * MB)]},
     "MEDIA_FILE_TOO_LARGE", "$.mastodon_settings.media_ids[0]", "replace_media", "blocker"),
    ("mastodon", "thread part over 500", {"settings": {"thread_parts": [{"text": "ok"}, {"text": "a" * 501}]}},
     "THREAD_PART_TOO_LONG", "$.mastodon_settings.thread_parts[1].text", "shorten_text", "blocker"),
    # Bluesky
    ("bluesky", "301 graphemes", {"copy": {"caption": "👨\u200d👩\u200d👧" * 301}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("bluesky", "image over 1 MB", {"settings": {"post_type": "BS_IMAGE", "media_ids": [I1]},
                                    "media": [image(I1, size=1_000_001)]},
     "MEDIA_FILE_TOO_LARGE", "$.bluesky_settings.media_ids[0]", "replace_media", "blocker"),
    ("bluesky", "alt text for other media", {"settings": {"post_type": "BS_IMAGE", "media_ids": [I1],
                                                          "alt_text": {I2: "x"}}, "media": [image(I1)]},
     "ALT_TEXT_MEDIA_NOT_ATTACHED", f"$.bluesky_settings.alt_text.{I2}", "edit_settings", "blocker"),
    ("bluesky", "text post with media", {"settings": {"media_ids": [I1]}, "media": [image(I1)]},
     "MEDIA_NOT_ALLOWED", "$.bluesky_settings.media_ids", "change_post_type", "blocker"),
    ("bluesky", "thread part over 300", {"settings": {"thread_parts": [{"text": "é" * 301}]}},
     "THREAD_PART_TOO_LONG", "$.bluesky_settings.thread_parts[0].text", "shorten_text", "blocker"),
    ("bluesky", "thread part alt for other media",
     {"settings": {"thread_parts": [{"text": "x", "media_ids": [I1], "alt_text": {I2: "y"}}]},
      "media": [image(I1)]},
     "ALT_TEXT_MEDIA_NOT_ATTACHED", f"$.bluesky_settings.thread_parts[0].alt_text.{I2}", "edit_settings", "blocker"),
    # Telegram
    ("telegram", "photo caption over 1024", {"settings": {"post_type": "TG_PHOTO", "media_ids": [I1]},
                                             "media": [image(I1)], "copy": {"caption": "a" * 1025}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("telegram", "album of one", {"settings": {"post_type": "TG_ALBUM", "media_ids": [I1]}, "media": [image(I1)]},
     "MEDIA_TOO_FEW", "$.telegram_settings.media_ids", "attach_media", "blocker"),
    ("telegram", "photo ratio over 20", {"settings": {"post_type": "TG_PHOTO", "media_ids": [I1]},
                                         "media": [image(I1, 4200, 200)]},
     "MEDIA_ASPECT_RATIO_OUT_OF_RANGE", "$.telegram_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    # Discord
    ("discord", "empty message", {"copy": {"caption": ""}},
     "TEXT_REQUIRED", "$.single_copy.caption", "add_text", "blocker"),
    ("discord", "attachment over 25 MiB", {"settings": {"media_ids": [V1]}, "media": [video(V1, size=26 * MB)]},
     "MEDIA_FILE_TOO_LARGE", "$.discord_settings.media_ids[0]", "replace_media", "blocker"),
    # Tumblr
    ("tumblr", "link post without link", {"settings": {"post_type": "TB_LINK"}},
     "TUMBLR_LINK_REQUIRED", "$.tumblr_settings.link", "set_link", "blocker"),
    ("tumblr", "photo post without photos", {"settings": {"post_type": "TB_PHOTO"}},
     "MEDIA_REQUIRED", "$.tumblr_settings.media_ids", "attach_media", "blocker"),
    # Pinterest
    ("pinterest", "no board", {"settings": with_settings("pinterest", board_id=None)},
     "PINTEREST_BOARD_REQUIRED", "$.pinterest_settings.board_id", "choose_board", "blocker"),
    ("pinterest", "copy title over 100", {"copy": {"caption": "x", "title": "t" * 101}},
     "TITLE_TOO_LONG", "$.single_copy.title", "shorten_text", "blocker"),
    ("pinterest", "no media", {"settings": with_settings("pinterest", media_ids=[]), "media": []},
     "MEDIA_REQUIRED", "$.pinterest_settings.media_ids", "attach_media", "blocker"),
    ("pinterest", "video in image pin", {"settings": with_settings("pinterest", media_ids=[V1]), "media": [video(V1)]},
     "MEDIA_KIND_NOT_ALLOWED", "$.pinterest_settings.media_ids[0]", "change_post_type", "blocker"),
    ("pinterest", "video pin too tall", {"settings": with_settings("pinterest", post_type="PIN_VIDEO",
                                                                   media_ids=[V1]),
                                         "media": [video(V1, 600, 1920)]},
     "MEDIA_ASPECT_RATIO_OUT_OF_RANGE", "$.pinterest_settings.media_ids[0]", "create_repair_derivative", "blocker"),
    # Threads
    ("threads", "emoji count as bytes", {"copy": {"caption": "👍" * 126}},
     "CAPTION_TOO_LONG", "$.single_copy.caption", "shorten_text", "blocker"),
    ("threads", "six links", {"copy": {"caption": " ".join(f"https://site{i}.com" for i in range(6))}},
     "LINK_LIMIT_EXCEEDED", "$.single_copy.caption", "remove_links", "blocker"),
    ("threads", "part 4 too long", {"settings": {"thread_parts": [{"text": "a"}] * 3 + [{"text": "👍" * 126}]}},
     "THREAD_PART_TOO_LONG", "$.threads_settings.thread_parts[3].text", "shorten_text", "blocker"),
    ("threads", "part with six links",
     {"settings": {"thread_parts": [{"text": " ".join(f"site{i}.com" for i in range(6))}]}},
     "LINK_LIMIT_EXCEEDED", "$.threads_settings.thread_parts[0].text", "remove_links", "blocker"),
    ("threads", "follow-up reply too long", {"settings": {"follow_up_reply": {"text": "a" * 501}}},
     "FOLLOW_UP_REPLY_TOO_LONG", "$.threads_settings.follow_up_reply.text", "shorten_text", "blocker"),
    ("threads", "carousel of one", {"settings": {"post_type": "TH_CAROUSEL", "media_ids": [I1]},
                                    "media": [image(I1)]},
     "MEDIA_TOO_FEW", "$.threads_settings.media_ids", "attach_media", "blocker"),
    ("threads", "image post with video", {"settings": {"post_type": "TH_IMAGE", "media_ids": [V1]},
                                          "media": [video(V1)]},
     "MEDIA_KIND_NOT_ALLOWED", "$.threads_settings.media_ids[0]", "change_post_type", "blocker"),
    ("threads", "per-platform copy too long", {"per_platform": True, "copy": {"caption": "a" * 501}},
     "CAPTION_TOO_LONG", "$.platform_copy.threads.caption", "shorten_text", "blocker"),
    # Google Business
    ("google_business", "empty update", {"copy": {"caption": ""}},
     "TEXT_REQUIRED", "$.single_copy.caption", "add_text", "blocker"),
]


@pytest.mark.parametrize(("platform", "name", "over", "code", "path", "action", "severity"), CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_rule_fails(platform, name, over, code, path, action, severity) -> None:
    result = evaluate(facts(platform, **over))
    matches = [i for i in result.issues if i.code == code]
    assert matches, f"expected {code}; got {[(i.code, i.field_path) for i in result.issues]}"
    issue = next((i for i in matches if i.field_path == path), None)
    assert issue is not None, f"{code} at {[i.field_path for i in matches]}, expected {path}"
    assert issue.severity == severity and issue.repair_action.action == action
    assert issue.platform == platform and issue.integration_id == IID
    assert issue.repair_action.id.startswith("ra_") and issue.repair_action.label and issue.repair_action.guidance
    assert issue.message
    assert result.can_schedule is (severity == "warning" and not result.blockers)
    assert (issue in result.blockers) is (severity == "blocker")
    assert issue in result.targets[0].issues


# The passing twin of each rule that the baseline does not already show: the exact limit or the fix.
PASSES: list[tuple[str, str, dict[str, Any]]] = [
    ("instagram", "30 hashtags", {"copy": {"caption": "Hi", "hashtags": [f"t{i}" for i in range(30)]}}),
    ("instagram", "20 mentions", {"copy": {"caption": " ".join(f"@user{i}" for i in range(20))}}),
    ("instagram", "grid image 4:5", {"settings": {"post_type": "GRID_POST", "media_ids": [I1]},
                                     "media": [image(I1, 1080, 1350)]}),
    ("instagram", "grid carousel mixes", {"settings": {"post_type": "GRID_POST", "media_ids": [I1, V1]},
                                          "media": [image(I1), video(V1)]}),
    ("tiktok", "commercial with types", {"settings": with_settings("tiktok", is_commercial_content=True,
                                                                   commercial_types=["YOUR_BRAND"])}),
    ("tiktok", "video caption 2200 UTF-16", {"copy": {"caption": "👍" * 1100}}),
    ("tiktok", "photo caption 4000", {"settings": with_settings("tiktok", post_type="IMAGE", media_ids=[I1]),
                                      "media": [image(I1)], "copy": {"caption": "a" * 4000, "title": "t" * 90}}),
    ("tiktok", "carousel of two", {"settings": with_settings("tiktok", post_type="CAROUSEL", media_ids=[I1, I2]),
                                   "media": [image(I1), image(I2)]}),
    ("facebook", "text post", {"settings": {"post_type": "FB_TEXT"}}),
    ("youtube", "title from copy", {"settings": with_settings("youtube", title=None),
                                    "copy": {"caption": "x", "title": "From copy"}}),
    ("youtube", "description 5000 bytes", {"copy": {"caption": "é" * 2500}}),
    ("youtube", "60 hashtags", {"copy": {"caption": "x", "hashtags": [f"h{i}" for i in range(60)]}}),
    ("youtube", "long video", {"settings": with_settings("youtube", post_type="YT_VIDEO"),
                               "media": [video(V1, 1920, 1080, duration=3600)]}),
    ("linkedin", "article with url", {"settings": {"post_type": "LI_ARTICLE", "original_url": "https://a.co/x"}}),
    ("linkedin", "multi-image", {"settings": {"post_type": "LI_IMAGE", "media_ids": [I1, I2]},
                                 "media": [image(I1), image(I2)]}),
    ("x", "140 CJK", {"copy": {"caption": "中" * 140}}),
    ("x", "link at the limit", {"copy": {"caption": "a" * 256 + " https://example.com/" + "p" * 100}}),
    ("x", "media without text", {"copy": {"caption": ""}, "settings": {"media_ids": [I1]}, "media": [image(I1)]}),
    ("x", "24 parts with media", {"settings": {"thread_parts": [{"text": "a" * 280, "media_ids": [I1]}] * 24},
                                  "media": [image(I1)]}),
    ("bluesky", "300 graphemes", {"copy": {"caption": "👨\u200d👩\u200d👧" * 300}}),
    ("bluesky", "image with alt", {"settings": {"post_type": "BS_IMAGE", "media_ids": [I1], "alt_text": {I1: "x"}},
                                   "media": [image(I1, size=1_000_000)]}),
    ("telegram", "text 4096", {"copy": {"caption": "a" * 4096}}),
    ("telegram", "photo caption 1024", {"settings": {"post_type": "TG_PHOTO", "media_ids": [I1]},
                                        "media": [image(I1)], "copy": {"caption": "a" * 1024}}),
    ("telegram", "album of two", {"settings": {"post_type": "TG_ALBUM", "media_ids": [I1, V1]},
                                  "media": [image(I1), video(V1)]}),
    ("discord", "media only", {"copy": {"caption": ""}, "settings": {"media_ids": [I1]}, "media": [image(I1)]}),
    ("tumblr", "link post with link", {"settings": {"post_type": "TB_LINK", "link": "https://a.co/x"}}),
    ("pinterest", "carousel of five", {"settings": with_settings("pinterest", media_ids=[mid(i) for i in range(5)]),
                                       "media": [image(mid(i)) for i in range(5)]}),
    ("pinterest", "title 100 from settings", {"settings": with_settings("pinterest", title="t" * 100),
                                              "copy": {"caption": "x", "title": "ignored " * 30}}),
    ("threads", "125 emoji = 500", {"copy": {"caption": "👍" * 125}}),
    ("threads", "five distinct links, repeated", {"copy": {"caption": " ".join(
        f"https://site{i % 5}.com" for i in range(10))}}),
    ("threads", "9 parts and reply at 500", {"settings": {"thread_parts": [{"text": "👍" * 125}] * 9,
                                                          "follow_up_reply": {"text": "a" * 500}}}),
    ("threads", "carousel of 20", {"settings": {"post_type": "TH_CAROUSEL", "media_ids": [mid(i) for i in range(20)]},
                                   "media": [image(mid(i)) for i in range(20)]}),
    ("google_business", "1500", {"copy": {"caption": "a" * 1500}}),
]


@pytest.mark.parametrize(("platform", "name", "over"), PASSES, ids=[f"{c[0]}-{c[1]}" for c in PASSES])
def test_rule_passes(platform, name, over) -> None:
    result = evaluate(facts(platform, **over))
    assert result.blockers == [], [(i.code, i.field_path, i.message) for i in result.blockers]
    assert result.can_schedule


def test_every_issue_code_is_exercised() -> None:
    exercised = {c[3] for c in CASES} | {
        "COPY_MISSING", "SETTINGS_MISSING", "TARGET_EXPIRED", "TARGET_DISCONNECTED", "TARGET_NOT_FOUND",
        "SCHEDULED_AT_MALFORMED", "SCHEDULED_AT_IN_PAST", "APPROVAL_PENDING", "APPROVAL_REJECTED",
        "PUBLISH_PERMISSION_REQUIRED", "PLAN_NETWORK_LIMIT_EXCEEDED", "PLAN_MEDIA_LIMIT_EXCEEDED",
        "MEDIA_PROPERTIES_UNKNOWN", "THREAD_TOO_MANY_PARTS", "PLATFORM_NOT_SUPPORTED", "TOPIC_TAG_TOO_LONG",
        "ALT_TEXT_TOO_LONG"}
    assert set(ACTIONS) - exercised == set(), "add a failing case for every code"


# --- codes the settings models already refuse: reach the engine's own check with unvalidated settings -----

def _raw(platform: str, item_settings: dict[str, Any], media: Sequence[MediaFacts] = ()) -> PreflightFacts:
    f = facts(platform, media=list(media))
    model = SETTINGS_MODELS[platform]
    built = model.model_construct(**{**model().model_dump(), **item_settings})
    return f.model_copy(update={"content": f.content.model_copy(update={"settings": {platform: built}})})


def test_engine_checks_what_models_also_bound() -> None:
    from schemas.platform_settings import XThreadPart
    too_many = [XThreadPart(text="a")] * 25
    r = evaluate(_raw("x", {"thread_parts": too_many}))
    issue = next(i for i in r.blockers if i.code == "THREAD_TOO_MANY_PARTS")
    assert issue.field_path == "$.x_settings.thread_parts" and issue.repair_action.action == "remove_thread_parts"
    assert not [i for i in evaluate(_raw("x", {"thread_parts": too_many[:24]})).blockers]
    r = evaluate(_raw("threads", {"topic_tag": "t" * 51}))
    assert [i.field_path for i in r.blockers if i.code == "TOPIC_TAG_TOO_LONG"] == ["$.threads_settings.topic_tag"]
    assert not evaluate(_raw("threads", {"topic_tag": "t" * 50})).blockers
    r = evaluate(_raw("pinterest", {**GOOD["pinterest"]["settings"], "alt_text": "a" * 501},
                      GOOD["pinterest"]["media"]))
    assert [i.field_path for i in r.blockers if i.code == "ALT_TEXT_TOO_LONG"] == ["$.pinterest_settings.alt_text"]
    r = evaluate(_raw("bluesky", {"post_type": "BS_VIDEO", "media_ids": [V1], "alt_text": {V1: "é" * 1001}},
                      [video(V1, 1080, 1920, duration=30)]))
    assert [i.field_path for i in r.blockers if i.code == "ALT_TEXT_TOO_LONG"] == [f"$.bluesky_settings.alt_text.{V1}"]


# --- repair options on geometry blockers --------------------------------------------------------------------

def test_aspect_blocker_carries_repair_options() -> None:
    r = evaluate(facts("instagram", settings={"post_type": "GRID_POST", "media_ids": [I1]},
                       media=[image(I1, 1000, 2000)]))
    issue = next(i for i in r.blockers if i.code == "MEDIA_ASPECT_RATIO_OUT_OF_RANGE")
    by_mode = {o.mode: o for o in issue.repair_options or []}
    assert by_mode["pad"].available and (by_mode["pad"].id or "").startswith("ro_")
    assert by_mode["pad"].integration_id == IID and by_mode["pad"].post_type == "GRID_POST"
    assert not by_mode["centre_crop"].available and by_mode["centre_crop"].unavailable_code
    assert "repair_options" in issue.to_dict()
    other = next(i for i in evaluate(facts("x", copy={"caption": ""})).blockers)
    assert "repair_options" not in other.to_dict()


def test_video_geometry_blocker_offers_even_options_within_the_duration_budget() -> None:
    # A square video for a 9:16 Facebook reel: cropping would cut 44 % (limit 25 %), padding fits.
    r = evaluate(facts("facebook", media=[video(V1, 1080, 1080)]))
    issue = next(i for i in r.blockers if i.code == "MEDIA_ASPECT_RATIO_OUT_OF_RANGE")
    by_mode = {o.mode: o for o in issue.repair_options or []}
    assert by_mode["centre_crop"].unavailable_code == "REPAIR_CROP_LOSS_TOO_HIGH"
    pad = by_mode["pad"]
    assert pad.available and pad.target is not None and pad.resize is not None and pad.pad is not None
    assert pad.target.model_dump() == {"width": 1080, "height": 1920}
    assert all(v % 2 == 0 for v in (*pad.resize.model_dump().values(), *pad.pad.model_dump().values()))
    # Longer than the policy renders: explained, not offered.
    long = evaluate(facts("facebook", media=[video(V1, 1080, 1080, duration=REPAIR_POLICY.max_video_seconds + 1)]))
    issue = next(i for i in long.blockers if i.code == "MEDIA_ASPECT_RATIO_OUT_OF_RANGE")
    assert {o.unavailable_code for o in issue.repair_options or []} == {"REPAIR_VIDEO_TOO_LONG"}
    assert issue.repair_options and all(not o.available and o.id is None and o.explanation
                                        for o in issue.repair_options)


def test_unknown_properties_warn() -> None:
    r = evaluate(facts("instagram", media=[video(V1, w=None, h=None, duration=None, size=None)]))
    issue = next(i for i in r.warnings if i.code == "MEDIA_PROPERTIES_UNKNOWN")
    assert issue.severity == "warning" and r.can_schedule
    r = evaluate(facts("instagram", media=[video(V1, kind=None, content_type=None)]))
    assert [i.code for i in r.warnings] == ["MEDIA_PROPERTIES_UNKNOWN"]


# --- request-wide rules -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("extra", "code", "path", "action", "severity", "scope"), [
    ({"scheduled_at": NOW - timedelta(minutes=1)}, "SCHEDULED_AT_IN_PAST", "$.scheduled_at", "choose_future_time",
     "blocker", "schedule"),
    ({"scheduled_at": NOW}, "SCHEDULED_AT_IN_PAST", "$.scheduled_at", "choose_future_time", "blocker", "schedule"),
    ({"scheduled_at": "tomorrow"}, "SCHEDULED_AT_MALFORMED", "$.scheduled_at", "fix_scheduled_at", "blocker",
     "schedule"),
    ({"scheduled_at": "2026-12-01T10:00:00"}, "SCHEDULED_AT_MALFORMED", "$.scheduled_at", "fix_scheduled_at",
     "blocker", "schedule"),
    ({"approval_status": "pending_review"}, "APPROVAL_PENDING", "$.approval_status", "review_approval", "warning",
     "approval"),
    ({"approval_status": "rejected"}, "APPROVAL_REJECTED", "$.approval_status", "change_approval", "warning",
     "approval"),
    ({"approval_status": "approved"}, "PUBLISH_PERMISSION_REQUIRED", "$.approval_status", "use_authorized_api_key",
     "blocker", "policy"),
])
def test_request_rules(extra, code, path, action, severity, scope) -> None:
    r = evaluate(facts("x", **extra))
    issue = next(i for i in r.issues if i.code == code)
    assert (issue.field_path, issue.repair_action.action, issue.severity, issue.scope) == (path, action, severity,
                                                                                            scope)
    assert issue.integration_id is None and issue.platform is None
    assert issue not in r.targets[0].issues  # request-wide issues are top-level only
    assert r.can_schedule is (severity == "warning")
    assert r.scheduling_allowed is (code != "PUBLISH_PERMISSION_REQUIRED")


@pytest.mark.parametrize("extra", [
    {"scheduled_at": NOW + timedelta(minutes=5)}, {"scheduled_at": "2026-12-01T10:00:00+02:00"},
    {"approval_status": "approved", "scopes": frozenset({"schedule:write", "publish:execute"})},
])
def test_request_rules_pass(extra) -> None:
    r = evaluate(facts("x", **extra))
    assert r.issues == [] and r.can_schedule and r.scheduling_allowed
    assert r.next_actions[-1].startswith("Create the Schedule")


def _two_targets(plan: PlanFacts, settings: dict[str, Any] | None = None, media: Sequence[MediaFacts] = ()):
    second = "int_01JABCDEFGHJKMNPQRSTVWXY01"
    f = facts("x", settings=settings or {}, media=list(media), plan=plan)
    integrations = {**f.integrations, second: IntegrationFacts(id=second, platform="threads", status="connected")}
    item = {"id": "ci_1", "single_copy": {"caption": "Hello"}, "x_settings": settings or {}, "threads_settings": {}}
    return f.model_copy(update={"integration_ids": (IID, second), "integrations": integrations,
                                "content": ContentFacts.from_content_item(item)})


def test_plan_network_limit() -> None:
    r = evaluate(_two_targets(PlanFacts(max_networks_per_brand=1)))
    issue = next(i for i in r.blockers if i.code == "PLAN_NETWORK_LIMIT_EXCEEDED")
    assert (issue.field_path, issue.scope, issue.repair_action.action) == ("$.integration_ids", "plan", "upgrade_plan")
    assert not evaluate(_two_targets(PlanFacts(max_networks_per_brand=2))).blockers
    assert evaluate(_two_targets(PlanFacts(max_networks_per_brand=2, connected_networks=("tiktok",)))).blockers


def test_plan_media_limit() -> None:
    settings = {"media_ids": [I1, I2]}
    media = [image(I1), image(I2)]
    r = evaluate(facts("x", settings=settings, media=media, plan=PlanFacts(max_media_per_post=1)))
    issue = next(i for i in r.blockers if i.code == "PLAN_MEDIA_LIMIT_EXCEEDED")
    assert (issue.field_path, issue.scope) == ("$.x_settings.media_ids", "plan")
    assert not evaluate(facts("x", settings=settings, media=media, plan=PlanFacts(max_media_per_post=2))).blockers


def test_hidden_platform_is_not_supported(monkeypatch) -> None:
    import dataclasses

    import tools.schedules.rules_engine as engine
    hidden = dataclasses.replace(BY_KEY["discord"], hidden=True)
    monkeypatch.setitem(engine.BY_KEY, "discord", hidden)
    r = evaluate(facts("discord"))
    assert r.blockers[0].code == "PLATFORM_NOT_SUPPORTED" and r.blockers[0].scope == "target"


# --- structure ----------------------------------------------------------------------------------------------

def test_captions_come_only_from_the_copy_in_use() -> None:
    item = {"id": "ci_1", "copy_mode": "single", "single_copy": {"caption": "short"},
            "platform_copy": {"threads": {"caption": "a" * 900}}, "threads_settings": {}}
    f = facts("threads").model_copy(update={"content": ContentFacts.from_content_item(item)})
    assert evaluate(f).blockers == []
    # YouTube tags live in settings and are not hashtags
    r = evaluate(facts("youtube", settings=with_settings("youtube", tags=[f"t{i}" for i in range(50)])))
    assert not [i for i in r.issues if i.code == "HASHTAG_LIMIT_EXCEEDED"]


def test_results_are_deterministic_and_ids_stable() -> None:
    f = facts("tiktok", settings=with_settings("tiktok", privacy_level=None, agreed_to_terms=False))
    a, b = evaluate(f), evaluate(f)
    assert a == b
    ids = [i.repair_action.id for i in a.issues]
    assert len(set(ids)) == len(ids)


def test_top_level_lists_partition_every_issue() -> None:
    f = facts("tiktok", settings=with_settings("tiktok", privacy_level=None), approval_status="pending_review")
    r = evaluate(f)
    assert r.issues == r.targets[0].issues + [i for i in r.issues if i.integration_id is None]
    assert sorted(map(id, r.blockers + r.warnings)) == sorted(map(id, r.issues))
    assert r.targets[0].post_type == "VIDEO" and r.targets[0].display_name == "Acme"
    assert r.next_actions[-1] == "Apply each blocker's repair_action, then run preflight again."


def test_issues_per_target_are_bounded() -> None:
    ids = [mid(i) for i in range(35)]
    settings = with_settings("tiktok", post_type="CAROUSEL", media_ids=ids)
    r = evaluate(facts("tiktok", settings=settings, media=[image(m, ct="image/png", size=30 * MB) for m in ids]))
    t = r.targets[0]
    assert len(t.issues) == 50 and t.issues_omitted > 0 and not t.can_schedule


def test_an_accounts_own_text_limit_replaces_the_registry_default() -> None:
    """A Mastodon instance's max_characters (read at connect time) is the limit for its account."""
    def facts_with(limit: int | None, text: str, parts: Sequence[str] = ()) -> PreflightFacts:
        f = facts("mastodon", copy={"caption": text, "hashtags": [], "title": None},
                  settings={"thread_parts": [{"text": p} for p in parts]} if parts else {})
        integ = f.integrations[IID].model_copy(update={"text_max": limit})
        return f.model_copy(update={"integrations": {IID: integ}})

    assert evaluate(facts_with(1000, "a" * 900)).can_schedule
    assert not evaluate(facts_with(None, "a" * 900)).can_schedule  # the registry's 500
    small = evaluate(facts_with(300, "a" * 301, ["b" * 301]))
    assert {i.code for i in small.blockers} == {"CAPTION_TOO_LONG", "THREAD_PART_TOO_LONG"}
    assert "allows 300" in str([i.message for i in small.blockers])
