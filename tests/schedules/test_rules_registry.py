"""The platform rules registry: the version-bump guard, sources on every numeric rule, and invariants
tying the rules to the registry, the settings models and the counting functions."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from schemas.platform_settings import SETTINGS_MODELS
from schemas.platforms import (
    BY_KEY,
    PLATFORMS,
    REPAIR_POLICY,
    RULES_FINGERPRINT,
    VALIDATION_VERSION,
    rules_fingerprint,
)
from schemas.platforms.rules import CountLimit, MediaSpec, PostTypeRules, TextLimit, ThreadRules
from schemas.textcount import COUNTERS

HISTORY = Path(__file__).parents[1] / "snapshots" / "validation_versions.json"
# Official documentation hosts per platform (plus `spec:` for this service's own limits).
OFFICIAL = {
    "instagram": ("developers.facebook.com",), "facebook": ("developers.facebook.com",),
    "threads": ("developers.facebook.com",), "tiktok": ("developers.tiktok.com",),
    "youtube": ("developers.google.com", "support.google.com"), "linkedin": ("learn.microsoft.com",),
    "x": ("docs.x.com", "github.com/twitter/twitter-text"), "bluesky": ("github.com/bluesky-social", "bsky.social"),
    "mastodon": ("docs.joinmastodon.org",),
    "telegram": ("core.telegram.org",), "discord": ("discord.com/developers",), "tumblr": ("www.tumblr.com/docs",),
    "pinterest": ("developers.pinterest.com", "help.pinterest.com"),
    "google_business": ("developers.google.com", "support.google.com"),
}


def test_rules_change_needs_a_version_bump() -> None:
    actual = rules_fingerprint()
    assert actual == RULES_FINGERPRINT, (
        "The platform rules changed. Bump VALIDATION_VERSION (date-and-sequence tag), set RULES_FINGERPRINT = "
        f"{actual!r} in schemas/platforms/__init__.py and add the pair to {HISTORY.name}.")
    history = json.loads(HISTORY.read_text())
    assert history.get(VALIDATION_VERSION) == actual, (
        f"{VALIDATION_VERSION} is recorded with other rules in {HISTORY.name}: a rule change needs a NEW version")
    assert len(set(history.values())) == len(history), "two versions cannot name the same rules"
    assert list(history) == sorted(history), "versions are added in order"
    assert list(history)[-1] == VALIDATION_VERSION


def test_version_tag_format() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}\.\d+", VALIDATION_VERSION)


def test_fingerprint_sees_every_rule(monkeypatch) -> None:
    """Changing any number in the rules changes the fingerprint (so the guard above cannot be dodged)."""
    rules = BY_KEY["threads"].rules
    before = rules_fingerprint()
    rules_fingerprint.cache_clear()
    try:
        changed = dataclasses.replace(rules, text=(dataclasses.replace(rules.text[0], max=501), *rules.text[1:]))
        monkeypatch.setitem(__import__("schemas.platforms.data", fromlist=["RULES"]).RULES, "threads", changed)
        assert rules_fingerprint() != before
    finally:
        rules_fingerprint.cache_clear()


def _rule_objects():
    for p in PLATFORMS:
        r = p.rules
        for t in r.text:
            yield p.key, t
        yield from ((p.key, c) for c in r.counts)
        for pt in r.post_types:
            yield p.key, pt
            yield from ((p.key, s) for s in (pt.image, pt.video) if s)
        for q in r.requirements:
            yield p.key, q
        if r.thread:
            yield p.key, r.thread
            yield p.key, r.thread.part_text
            if r.thread.part_media:
                yield p.key, r.thread.part_media
        if r.follow_up_reply:
            yield p.key, r.follow_up_reply


@pytest.mark.parametrize(("platform", "rule"), list(_rule_objects()), ids=lambda v: getattr(v, "key", None)
                         or getattr(v, "field", None) or getattr(v, "subject", None) or str(v)[:20])
def test_every_rule_cites_official_documentation(platform: str, rule) -> None:
    source = rule.source
    assert source, f"{rule} has no source"
    if source.startswith("spec:"):
        return
    assert source.startswith("https://"), source
    assert any(h in source for h in OFFICIAL[platform]), f"{source} is not official {platform} documentation"


def test_repair_policy_cites_a_source() -> None:
    assert REPAIR_POLICY.source


def test_rules_match_registry_and_settings_models() -> None:
    for p in PLATFORMS:
        r = p.rules
        assert tuple(t.key for t in r.post_types) == p.post_types
        assert p.default_post_type in p.post_types
        assert r.guidance, f"{p.key} needs agent guidance"
        for t in r.text:
            assert t.counting in COUNTERS
            assert t.post_types is None or set(t.post_types) <= set(p.post_types)
        model = SETTINGS_MODELS.get(p.key)
        for q in r.requirements:
            assert model is not None and q.field in model.model_fields, f"{p.key}.{q.field}"
            assert q.when is None or q.when in model.model_fields
        if r.thread:
            assert model is not None and "thread_parts" in model.model_fields
        for pt in r.post_types:
            assert pt.min_media <= pt.max_media
            assert set(pt.kinds) == {k for k in ("image", "video") if pt.spec(k)}, f"{p.key} {pt.key} kinds"
            if pt.max_media and model is not None:
                cap = model.model_fields["media_ids"].metadata
                max_len = next(m.max_length for m in cap if getattr(m, "max_length", None))
                assert pt.max_media <= max_len, f"{p.key} {pt.key}: settings model allows fewer media"


def test_rule_types_are_frozen() -> None:
    for cls in (TextLimit, CountLimit, MediaSpec, PostTypeRules):
        assert cls.__dataclass_params__.frozen  # pyright: ignore[reportAttributeAccessIssue]  # @dataclass sets it; the checker does not declare it


def _thread(platform: str) -> ThreadRules:
    found = BY_KEY[platform].rules.thread
    assert found is not None, platform
    return found


def _post_type(platform: str, key: str) -> PostTypeRules:
    found = BY_KEY[platform].rules.post_type(key)
    assert found is not None, (platform, key)
    return found


def _text(platform: str, name: str, post_type: str) -> TextLimit:
    found = BY_KEY[platform].rules.text_limit(name, post_type)
    assert found is not None, (platform, name, post_type)
    return found


def test_spec_limits_are_the_spec_values() -> None:
    """The numbers the spec itself states (Limits table, settings table)."""
    assert _thread("x").max_parts == 24 and _thread("bluesky").max_parts == 24
    x_parts = _thread("x").part_media
    assert x_parts is not None and x_parts.max_media == 4
    assert _thread("threads").max_parts == 9 and _thread("threads").part_media is None
    th = BY_KEY["threads"].rules
    assert (_text("threads", "caption", "TH_TEXT").max, _text("threads", "caption", "TH_TEXT").counting) == (500, "threads")
    assert th.counts[0].max == 5
    assert _post_type("threads", "TH_CAROUSEL").min_media == 2 and _post_type("threads", "TH_CAROUSEL").max_media == 20
    assert [_text("pinterest", f, "PIN_IMAGE").max for f in ("caption", "title", "alt_text")] == [800, 100, 500]
    assert _post_type("pinterest", "PIN_IMAGE").max_media == 5 and _post_type("pinterest", "PIN_VIDEO").max_media == 1
