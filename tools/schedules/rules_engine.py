"""The pure preflight rules engine: plain facts in (`schemas.preflight.PreflightFacts`), issues out
(`schemas.preflight.EngineResult`). No database, no provider, no clock of its own, no I/O.

Per target it checks the connection, copy and settings presence, text limits counted the platform's way
(main post, each thread part, the Threads follow-up reply), hashtag/mention/link limits, media presence,
readiness, kind, count and bounds (with repair options on aspect-ratio and dimension blockers), and the
platform's required settings. Request-wide it checks the scheduled time, approval, publishing authority and
plan limits. Rules come only from the registry (`schemas.platforms`); per-platform/post-type structures are
compiled once and counting results are memoised, so 20 targets sharing one caption count it once.
Documented for agents in docs/preflight.md.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from functools import cache
from typing import Any

from schemas.errors import MAX_ISSUES
from schemas.platform_settings import Settings
from schemas.platforms import BY_KEY, REPAIR_POLICY, VALIDATION_VERSION, Platform
from schemas.platforms.rules import CountLimit, MediaSpec, PlatformRules, PostTypeRules, Requirement, TextLimit
from schemas.preflight import (
    CopyFacts,
    EngineResult,
    Issue,
    IssueScope,
    MediaFacts,
    PreflightFacts,
    RepairAction,
    Severity,
    TargetReport,
)
from schemas.scopes import PUBLISH_SCOPE
from schemas.textcount import (
    COUNTING_DESCRIPTIONS,
    all_hashtags,
    compose_text,
    count,
    count_links,
    find_mentions,
)
from schemas.time import parse_timestamp
from tools.schedules.repair_options import compute_repair_options, within_aspect

MAX_NEXT_ACTIONS = 10
READY_STATUS = "completed"
FAILED_STATUSES = frozenset({"failed"})
EXPIRED_STATUSES = frozenset({"expired", "needs_reauth"})

# code -> (action, label, guidance). Guidance says what to do; messages say what is wrong.
ACTIONS: dict[str, tuple[str, str, str]] = {
    "TARGET_NOT_FOUND": ("remove_target", "Remove this target",
                         "Use an integration ID from this brand's targets list, or drop it from integration_ids."),
    "TARGET_DISCONNECTED": ("reconnect_integration", "Reconnect the account",
                            "Ask the user to reconnect this account in the dashboard, then run preflight again."),
    "TARGET_EXPIRED": ("reconnect_integration", "Reconnect the account",
                       "The account's authorisation expired: ask the user to reconnect it in the dashboard, then "
                       "run preflight again."),
    "PLATFORM_NOT_SUPPORTED": ("remove_target", "Remove this target",
                               "This platform is not available for publishing; drop the target."),
    "COPY_MISSING": ("add_platform_copy", "Add copy for this platform",
                     "Add platform_copy for this platform (copy_mode per_platform), or switch to single_copy."),
    "SETTINGS_MISSING": ("add_platform_settings", "Add settings for this platform",
                         "Add the platform's settings object (an empty object {} applies the defaults); a "
                         "platform without settings is skipped for publishing."),
    "TEXT_REQUIRED": ("add_text", "Add text", "Write a caption for this post type, or attach media where the post "
                                              "type allows it."),
    "CAPTION_TOO_LONG": ("shorten_text", "Shorten the caption",
                         "Shorten the caption (hashtags count too), or move text into thread_parts where the "
                         "platform has threads."),
    "TITLE_TOO_LONG": ("shorten_text", "Shorten the title", "Shorten the title to the platform's limit."),
    "DESCRIPTION_TOO_LONG": ("shorten_text", "Shorten the description",
                             "Shorten the description to the platform's limit (YouTube counts UTF-8 bytes)."),
    "TAGS_TOO_LONG": ("shorten_text", "Use fewer tags", "Remove or shorten tags until the list fits."),
    "ALT_TEXT_TOO_LONG": ("shorten_text", "Shorten the alt text", "Shorten the alt text to the platform's limit."),
    "TOPIC_TAG_TOO_LONG": ("shorten_text", "Shorten the topic tag", "Shorten the topic tag."),
    "THREAD_PART_TOO_LONG": ("shorten_text", "Shorten this thread part",
                             "Shorten this part, or split it into another part."),
    "FOLLOW_UP_REPLY_TOO_LONG": ("shorten_text", "Shorten the follow-up reply",
                                 "Shorten the follow-up reply to the platform's limit."),
    "TEXT_INVALID_CHARACTERS": ("edit_text", "Remove unsupported characters",
                                "Remove the characters the platform refuses (YouTube: < and >)."),
    "HASHTAG_LIMIT_EXCEEDED": ("remove_hashtags", "Use fewer hashtags",
                               "Remove hashtags (inline ones in the caption count too) until within the limit."),
    "MENTION_LIMIT_EXCEEDED": ("remove_mentions", "Use fewer mentions", "Remove @mentions until within the limit."),
    "LINK_LIMIT_EXCEEDED": ("remove_links", "Use fewer links", "Remove links until within the limit."),
    "THREAD_TOO_MANY_PARTS": ("remove_thread_parts", "Use fewer thread parts",
                              "Merge or remove thread parts until within the limit."),
    "ALT_TEXT_MEDIA_NOT_ATTACHED": ("edit_settings", "Fix the alt text keys",
                                    "Key alt_text only by media IDs listed in the same media_ids."),
    "MEDIA_REQUIRED": ("attach_media", "Attach media",
                       "Attach media whose readiness.ready_for_content is true to this platform's media_ids, or "
                       "choose a post type without media."),
    "MEDIA_TOO_FEW": ("attach_media", "Attach more media", "Attach more media, or choose another post type."),
    "MEDIA_TOO_MANY": ("remove_media", "Remove media", "Remove media until within the post type's limit."),
    "MEDIA_NOT_ALLOWED": ("change_post_type", "Choose a post type with media",
                          "This post type takes no media: remove the media or choose a media post type."),
    "MEDIA_MIX_NOT_ALLOWED": ("remove_media", "Use one kind of media",
                              "Use only images or only a video for this post type."),
    "MEDIA_NOT_FOUND": ("replace_media", "Replace the media", "Use a media ID of this brand (list media)."),
    "MEDIA_NOT_READY": ("read_media_again", "Wait for processing",
                        "The media is still processing: read it again until readiness.ready_for_content is true, "
                        "then run preflight again."),
    "MEDIA_FAILED": ("repair_media", "Replace the failed media",
                     "Processing failed: upload or import the file again and use the new media ID."),
    "MEDIA_KIND_NOT_ALLOWED": ("change_post_type", "Match media and post type",
                               "Choose a post type that takes this kind of media, or attach the right kind."),
    "MEDIA_FORMAT_NOT_SUPPORTED": ("replace_media", "Use a supported format",
                                   "Convert the file to a supported format, upload it and use the new media ID."),
    "MEDIA_FILE_TOO_LARGE": ("replace_media", "Use a smaller file",
                             "Compress the file below the limit, upload it and use the new media ID."),
    "MEDIA_DURATION_TOO_SHORT": ("replace_media", "Use a longer video", "Use a video within the duration bounds."),
    "MEDIA_DURATION_TOO_LONG": ("replace_media", "Use a shorter video", "Trim the video within the duration bounds."),
    "MEDIA_ASPECT_RATIO_OUT_OF_RANGE": ("create_repair_derivative", "Fix the aspect ratio",
                                        "Call repair_media_derivative with one of repair_options, put the new "
                                        "media ID in media_ids and run preflight again; or upload a correctly "
                                        "sized file."),
    "MEDIA_DIMENSIONS_TOO_SMALL": ("create_repair_derivative", "Fix the dimensions",
                                   "Call repair_media_derivative with one of repair_options, or upload a larger "
                                   "file."),
    "MEDIA_DIMENSIONS_TOO_LARGE": ("create_repair_derivative", "Fix the dimensions",
                                   "Call repair_media_derivative with one of repair_options, or upload a smaller "
                                   "file."),
    "MEDIA_PROPERTIES_UNKNOWN": ("read_media_again", "Check the media",
                                 "The media's size, dimensions or duration are not known yet; read it again after "
                                 "processing. Platform bounds could not be checked."),
    "SCHEDULED_AT_MALFORMED": ("fix_scheduled_at", "Fix the time",
                               "Send scheduled_at as ISO 8601 with an explicit offset or Z."),
    "SCHEDULED_AT_IN_PAST": ("choose_future_time", "Choose a future time", "Choose a scheduled_at in the future."),
    "APPROVAL_PENDING": ("review_approval", "Review before publishing",
                         "The Schedule will be held (action_required) until approved by a key with "
                         "publish:execute."),
    "APPROVAL_REJECTED": ("change_approval", "Choose an approval status",
                          "A rejected Schedule never publishes: send pending_review or approved to publish."),
    "PUBLISH_PERMISSION_REQUIRED": ("use_authorized_api_key", "Use a key with publish:execute",
                                    "Send approval_status pending_review to hold the Schedule for review, or use "
                                    "a key that holds publish:execute."),
    "PLAN_NETWORK_LIMIT_EXCEEDED": ("upgrade_plan", "Use fewer networks",
                                    "Publish to fewer networks from this brand, or upgrade the plan."),
    "PLAN_MEDIA_LIMIT_EXCEEDED": ("upgrade_plan", "Use fewer media",
                                  "Attach fewer media to this post, or upgrade the plan."),
    "TIKTOK_PRIVACY_LEVEL_REQUIRED": ("choose_privacy_level", "", ""),
    "TIKTOK_TERMS_NOT_AGREED": ("agree_to_terms", "", ""),
    "TIKTOK_COMMERCIAL_TYPES_REQUIRED": ("set_commercial_types", "", ""),
    "PINTEREST_BOARD_REQUIRED": ("choose_board", "", ""),
    "LINKEDIN_ARTICLE_URL_REQUIRED": ("set_article_url", "", ""),
    "YOUTUBE_TITLE_REQUIRED": ("set_title", "", ""),
    "TUMBLR_LINK_REQUIRED": ("set_link", "", ""),
}
# Requirement codes take their action, label and guidance from the registry entry.
_REQUIREMENTS: dict[str, Requirement] = {
    r.code: r for p in BY_KEY.values() for r in p.rules.requirements}
assert set(_REQUIREMENTS) <= set(ACTIONS)

SCOPES: dict[str, IssueScope] = {
    "TARGET_NOT_FOUND": "target", "TARGET_DISCONNECTED": "target", "TARGET_EXPIRED": "target",
    "PLATFORM_NOT_SUPPORTED": "target", "SETTINGS_MISSING": "settings", "THREAD_TOO_MANY_PARTS": "settings",
    "ALT_TEXT_MEDIA_NOT_ATTACHED": "settings", "SCHEDULED_AT_MALFORMED": "schedule",
    "SCHEDULED_AT_IN_PAST": "schedule", "APPROVAL_PENDING": "approval", "APPROVAL_REJECTED": "approval",
    "PUBLISH_PERMISSION_REQUIRED": "policy", "PLAN_NETWORK_LIMIT_EXCEEDED": "plan",
    "PLAN_MEDIA_LIMIT_EXCEEDED": "plan", **{c: "settings" for c in _REQUIREMENTS},
}


def _scope(code: str) -> IssueScope:
    if code in SCOPES:
        return SCOPES[code]
    return "media" if code.startswith("MEDIA_") else "copy"


def _action(code: str, integration_id: str | None, field_path: str) -> RepairAction:
    key = f"{code}|{integration_id or ''}|{field_path}"
    rid = "ra_" + hashlib.sha256(key.encode()).hexdigest()[:16]
    req = _REQUIREMENTS.get(code)
    if req:
        return RepairAction(id=rid, action=req.action, label=req.label, guidance=req.guidance)
    action, label, guidance = ACTIONS[code]
    return RepairAction(id=rid, action=action, label=label, guidance=guidance)


def make_issue(code: str, field_path: str, message: str, *, integration_id: str | None = None,
               platform: str | None = None, severity: Severity = "blocker",
               repair_options: list[Any] | None = None) -> Issue:
    return Issue(severity=severity, code=code, scope=_scope(code), field_path=field_path, message=message,
                 integration_id=integration_id, platform=platform,
                 repair_action=_action(code, integration_id, field_path), repair_options=repair_options)


# --- compiled per platform and post type ------------------------------------------------------------------

@dataclass(frozen=True)
class _Compiled:
    platform: Platform
    rules: PlatformRules
    post_type: PostTypeRules
    caption: TextLimit | None
    title: TextLimit | None
    description: TextLimit | None
    alt_text: TextLimit | None
    tags: TextLimit | None
    topic_tag: TextLimit | None
    requirements: tuple[Requirement, ...]


@cache
def compiled(platform: str, post_type: str) -> _Compiled:
    p = BY_KEY[platform]
    rules = p.rules
    pt = rules.post_type(post_type) or rules.post_type(p.default_post_type or "")
    assert pt is not None
    return _Compiled(
        platform=p, rules=rules, post_type=pt,
        caption=rules.text_limit("caption", pt.key), title=rules.text_limit("title", pt.key),
        description=rules.text_limit("description", pt.key), alt_text=rules.text_limit("alt_text", pt.key),
        tags=rules.text_limit("tags", pt.key), topic_tag=rules.text_limit("topic_tag", pt.key),
        requirements=tuple(r for r in rules.requirements if r.post_types is None or pt.key in r.post_types),
    )


def _too_long(limit: TextLimit, text: str) -> int | None:
    n = count(text, limit.counting)
    return n if n > limit.max else None


@dataclass(frozen=True)
class Measure:
    """One text preflight counted against a limit: the count it found, the network's way (`counting`)."""

    field_path: str
    field: str
    count: int
    max: int
    counting: str

    @property
    def over(self) -> bool:
        return self.count > self.max


def _how(limit: TextLimit) -> str:
    return COUNTING_DESCRIPTIONS[limit.counting].split(":")[0].split(" (")[0].lower()


def _kind(m: MediaFacts) -> str | None:
    if m.kind:
        return m.kind
    ct = (m.content_type or "").split("/")[0]
    return ct if ct in ("image", "video") else None


# --- the target checks ------------------------------------------------------------------------------------

class _Target:
    def __init__(self, facts: PreflightFacts, integration_id: str, platform: str) -> None:
        self.facts = facts
        self.iid = integration_id
        self.platform = platform
        self.issues: list[Issue] = []
        self.measures: list[Measure] = []

    def too_long(self, limit: TextLimit, text: str, path: str) -> int | None:
        """`_too_long`, recording the count (what the console's preview shows is this very count)."""
        n = count(text, limit.counting)
        self.measures.append(Measure(path, limit.field, n, limit.max, limit.counting))
        return n if n > limit.max else None

    def add(self, code: str, path: str, message: str, severity: Severity = "blocker",
            repair_options: list[Any] | None = None) -> None:
        self.issues.append(make_issue(code, path, message, integration_id=self.iid, platform=self.platform,
                                      severity=severity, repair_options=repair_options))

    # copy --------------------------------------------------------------------------------------------------
    def copy(self) -> tuple[CopyFacts | None, str]:
        content = self.facts.content
        if content.copy_mode == "per_platform":
            return (content.platform_copy or {}).get(self.platform), f"$.platform_copy.{self.platform}"
        return content.single_copy, "$.single_copy"

    def check(self) -> None:
        p = BY_KEY[self.platform]
        copy, copy_path = self.copy()
        settings: Settings | None = None
        sk = p.settings_key
        if sk:
            settings = self.facts.content.settings.get(self.platform)
            if settings is None:
                self.add("SETTINGS_MISSING", f"$.{sk}",
                         f"The item has no {sk}; without it this target is skipped for publishing.")
        post_type = getattr(settings, "post_type", None) or p.default_post_type or ""
        c = compiled(self.platform, post_type)
        media_ids: list[str] = list(getattr(settings, "media_ids", []) or [])
        if copy is None:
            self.add("COPY_MISSING", copy_path,
                     f"No copy for {p.display_name}: copy_mode is {self.facts.content.copy_mode} and "
                     f"{copy_path.removeprefix('$.')} is not set.")
        self.text(c, copy, copy_path, settings, bool(media_ids))
        if settings is not None and sk:
            self.requirements(c, settings, copy, sk)
            self.media(c.post_type, media_ids, f"$.{sk}.media_ids", c)
            self.alt_text(c, settings, media_ids, sk)
            self.thread(c, settings, sk)
        plan = self.facts.plan
        if plan and plan.max_media_per_post is not None:
            total = len(media_ids) + sum(len(getattr(part, "media_ids", []) or [])
                                         for part in (getattr(settings, "thread_parts", None) or []))
            if total > plan.max_media_per_post:
                self.add("PLAN_MEDIA_LIMIT_EXCEEDED", f"$.{sk}.media_ids",
                         f"The plan allows {plan.max_media_per_post} media per post; this post has {total}.")

    # text --------------------------------------------------------------------------------------------------
    def own_limit(self, limit: TextLimit) -> TextLimit:
        """`limit` with the account's own maximum when it has one (a Mastodon instance's character limit)."""
        integ = self.facts.integrations.get(self.iid)
        own = integ.text_max if integ is not None else None
        return dataclasses.replace(limit, max=own) if own else limit

    def text(self, c: _Compiled, copy: CopyFacts | None, copy_path: str, settings: Settings | None,
             has_media: bool) -> None:
        caption = copy.caption if copy else None
        hashtags = tuple(copy.hashtags) if copy else ()
        body = compose_text(caption, hashtags)
        body_path = f"{copy_path}.caption"
        pt = c.post_type
        # YouTube-style description: the settings' description, else the copy.
        if c.description is not None:
            own = getattr(settings, "description", None)
            if own:
                body, body_path = own, f"$.{c.platform.settings_key}.description"
        if copy is not None or c.description is not None:
            if pt.text_required and not body.strip():
                self.add("TEXT_REQUIRED", body_path, f"{pt.key} is a text post: the caption is empty.")
            elif pt.min_media == 0 and pt.max_media > 0 and not has_media and not body.strip():
                self.add("TEXT_REQUIRED", body_path, "The post has neither text nor media.")
        main = c.caption or c.description
        if main is not None and main is c.caption:
            main = self.own_limit(main)
        if main is not None and body:
            n = self.too_long(main, body, body_path)
            if n is not None:
                code = "CAPTION_TOO_LONG" if main.field == "caption" else "DESCRIPTION_TOO_LONG"
                extra = " including hashtags" if hashtags and body_path.endswith(".caption") else ""
                self.add(code, body_path, f"The {main.field} is {n} {_how(main)}{extra}; {c.platform.display_name} "
                                          f"allows {main.max} ({pt.key}).")
        if body_path.endswith(".description"):
            self.counts(c.rules.counts, body, body, (), body_path, body_path)
        else:
            self.counts(c.rules.counts, body, caption or "", hashtags, body_path,
                        f"{copy_path}.hashtags" if hashtags else body_path)
        # title: the settings' own title wins over the copy's
        own_title = getattr(settings, "title", None) if settings is not None else None
        title = own_title or (copy.title if copy else None)
        title_path = f"$.{c.platform.settings_key}.title" if own_title else f"{copy_path}.title"
        if c.title is not None and title:
            n = self.too_long(c.title, title, title_path)
            if n is not None:
                self.add("TITLE_TOO_LONG", title_path,
                         f"The title is {n} {_how(c.title)}; {c.platform.display_name} allows {c.title.max}.")
        for ch in c.rules.forbidden_characters:
            if title and ch in title:
                self.add("TEXT_INVALID_CHARACTERS", title_path,
                         f"{c.platform.display_name} titles may not contain '{ch}'.")
                break
        for ch in c.rules.forbidden_characters:
            if ch in body:
                self.add("TEXT_INVALID_CHARACTERS", body_path,
                         f"{c.platform.display_name} descriptions may not contain '{ch}'.")
                break
        if c.tags is not None and settings is not None:
            tags = getattr(settings, "tags", None) or []
            n = count(",".join(tags), c.tags.counting) if tags else 0
            if n > c.tags.max:
                self.add("TAGS_TOO_LONG", f"$.{c.platform.settings_key}.tags",
                         f"The tags add up to {n} characters; {c.platform.display_name} allows {c.tags.max}.")
        if c.topic_tag is not None and settings is not None:
            topic = getattr(settings, "topic_tag", None)
            if topic and _too_long(c.topic_tag, topic) is not None:
                self.add("TOPIC_TAG_TOO_LONG", f"$.{c.platform.settings_key}.topic_tag",
                         f"The topic tag is longer than {c.topic_tag.max} characters.")

    def counts(self, limits: tuple[CountLimit, ...], text: str, inline: str, hashtags: tuple[str, ...],
               text_path: str, hashtags_path: str) -> None:
        """Hashtag, mention and link limits over the composed text; hashtags are the inline ones plus the
        copy's `hashtags`."""
        for lim in limits:
            path = text_path
            if lim.subject == "hashtags":
                tags = all_hashtags(inline, hashtags)
                n = len({t.lower() for t in tags}) if lim.unique else len(tags)
                path = hashtags_path
            elif lim.subject == "mentions":
                found = find_mentions(text)
                n = len({m.lower() for m in found}) if lim.unique else len(found)
            else:
                n = count_links(text, unique=lim.unique)
            if n > lim.max:
                note = f" ({lim.note})" if lim.severity == "warning" and lim.note else ""
                code = {"hashtags": "HASHTAG_LIMIT_EXCEEDED", "mentions": "MENTION_LIMIT_EXCEEDED",
                        "links": "LINK_LIMIT_EXCEEDED"}[lim.subject]
                self.add(code, path, f"The post has {n} {lim.subject}; the limit is {lim.max}{note}.",
                         severity=lim.severity)

    # settings ----------------------------------------------------------------------------------------------
    def requirements(self, c: _Compiled, settings: Settings, copy: CopyFacts | None, sk: str) -> None:
        for req in c.requirements:
            if req.when and not getattr(settings, req.when, False):
                continue
            value = getattr(settings, req.field, None)
            ok = value is True if req.check == "true" else bool(value)
            if not ok and req.copy_fallback and copy is not None and getattr(copy, req.copy_fallback, None):
                ok = True
            if not ok:
                self.add(req.code, f"$.{sk}.{req.field}", req.message)

    def alt_text(self, c: _Compiled, settings: Settings, media_ids: list[str], sk: str) -> None:
        alt = getattr(settings, "alt_text", None)
        if isinstance(alt, dict):
            for mid, text in alt.items():
                if mid not in media_ids:
                    self.add("ALT_TEXT_MEDIA_NOT_ATTACHED", f"$.{sk}.alt_text.{mid}",
                             "alt_text names a media ID that is not in media_ids.")
                elif c.alt_text and _too_long(c.alt_text, text) is not None:
                    self.add("ALT_TEXT_TOO_LONG", f"$.{sk}.alt_text.{mid}",
                             f"The alt text is longer than {c.alt_text.max} {_how(c.alt_text)}.")
        elif isinstance(alt, str) and c.alt_text and _too_long(c.alt_text, alt) is not None:
            self.add("ALT_TEXT_TOO_LONG", f"$.{sk}.alt_text",
                     f"The alt text is longer than {c.alt_text.max} {_how(c.alt_text)}.")

    def thread(self, c: _Compiled, settings: Settings, sk: str) -> None:
        rules = c.rules.thread
        parts = getattr(settings, "thread_parts", None) or []
        if rules is not None and parts:
            if len(parts) > rules.max_parts:
                self.add("THREAD_TOO_MANY_PARTS", f"$.{sk}.thread_parts",
                         f"The thread has {len(parts)} extra parts; the limit is {rules.max_parts}.")
            part_text = self.own_limit(rules.part_text)
            for i, part in enumerate(parts):
                path = f"$.{sk}.thread_parts[{i}]"
                n = self.too_long(part_text, part.text, f"{path}.text")
                if n is not None:
                    self.add("THREAD_PART_TOO_LONG", f"{path}.text",
                             f"Thread part {i + 1} is {n} {_how(part_text)}; the limit is {part_text.max}.")
                if rules.part_links:
                    links = count_links(part.text, unique=rules.part_links.unique)
                    if links > rules.part_links.max:
                        self.add("LINK_LIMIT_EXCEEDED", f"{path}.text",
                                 f"Thread part {i + 1} has {links} links; the limit is {rules.part_links.max}.")
                part_media = list(getattr(part, "media_ids", []) or [])
                if rules.part_media is not None and part_media:
                    self.media(rules.part_media, part_media, f"{path}.media_ids", c)
                alt = getattr(part, "alt_text", None) or {}
                for mid in alt:
                    if mid not in part_media:
                        self.add("ALT_TEXT_MEDIA_NOT_ATTACHED", f"{path}.alt_text.{mid}",
                                 "alt_text names a media ID that is not in this part's media_ids.")
        reply = getattr(settings, "follow_up_reply", None)
        lim = c.rules.follow_up_reply
        if reply is not None and lim is not None:
            n = self.too_long(lim, reply.text, f"$.{sk}.follow_up_reply.text")
            if n is not None:
                self.add("FOLLOW_UP_REPLY_TOO_LONG", f"$.{sk}.follow_up_reply.text",
                         f"The follow-up reply is {n} {_how(lim)}; the limit is {lim.max}.")
            links_rule = next((x for x in c.rules.counts if x.subject == "links"), None)
            if links_rule and count_links(reply.text, unique=links_rule.unique) > links_rule.max:
                self.add("LINK_LIMIT_EXCEEDED", f"$.{sk}.follow_up_reply.text",
                         f"The follow-up reply has more than {links_rule.max} links.")

    # media -------------------------------------------------------------------------------------------------
    def media(self, pt: PostTypeRules, media_ids: list[str], path: str, c: _Compiled) -> None:
        n = len(media_ids)
        name = c.platform.display_name
        if n == 0 and pt.min_media > 0:
            self.add("MEDIA_REQUIRED", path, f"{name} {pt.key} needs at least {pt.min_media} media item(s).")
        elif n < pt.min_media:
            self.add("MEDIA_TOO_FEW", path, f"{name} {pt.key} needs at least {pt.min_media} media items; "
                                            f"{n} attached.")
        elif n > pt.max_media:
            if pt.max_media == 0:
                self.add("MEDIA_NOT_ALLOWED", path, f"{name} {pt.key} takes no media; {n} attached.")
                return
            self.add("MEDIA_TOO_MANY", path, f"{name} {pt.key} takes at most {pt.max_media} media items; "
                                             f"{n} attached.")
        kinds: dict[str, int] = {}
        for i, mid in enumerate(media_ids):
            item_path = f"{path}[{i}]"
            m = self.facts.media.get(mid)
            if m is None:
                self.add("MEDIA_NOT_FOUND", item_path, "This media ID is not a media item of the brand.")
                continue
            if m.status in FAILED_STATUSES:
                self.add("MEDIA_FAILED", item_path, "Processing of this media failed; it cannot be published.")
                continue
            if m.status != READY_STATUS:
                self.add("MEDIA_NOT_READY", item_path, f"This media is not ready (status {m.status}).")
                continue
            kind = _kind(m)
            if kind is None:
                self.add("MEDIA_PROPERTIES_UNKNOWN", item_path, "The media's kind is not known.", severity="warning")
                continue
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind not in pt.kinds:
                allowed = " or ".join(pt.kinds) or "no media"
                self.add("MEDIA_KIND_NOT_ALLOWED", item_path, f"{name} {pt.key} takes {allowed}, not {kind}.")
                continue
            spec = pt.spec(kind)
            if spec is not None:
                self.bounds(m, kind, spec, item_path, c, pt)
        if len(kinds) > 1 and not pt.mixed:
            self.add("MEDIA_MIX_NOT_ALLOWED", path, f"{name} {pt.key} cannot mix images and videos.")
        for kind, cap in (("video", pt.max_videos), ("image", pt.max_images)):
            if cap is not None and kinds.get(kind, 0) > cap:
                self.add("MEDIA_TOO_MANY", path, f"{name} {pt.key} takes at most {cap} {kind}(s).")

    def bounds(self, m: MediaFacts, kind: str, spec: MediaSpec, path: str, c: _Compiled, pt: PostTypeRules) -> None:
        name = f"{c.platform.display_name} {pt.key}"
        if spec.content_types and m.content_type and m.content_type not in spec.content_types:
            self.add("MEDIA_FORMAT_NOT_SUPPORTED", path,
                     f"{name} takes {', '.join(spec.content_types)}; this file is {m.content_type}.")
        if spec.max_size and m.size is not None and m.size > spec.max_size:
            self.add("MEDIA_FILE_TOO_LARGE", path, f"The file is {m.size} bytes; {name} allows {spec.max_size}.")
        unknown = []
        if m.width and m.height:
            self.geometry(m, spec, path, c, pt, name)
        elif _has_geometry(spec):
            unknown.append("dimensions")
        if kind == "video" and (spec.min_duration or spec.max_duration):
            if m.duration is None:
                unknown.append("duration")
            elif spec.min_duration and m.duration < spec.min_duration:
                self.add("MEDIA_DURATION_TOO_SHORT", path,
                         f"The video is {m.duration:g} s; {name} needs at least {spec.min_duration:g} s.")
            elif spec.max_duration and m.duration > spec.max_duration:
                self.add("MEDIA_DURATION_TOO_LONG", path,
                         f"The video is {m.duration:g} s; {name} allows at most {spec.max_duration:g} s.")
        if spec.max_size and m.size is None:
            unknown.append("size")
        if unknown:
            self.add("MEDIA_PROPERTIES_UNKNOWN", path, f"The media's {', '.join(unknown)} are not known, so "
                                                       f"{name} bounds could not be checked.", severity="warning")

    def geometry(self, m: MediaFacts, spec: MediaSpec, path: str, c: _Compiled, pt: PostTypeRules,
                 name: str) -> None:
        w, h = m.width or 0, m.height or 0
        found: list[tuple[str, str]] = []
        if not within_aspect(w, h, spec, REPAIR_POLICY.aspect_tolerance):
            lo, hi = spec.aspect_bounds
            found.append(("MEDIA_ASPECT_RATIO_OUT_OF_RANGE",
                          f"The aspect ratio is {w}:{h} ({float(Fraction(w, h)):.3f}); {name} takes "
                          f"{_ratio(lo)} to {_ratio(hi)}."))
        small = []
        if spec.min_width and w < spec.min_width:
            small.append(f"width {w} < {spec.min_width}")
        if spec.min_height and h < spec.min_height:
            small.append(f"height {h} < {spec.min_height}")
        if small:
            found.append(("MEDIA_DIMENSIONS_TOO_SMALL", f"The media is too small for {name}: {', '.join(small)}."))
        large = []
        if spec.max_width and w > spec.max_width:
            large.append(f"width {w} > {spec.max_width}")
        if spec.max_height and h > spec.max_height:
            large.append(f"height {h} > {spec.max_height}")
        if spec.max_pixels and w * h > spec.max_pixels:
            large.append(f"{w * h} pixels > {spec.max_pixels}")
        if large:
            found.append(("MEDIA_DIMENSIONS_TOO_LARGE", f"The media is too large for {name}: {', '.join(large)}."))
        if not found:
            return
        options = compute_repair_options(integration_id=self.iid, platform=self.platform, post_type=pt.key, media=m) \
            if c.rules.post_type(pt.key) is not None else None
        for code, message in found:
            self.add(code, path, message, repair_options=options)


def _has_geometry(spec: MediaSpec) -> bool:
    return any((spec.min_width, spec.min_height, spec.max_width, spec.max_height, spec.min_aspect,
                spec.max_aspect, spec.max_pixels))


def _ratio(r: Fraction | None) -> str:
    if r is None:
        return "any"
    return f"{r.numerator}:{r.denominator}" if r.denominator <= 100 else f"{float(r):.3f}:1"


# --- request-wide checks ----------------------------------------------------------------------------------

def _request_issues(facts: PreflightFacts) -> list[Issue]:
    issues: list[Issue] = []
    when = facts.scheduled_at
    if isinstance(when, str):
        try:
            when = parse_timestamp(when)
        except (ValueError, TypeError):
            issues.append(make_issue("SCHEDULED_AT_MALFORMED", "$.scheduled_at",
                                     "scheduled_at is not an ISO 8601 time with an explicit offset."))
            when = None
    if isinstance(when, datetime):
        if when.tzinfo is None:
            issues.append(make_issue("SCHEDULED_AT_MALFORMED", "$.scheduled_at",
                                     "scheduled_at has no explicit offset."))
        elif when <= facts.now:
            issues.append(make_issue("SCHEDULED_AT_IN_PAST", "$.scheduled_at", "scheduled_at is not in the future."))
    if facts.approval_status == "pending_review":
        issues.append(make_issue("APPROVAL_PENDING", "$.approval_status",
                                 "The Schedule will be held for review and publishes only once approved.",
                                 severity="warning"))
    elif facts.approval_status == "rejected":
        issues.append(make_issue("APPROVAL_REJECTED", "$.approval_status",
                                 "A Schedule created as rejected never publishes.", severity="warning"))
    elif facts.approval_status == "approved" and PUBLISH_SCOPE not in facts.scopes:
        issues.append(make_issue("PUBLISH_PERMISSION_REQUIRED", "$.approval_status",
                                 "An approved Schedule publishes to connected accounts, which needs the "
                                 "publish:execute scope; this key does not hold it."))
    plan = facts.plan
    if plan and plan.max_networks_per_brand is not None:
        requested = {i.platform for iid in facts.integration_ids if (i := facts.integrations.get(iid))}
        networks = requested | set(plan.connected_networks)
        if len(networks) > plan.max_networks_per_brand:
            issues.append(make_issue("PLAN_NETWORK_LIMIT_EXCEEDED", "$.integration_ids",
                                     f"The plan allows {plan.max_networks_per_brand} networks per brand; this "
                                     f"would use {len(networks)}."))
    return issues


# --- entry point ------------------------------------------------------------------------------------------

def evaluate(facts: PreflightFacts) -> EngineResult:
    """Check `facts` against the registry. Deterministic: the same facts give the same result."""
    targets: list[TargetReport] = []
    all_issues: list[Issue] = []
    for i, iid in enumerate(facts.integration_ids):
        integ = facts.integrations.get(iid)
        if integ is None:
            issue = make_issue("TARGET_NOT_FOUND", f"$.integration_ids[{i}]",
                               "No integration with this ID in the brand.", integration_id=iid)
            targets.append(_report(iid, None, None, "not_found", None, [issue]))
            all_issues.append(issue)
            continue
        t = _Target(facts, iid, integ.platform)
        p = BY_KEY.get(integ.platform)
        post_type = None
        if p is None or p.hidden:
            t.add("PLATFORM_NOT_SUPPORTED", f"$.integration_ids[{i}]", "This platform is not supported.")
        else:
            if integ.status in EXPIRED_STATUSES:
                t.add("TARGET_EXPIRED", f"$.integration_ids[{i}]",
                      f"The {p.display_name} account needs reconnecting (status {integ.status}).")
            elif integ.status != "connected":
                t.add("TARGET_DISCONNECTED", f"$.integration_ids[{i}]",
                      f"The {p.display_name} account is not connected (status {integ.status}).")
            t.check()
            settings = facts.content.settings.get(p.key) if p.settings_key else None
            post_type = getattr(settings, "post_type", None) or p.default_post_type
        targets.append(_report(iid, integ.platform, integ.display_name, integ.status, post_type, t.issues))
        all_issues.extend(t.issues)
    request = _request_issues(facts)
    all_issues.extend(request)
    blockers = [x for x in all_issues if x.severity == "blocker"]
    warnings = [x for x in all_issues if x.severity == "warning"]
    policy_ok = not any(x.scope == "policy" and x.severity == "blocker" for x in request)
    return EngineResult(validation_version=VALIDATION_VERSION, can_schedule=not blockers,
                        scheduling_allowed=policy_ok, targets=targets, issues=all_issues, blockers=blockers,
                        warnings=warnings, next_actions=_next_actions(blockers, warnings))


def measure(facts: PreflightFacts) -> dict[str, list[Measure]]:
    """Per target, each text `evaluate` counts against a limit and the count it found: the same `_Target` run,
    so a preview (server/console/preview.py) can never count differently from preflight."""
    out: dict[str, list[Measure]] = {}
    for iid in facts.integration_ids:
        integ = facts.integrations.get(iid)
        p = BY_KEY.get(integ.platform) if integ is not None else None
        if integ is None or p is None or p.hidden:
            continue
        t = _Target(facts, iid, integ.platform)
        t.check()
        out[iid] = t.measures
    return out


def _report(iid: str, platform: str | None, display_name: str | None, status: str, post_type: str | None,
            issues: list[Issue]) -> TargetReport:
    omitted = max(0, len(issues) - MAX_ISSUES)
    shown = issues[:MAX_ISSUES]
    blockers = [x for x in shown if x.severity == "blocker"]
    return TargetReport(integration_id=iid, platform=platform, display_name=display_name, connection_status=status,
                        post_type=post_type, can_schedule=not any(x.severity == "blocker" for x in issues),
                        issues=shown, blockers=blockers, warnings=[x for x in shown if x.severity == "warning"],
                        issues_omitted=omitted)


def _next_actions(blockers: list[Issue], warnings: list[Issue]) -> list[str]:
    out: list[str] = []
    for issue in blockers:
        g = issue.repair_action.guidance
        if g not in out:
            out.append(g)
    if blockers:
        out = out[:MAX_NEXT_ACTIONS - 1]
        out.append("Apply each blocker's repair_action, then run preflight again.")
        return out
    for issue in warnings:
        g = issue.repair_action.guidance
        if g not in out and len(out) < MAX_NEXT_ACTIONS - 1:
            out.append(g)
    out.append("Create the Schedule with the same integration_ids, scheduled_at and approval_status "
               "(links.create_schedule).")
    return out
