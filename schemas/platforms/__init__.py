"""The platform registry: one entry per platform, the single source for platform keys, post types and
defaults. `GET /v1/platforms/capabilities`, the content settings models and preflight all derive from it.
The rules of each platform (text, media, threads, required settings, sources) are in `data.py`, typed by
`rules.py`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from functools import cache

from schemas.platforms.data import REPAIR_POLICY, RULES
from schemas.platforms.rules import PlatformRules

# Version tag of the validation policy (date and sequence). Bump it whenever any rule changes: preflight
# reports it, repair options are issued under it (`policy_version`) and the capabilities ETag changes with it.
VALIDATION_VERSION = "2026-11-23.1"
# Fingerprint of the rules data that VALIDATION_VERSION describes. A test recomputes it: when the rules
# change, bump VALIDATION_VERSION and record the new fingerprint here (the test prints it).
RULES_FINGERPRINT = "sha256:ea488d54e8b1bd7275c045611e1debf5027443d7df616a792aa44c58a1ab9c38"


@dataclass(frozen=True)
class Platform:
    key: str
    display_name: str
    # Name of the draft settings object (`instagram_settings`), or None where the platform takes copy only.
    settings_key: str | None
    post_types: tuple[str, ...] = ()
    default_post_type: str | None = None
    # Always present in content item responses (null when unset) vs. present only when the item has them.
    main_settings: bool = False
    # Kinds of live choices `.../targets/{id}/dynamic-options` serves for this platform.
    dynamic_options: str | None = None
    account_modes: tuple[str, ...] = ("personal",)
    extra: dict[str, object] = field(default_factory=dict)
    # Hidden or internal platforms are left out of the public capabilities document.
    hidden: bool = False

    @property
    def rules(self) -> PlatformRules:
        return RULES[self.key]


PLATFORMS: tuple[Platform, ...] = (
    Platform("instagram", "Instagram", "instagram_settings", ("GRID_POST", "STORY", "REEL"), "REEL",
             main_settings=True, account_modes=("business", "creator")),
    Platform("tiktok", "TikTok", "tiktok_settings", ("VIDEO", "IMAGE", "CAROUSEL"), "VIDEO",
             main_settings=True, dynamic_options="creator_privacy_levels", account_modes=("personal", "business")),
    Platform("facebook", "Facebook", "facebook_settings", ("FB_POST", "FB_STORY", "FB_REEL", "FB_TEXT"), "FB_REEL",
             main_settings=True, account_modes=("page",)),
    Platform("youtube", "YouTube", "youtube_settings", ("YT_SHORT", "YT_VIDEO"), "YT_SHORT",
             main_settings=True, account_modes=("channel",)),
    Platform("linkedin", "LinkedIn", "linkedin_settings", ("LI_TEXT", "LI_IMAGE", "LI_VIDEO", "LI_ARTICLE"), "LI_TEXT",
             main_settings=True, account_modes=("personal", "organization")),
    Platform("x", "X", "x_settings", ("X_POST",), "X_POST"),
    Platform("bluesky", "Bluesky", "bluesky_settings", ("BS_TEXT", "BS_IMAGE", "BS_VIDEO"), "BS_TEXT"),
    Platform("mastodon", "Mastodon", "mastodon_settings", ("MA_POST",), "MA_POST"),
    Platform("telegram", "Telegram", "telegram_settings", ("TG_TEXT", "TG_PHOTO", "TG_VIDEO", "TG_ALBUM"), "TG_TEXT",
             account_modes=("channel", "group")),
    Platform("discord", "Discord", "discord_settings", ("DC_MESSAGE", "DC_ANNOUNCEMENT"), "DC_MESSAGE",
             account_modes=("channel",)),
    Platform("tumblr", "Tumblr", "tumblr_settings", ("TB_TEXT", "TB_PHOTO", "TB_VIDEO", "TB_LINK"), "TB_TEXT",
             account_modes=("blog",)),
    Platform("pinterest", "Pinterest", "pinterest_settings", ("PIN_IMAGE", "PIN_VIDEO"), "PIN_IMAGE",
             dynamic_options="pinterest_boards", account_modes=("personal", "business")),
    Platform("threads", "Threads", "threads_settings", ("TH_TEXT", "TH_IMAGE", "TH_VIDEO", "TH_CAROUSEL"), "TH_TEXT"),
    Platform("google_business", "Google Business Profile", None, ("GBP_UPDATE",), "GBP_UPDATE",
             account_modes=("location",)),
)

BY_KEY: dict[str, Platform] = {p.key: p for p in PLATFORMS}
PLATFORM_KEYS: tuple[str, ...] = tuple(p.key for p in PLATFORMS)
SETTINGS_KEYS: tuple[str, ...] = tuple(p.settings_key for p in PLATFORMS if p.settings_key)
MAIN_SETTINGS_KEYS: tuple[str, ...] = tuple(p.settings_key for p in PLATFORMS if p.settings_key and p.main_settings)


def platform(key: str) -> Platform:
    return BY_KEY[key]


def public_platforms() -> tuple[Platform, ...]:
    return tuple(p for p in PLATFORMS if not p.hidden)


assert set(RULES) == set(BY_KEY), "every platform has rules"
assert all({t.key for t in RULES[p.key].post_types} == set(p.post_types) for p in PLATFORMS), \
    "the rules describe exactly the registry's post types"


@cache
def rules_fingerprint() -> str:
    """sha256 over the canonical JSON of every platform entry and its rules (what VALIDATION_VERSION names)."""
    data = {"platforms": [{**dataclasses.asdict(p), "rules": dataclasses.asdict(p.rules)} for p in PLATFORMS],
            "repair_policy": dataclasses.asdict(REPAIR_POLICY)}
    body = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()
    return "sha256:" + hashlib.sha256(body).hexdigest()
