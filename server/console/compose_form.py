"""The composer's form, both ways: the per-platform settings fields generated from each platform's settings model
(schemas/platform_settings.py, the schema the API validates with), a submitted form turned into the body of
`create_content_item` / `update_content_item`, and a stored content item turned back into form values.

This module shapes data only: every rule (lengths, media counts, required settings) is the API's, applied when
the body goes through the dispatcher or preflight. Form values are bounded here only so a hostile form cannot
make the page build huge bodies before the API refuses them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from schemas.content import CAPTION_MAX, HASHTAG_MAX, HASHTAGS_MAX, NAME_MAX, TITLE_MAX
from schemas.platform_settings import SETTINGS_MODELS
from schemas.platforms import BY_KEY, PLATFORMS

# Settings fields the composer fills from elsewhere: the media picker, the thread box, or not at all
# (alt text keyed by media ID: an object, which `_field` leaves out). Everything else of a settings model gets a generated field.
NOT_GENERATED = {"media_ids", "thread_parts"}
# Fields whose choices are live, per connected account (`get_target_dynamic_options`), not the schema's enum.
DYNAMIC = {("tiktok", "privacy_level"): "creator_privacy_levels", ("pinterest", "board_id"): "pinterest_boards"}
THREAD_SEPARATOR = "---"
MAX_PARTS = 25  # more than any platform takes (X: 24 after the main post); the API refuses the excess
MAX_MEDIA = 35  # TikTok's carousel, the largest media list of any platform
MAX_TEXT = CAPTION_MAX  # any text field of the form
ICONS = {"instagram": "IG", "tiktok": "TT", "facebook": "FB", "youtube": "YT", "linkedin": "in", "x": "X",
         "bluesky": "BS", "mastodon": "MA", "telegram": "TG", "discord": "DC", "tumblr": "TB", "pinterest": "P",
         "threads": "TH", "google_business": "G"}


@dataclass(frozen=True)
class SettingField:
    """One generated input of a platform's settings fieldset."""

    platform: str
    name: str
    kind: str  # select, checkbox, checkboxes, text, textarea, list
    label: str
    choices: tuple[str, ...] = ()
    default: Any = None
    nullable: bool = False
    max_length: int | None = None
    description: str | None = None
    dynamic: str | None = None  # kind of live options

    @property
    def input_name(self) -> str:
        return f"set.{self.platform}.{self.name}"


def _label(name: str, title: str | None) -> str:
    return (title or name.replace("_", " ").capitalize()).replace("Aigc", "AI-generated content")


def _field(platform: str, name: str, prop: dict[str, Any]) -> SettingField | None:
    variants = prop.get("anyOf") or [prop]
    nullable = any(v.get("type") == "null" for v in variants)
    main = next((v for v in variants if v.get("type") != "null"), {})
    common = {"label": _label(name, prop.get("title")), "default": prop.get("default"), "nullable": nullable,
              "description": prop.get("description") or main.get("description"),
              "dynamic": DYNAMIC.get((platform, name))}
    if common["dynamic"]:
        return SettingField(platform, name, "select", choices=tuple(main.get("enum") or ()), **common)
    if "$ref" in main:  # an object with one text (Threads' follow-up reply)
        return SettingField(platform, name, "textarea", max_length=10_000, **common)
    kind = main.get("type")
    if "enum" in main or "const" in main:
        return SettingField(platform, name, "select", choices=tuple(main.get("enum") or [main["const"]]), **common)
    if kind == "boolean":
        return SettingField(platform, name, "checkbox", **common)
    if kind == "string":
        return SettingField(platform, name, "text", max_length=main.get("maxLength"), **common)
    if kind == "array":
        items = main.get("items") or {}
        if "enum" in items:
            return SettingField(platform, name, "checkboxes", choices=tuple(items["enum"]), **common)
        if items.get("type") == "string":
            return SettingField(platform, name, "list", max_length=main.get("maxItems"), **common)
    return None  # a shape the form cannot express: left at its default


@cache
def settings_fields(platform: str) -> tuple[SettingField, ...]:
    model = SETTINGS_MODELS.get(platform)
    if model is None:
        return ()
    props = model.model_json_schema()["properties"]
    return tuple(f for name, prop in props.items() if name not in NOT_GENERATED and (f := _field(platform, name, prop)))


def takes_threads(platform: str) -> bool:
    model = SETTINGS_MODELS.get(platform)
    return model is not None and "thread_parts" in model.model_fields


def takes_media(platform: str) -> bool:
    model = SETTINGS_MODELS.get(platform)
    return model is not None and "media_ids" in model.model_fields


# -- form values -> API body ---------------------------------------------------------------------------------

def text(form: dict[str, Any], name: str, limit: int = MAX_TEXT) -> str:
    value = form.get(name)
    if isinstance(value, list):
        value = value[0] if value else ""
    return (value if isinstance(value, str) else "")[:limit + 1].replace("\r\n", "\n")


def many(form: dict[str, Any], name: str, limit: int = 100) -> list[str]:
    value = form.get(name)
    values = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    out: list[str] = []
    for v in values[:limit]:
        if v and v not in out:
            out.append(v[:64])
    return out


def hashtags(value: str) -> list[str]:
    """Space- or comma-separated tags; a leading # is dropped (the API takes tags without it)."""
    tags: list[str] = []
    for word in value.replace(",", " ").split()[:HASHTAGS_MAX + 1]:
        tag = word.lstrip("#")[:HASHTAG_MAX + 1]
        if tag and tag not in tags:
            tags.append(tag)
    return tags


def thread_parts(value: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    for line in value.split("\n"):
        if line.strip() == THREAD_SEPARATOR:
            parts.append("\n".join(current).strip())
            current = []
        else:
            current.append(line)
    parts.append("\n".join(current).strip())
    return [p for p in parts if p][:MAX_PARTS]


def _copy(form: dict[str, Any], prefix: str) -> dict[str, Any]:
    title = text(form, f"{prefix}title", TITLE_MAX).strip()
    return {"caption": text(form, f"{prefix}caption"), "hashtags": hashtags(text(form, f"{prefix}hashtags")),
            "title": title or None}


def _setting_value(f: SettingField, form: dict[str, Any]) -> tuple[bool, Any]:
    """(present, value) of one generated field; absent fields keep the model's default."""
    if f.kind == "checkbox":
        return (True, True) if text(form, f.input_name) == "1" else (False, None)
    if f.kind == "checkboxes":
        return True, [c for c in many(form, f.input_name, 20) if c in f.choices] or []
    raw = text(form, f.input_name).strip()
    if not raw:
        return False, None
    if f.kind == "list":
        return True, [w.strip() for w in raw.split(",") if w.strip()][:(f.max_length or 50) + 1]
    if f.kind == "textarea":
        return True, {"text": raw}
    return True, raw


def body_of(form: dict[str, Any], platforms_of: dict[str, str]) -> dict[str, Any]:
    """The content item body of a submitted composer form. `platforms_of`: integration ID -> platform of the
    brand's accounts; the chosen targets decide which platforms get copy and settings (others are null, so an
    edit clears a platform that was dropped)."""
    chosen = sorted(i for i in many(form, "integration_ids", 20) if i in platforms_of)
    platforms = [p.key for p in PLATFORMS if p.key in {platforms_of[i] for i in chosen}]
    per_platform = text(form, "copy_mode") == "per_platform"
    body: dict[str, Any] = {"name": text(form, "name", NAME_MAX), "intended_integration_ids": chosen,
                            "copy_mode": "per_platform" if per_platform else "single"}
    if per_platform:
        body["single_copy"] = None
        body["platform_copy"] = {p: _copy(form, f"copy.{p}.") for p in platforms}
    else:
        body["single_copy"] = _copy(form, "")
        body["platform_copy"] = None
    media = many(form, "media_ids", MAX_MEDIA)
    for p in PLATFORMS:
        if p.settings_key is None:
            continue
        if p.key not in platforms:
            body[p.settings_key] = None
            continue
        settings: dict[str, Any] = {}
        if takes_media(p.key):
            settings["media_ids"] = media
        for f in settings_fields(p.key):
            present, value = _setting_value(f, form)
            if present:
                settings[f.name] = value
        if takes_threads(p.key):
            parts = thread_parts(text(form, f"thread.{p.key}"))
            settings["thread_parts"] = [{"text": t} for t in parts] or None
        body[p.settings_key] = settings
    return body


# -- stored item -> form values ------------------------------------------------------------------------------

def _join_tags(copy: dict[str, Any] | None) -> str:
    return " ".join((copy or {}).get("hashtags") or [])


@dataclass
class Values:
    """What the form shows: from a stored item, or echoed back from a refused submission."""

    name: str = ""
    integration_ids: list[str] = field(default_factory=list)
    copy_mode: str = "single"
    copy: dict[str, dict[str, str]] = field(default_factory=dict)  # "" = single copy; else platform key
    media_ids: list[str] = field(default_factory=list)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)  # platform -> field -> value
    threads: dict[str, str] = field(default_factory=dict)


def values_of_body(body: dict[str, Any]) -> Values:
    v = Values(name=body.get("name") or "", integration_ids=list(body.get("intended_integration_ids") or []),
               copy_mode=body.get("copy_mode") or "single")
    single = body.get("single_copy")
    if single:
        v.copy[""] = {"caption": single.get("caption") or "", "hashtags": _join_tags(single),
                      "title": single.get("title") or ""}
    for p, copy in (body.get("platform_copy") or {}).items():
        if copy:
            v.copy[p] = {"caption": copy.get("caption") or "", "hashtags": _join_tags(copy),
                         "title": copy.get("title") or ""}
    for p in PLATFORMS:
        s = body.get(p.settings_key) if p.settings_key else None
        if not s:
            continue
        for m in s.get("media_ids") or []:
            if m not in v.media_ids:
                v.media_ids.append(m)
        v.settings[p.key] = {k: val for k, val in s.items() if k not in NOT_GENERATED}
        parts = s.get("thread_parts") or []
        if parts:
            v.threads[p.key] = f"\n{THREAD_SEPARATOR}\n".join(part.get("text", "") for part in parts)
    return v


def shown(f: SettingField, values: Values) -> Any:
    """The value a generated field shows: the item's, else the model's default."""
    found = values.settings.get(f.platform, {})
    value = found.get(f.name, f.default) if f.name in found or values.settings.get(f.platform) is not None \
        else f.default
    if f.kind == "list":
        return ", ".join(value or [])
    if f.kind == "textarea":
        return (value or {}).get("text", "") if isinstance(value, dict) else ""
    return value


# -- times -----------------------------------------------------------------------------------------------------

def local_input(at: datetime, tz: ZoneInfo) -> str:
    """A `datetime-local` value in the brand's zone."""
    return at.astimezone(tz).strftime("%Y-%m-%dT%H:%M")


def default_time(now: datetime, tz: ZoneInfo) -> str:
    """The next full hour after an hour from now, in the brand's zone."""
    soon = (now + timedelta(hours=2)).astimezone(tz).replace(minute=0, second=0, microsecond=0)
    return local_input(soon, tz)


def utc_of_local(value: str, tz: ZoneInfo) -> str | None:
    """`2026-12-01T09:30` in the brand's zone as the API's UTC timestamp; None if it is not such a value."""
    try:
        local = datetime.fromisoformat(value.strip()[:32])
    except ValueError:
        return None
    if local.tzinfo is None:
        local = local.replace(tzinfo=tz)
    return local.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def platform_name(key: str) -> str:
    p = BY_KEY.get(key)
    return p.display_name if p else key
