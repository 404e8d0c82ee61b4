"""The draft rules that need more than one field (400) or stored data (422), and the stored <-> public shapes.

Split (docs/decisions.md, "Content"): what can be decided from the request alone is 400 MALFORMED_REQUEST —
field types, bounds, enums, unknown and camelCase keys, ID formats, duplicates and order (the request
models), and the cross-field rules below (copy mode, Threads and Pinterest copy limits, commercial content
types, alt_text keys, thread shapes, Threads and Pinterest media counts). What needs stored data is 422
DOMAIN_VALIDATION_FAILED: integrations, labels and media of the brand, media readiness, media kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, func, literal_column
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import content as sc
from schemas.errors import ApiError, Issues
from schemas.platforms import MAIN_SETTINGS_KEYS, PLATFORM_KEYS, PLATFORMS, SETTINGS_KEYS
from schemas.text_length import THREADS_LINKS_MAX, THREADS_TEXT_MAX, count_links, threads_length
from schemas.time import iso
from storage.statements import Query
from storage.tables.content import ContentItem, ContentItemLabel
from storage.tables.integrations import Integration
from storage.tables.library import Label
from storage.tables.media import READY_STATUSES, Media

PLATFORM_OF_SETTINGS = {p.settings_key: p.key for p in PLATFORMS if p.settings_key}
_PLATFORM_ORDER = {k: n for n, k in enumerate(PLATFORM_KEYS)}
_SETTINGS_ORDER = {k: n for n, k in enumerate(SETTINGS_KEYS)}
THREAD_SETTINGS = ("x_settings", "bluesky_settings", "mastodon_settings", "threads_settings")


@dataclass
class Draft:
    """A draft's state as validated models: the request (create) or the stored item merged with a patch."""

    copy_mode: str = "single"
    single_copy: Any = None  # sc.Copy | sc.OlderCopy | None
    platform_copy: Any = None  # sc.PlatformCopy | None
    settings: dict[str, Any] = field(default_factory=dict)  # settings key -> Settings model (non-null only)
    intended_integration_ids: list[str] = field(default_factory=list)
    label_ids: list[str] = field(default_factory=list)
    thumbnail_media_id: str | None = None
    thumbnail_timestamp: float = 0.0

    @classmethod
    def from_request(cls, req: Any, base: Draft | None = None) -> Draft:
        """The request's fields over `base` (a patch: only provided fields change; null clears)."""
        draft = Draft() if base is None else Draft(**{**base.__dict__, "settings": dict(base.settings)})
        names = _draft_fields(type(req))
        for name in names if base is None else (n for n in names if n in req.model_fields_set):
            value = getattr(req, name)
            if name in SETTINGS_KEYS:
                if value is None:
                    draft.settings.pop(name, None)
                else:
                    draft.settings[name] = value
            else:
                setattr(draft, name, value)
        return draft

    @classmethod
    def from_row(cls, item: ContentItem, label_ids: list[str]) -> Draft:
        return cls(
            copy_mode=item.copy_mode,
            single_copy=sc.Copy.model_validate(item.single_copy) if item.single_copy is not None else None,
            platform_copy=sc.PlatformCopy.model_validate(item.platform_copy) if item.platform_copy else None,
            settings={k: sc.SETTINGS_BY_KEY[k].model_validate(v) for k, v in item.settings.items()},
            intended_integration_ids=list(item.intended_integration_ids), label_ids=list(label_ids),
            thumbnail_media_id=item.thumbnail_media_id, thumbnail_timestamp=item.thumbnail_timestamp,
        )

    def apply(self, item: ContentItem) -> None:
        """Write this state onto a row (labels are written separately)."""
        item.copy_mode = self.copy_mode
        item.single_copy = _copy_json(self.single_copy)
        item.platform_copy = (None if self.platform_copy is None else
                              {k: _copy_json(v) for k in PLATFORM_KEYS if (v := getattr(self.platform_copy, k))})
        item.settings = {k: self.settings[k].model_dump(mode="json") for k in SETTINGS_KEYS if k in self.settings}
        item.intended_integration_ids = list(self.intended_integration_ids)
        item.thumbnail_media_id = self.thumbnail_media_id
        item.thumbnail_timestamp = float(self.thumbnail_timestamp)

    def copies(self) -> list[tuple[str, str | None, Any]]:
        """(field path, platform or None, copy) for every copy the draft would post."""
        if self.copy_mode == "single":
            return [("$.single_copy", None, self.single_copy)] if self.single_copy is not None else []
        if self.platform_copy is None:
            return []
        return [(f"$.platform_copy.{k}", k, v) for k in PLATFORM_KEYS if (v := getattr(self.platform_copy, k))]

    def media_refs(self) -> list[tuple[str, str, str | None]]:
        """(field path, media ID, settings key or None) of every media ID the draft refers to."""
        refs: list[tuple[str, str, str | None]] = []
        for key in SETTINGS_KEYS:
            s = self.settings.get(key)
            if s is None:
                continue
            refs += [(f"$.{key}.media_ids[{i}]", m, key) for i, m in enumerate(s.media_ids)]
            for p, part in enumerate(getattr(s, "thread_parts", None) or []):
                refs += [(f"$.{key}.thread_parts[{p}].media_ids[{i}]", m, key)
                         for i, m in enumerate(getattr(part, "media_ids", []))]
        if self.thumbnail_media_id:
            refs.append(("$.thumbnail_media_id", self.thumbnail_media_id, None))
        return refs


_DRAFT_FIELDS: dict[type, tuple[str, ...]] = {}


def _draft_fields(request: type) -> tuple[str, ...]:
    """The fields of a request model that make a draft (a create's fields but its brand and name), in the
    model's order; found once per model (pydantic's `model_fields` is a property that builds a mapping)."""
    found = _DRAFT_FIELDS.get(request)
    if found is None:
        create = sc.CreateContentItemRequest.model_fields
        found = _DRAFT_FIELDS[request] = tuple(n for n in request.model_fields
                                               if n in create and n not in ("brand_id", "name"))
    return found


def _copy_json(copy: Any) -> dict[str, Any] | None:
    if copy is None:
        return None
    data = copy.model_dump(mode="json")
    data.setdefault("title", None)  # the older single copy has no title: stored as null
    return data


# -- 400: rules the request alone decides --------------------------------------------------------------------

def shape_issues(draft: Draft) -> Issues:
    issues = Issues()
    if draft.copy_mode == "single" and draft.platform_copy is not None:
        issues.add("$.platform_copy", "NOT_ALLOWED",
                   "platform_copy is used only when copy_mode is per_platform: set copy_mode to per_platform, or "
                   "send platform_copy as null.")
    if draft.copy_mode == "per_platform" and draft.single_copy is not None:
        issues.add("$.single_copy", "NOT_ALLOWED",
                   "single_copy is used only when copy_mode is single: set copy_mode to single, or send "
                   "single_copy as null.")
    for path, platform, copy in draft.copies():
        targets = [platform] if platform else [PLATFORM_OF_SETTINGS[k] for k in draft.settings]
        if "threads" in targets:
            n = threads_length(copy.caption)
            if n > THREADS_TEXT_MAX:
                issues.add(f"{path}.caption", "TOO_LONG",
                           f"Threads copy is at most {THREADS_TEXT_MAX} characters, each emoji counted as its UTF-8 "
                           f"bytes; this caption counts {n}.")
            links = count_links(copy.caption)
            if links > THREADS_LINKS_MAX:
                issues.add(f"{path}.caption", "TOO_MANY_LINKS",
                           f"Threads copy takes at most {THREADS_LINKS_MAX} links; this caption has {links}.")
        if "pinterest" in targets and len(copy.caption) > sc.PINTEREST_COPY_MAX:
            issues.add(f"{path}.caption", "TOO_LONG",
                       f"Pinterest copy (the Pin description) is at most {sc.PINTEREST_COPY_MAX} characters; this "
                       f"caption has {len(copy.caption)}.")

    tiktok = draft.settings.get("tiktok_settings")
    if tiktok is not None:
        if tiktok.is_commercial_content and not tiktok.commercial_types:
            issues.add("$.tiktok_settings.commercial_types", "REQUIRED",
                       "is_commercial_content is true: list the commercial types (YOUR_BRAND, BRANDED_CONTENT).")
        if tiktok.commercial_types and not tiktok.is_commercial_content:
            issues.add("$.tiktok_settings.commercial_types", "NOT_ALLOWED",
                       "commercial_types apply only to commercial content: set is_commercial_content to true, or "
                       "send an empty list.")

    for key in ("bluesky_settings", "tumblr_settings"):
        s = draft.settings.get(key)
        if s is not None:
            _alt_text_keys(issues, f"$.{key}", s.alt_text, s.media_ids)
    bluesky = draft.settings.get("bluesky_settings")
    for p, part in enumerate((bluesky.thread_parts or []) if bluesky is not None else []):
        _alt_text_keys(issues, f"$.bluesky_settings.thread_parts[{p}]", part.alt_text, part.media_ids)
    for key in THREAD_SETTINGS:
        s = draft.settings.get(key)
        if s is not None and s.thread_parts == []:
            issues.add(f"$.{key}.thread_parts", "TOO_FEW_ITEMS",
                       "An empty thread is not a thread: omit thread_parts or send null for a single post.")

    threads = draft.settings.get("threads_settings")
    if threads is not None:
        n = len(threads.media_ids)
        path = "$.threads_settings.media_ids"
        if threads.post_type == "TH_TEXT" and n:
            issues.add(path, "NOT_ALLOWED", "TH_TEXT posts take no media: remove media_ids or choose TH_IMAGE, "
                                            "TH_VIDEO or TH_CAROUSEL.")
        elif threads.post_type in ("TH_IMAGE", "TH_VIDEO") and n != 1:
            kind = "image" if threads.post_type == "TH_IMAGE" else "video"
            issues.add(path, "MEDIA_COUNT", f"{threads.post_type} takes exactly one {kind}; {n} given.")
        elif threads.post_type == "TH_CAROUSEL" and not 2 <= n <= 20:
            issues.add(path, "MEDIA_COUNT", f"TH_CAROUSEL takes 2 to 20 images and videos; {n} given.")

    pinterest = draft.settings.get("pinterest_settings")
    if pinterest is not None and not pinterest.media_ids:
        issues.add("$.pinterest_settings.media_ids", "MEDIA_COUNT",
                   "A Pin needs media: 1 to 5 images, or one video.")
    return issues


def _alt_text_keys(issues: Issues, path: str, alt_text: dict[str, str], media_ids: list[str]) -> None:
    for key in alt_text:
        if key not in media_ids:
            issues.add(f"{path}.alt_text.{key}", "NOT_IN_MEDIA_IDS",
                       f"alt_text is keyed by a media ID of {path.removeprefix('$.')}.media_ids; this ID is not one.")


# -- 422: rules that need stored data ------------------------------------------------------------------------

# Reads of columns, not ORM objects (storage/statements.py): `media_kind` and the checks below read only
# these columns of a Media row.
_BRAND_INTEGRATIONS = Query(select(Integration.id).where(Integration.brand_id == bindparam("brand_id"),
                                                            col(Integration.id).in_(bindparam("ids", expanding=True))))
_BRAND_LABELS = Query(select(Label.id).where(Label.brand_id == bindparam("brand_id"),
                                                col(Label.id).in_(bindparam("ids", expanding=True))))
_BRAND_MEDIA = Query(select(Media.id, Media.status, Media.kind, Media.content_type).where(
    Media.brand_id == bindparam("brand_id"), col(Media.id).in_(bindparam("ids", expanding=True))))

async def data_issues(session: AsyncSession, brand_id: str, draft: Draft, fields: set[str] | None = None) -> Issues:
    """Check what `fields` refer to (all fields when None): integrations, labels and media of this brand."""
    issues = Issues()

    def wanted(name: str) -> bool:
        return fields is None or name in fields

    if wanted("intended_integration_ids") and draft.intended_integration_ids:
        found = {r.id for r in await _BRAND_INTEGRATIONS.rows(session, {"brand_id": brand_id,
                                                                        "ids": draft.intended_integration_ids})}
        for i, iid in enumerate(draft.intended_integration_ids):
            if iid not in found:
                issues.add(f"$.intended_integration_ids[{i}]", "NOT_FOUND",
                           "No integration of this brand has this ID; use an integration_id from list_targets.")
    if wanted("label_ids") and draft.label_ids:
        found = {r.id for r in await _BRAND_LABELS.rows(session, {"brand_id": brand_id, "ids": draft.label_ids})}
        for i, lid in enumerate(draft.label_ids):
            if lid not in found:
                issues.add(f"$.label_ids[{i}]", "NOT_FOUND",
                           "No label of this brand has this ID; use an id from list_labels or create_label.")

    refs = [r for r in draft.media_refs() if wanted(r[2] or "thumbnail_media_id")]
    if refs:
        rows = await _BRAND_MEDIA.rows(session, {"brand_id": brand_id, "ids": sorted({r[1] for r in refs})})
        media = {m.id: m for m in rows}
        for path, mid, _ in refs:
            m = media.get(mid)
            if m is None:
                issues.add(path, "NOT_FOUND", "No media item of this brand has this ID; upload or import it first.")
            elif m.status not in READY_STATUSES:
                if m.status == "failed":
                    issues.add(path, "MEDIA_FAILED", "This media item failed processing; repair or replace it.",
                               next_action="repair_media")
                else:
                    issues.add(path, "MEDIA_NOT_READY", "This media item is not ready for content yet; read it "
                               "again until readiness.ready_for_content is true.", next_action="read_media_again")
        if not issues:
            _media_kinds(issues, draft, media, fields)
    return issues


def media_kind(m: Any) -> str:
    return m.kind or m.content_type.split("/", 1)[0]


def _media_kinds(issues: Issues, draft: Draft, media: dict[str, Any], fields: set[str] | None) -> None:
    pinterest = draft.settings.get("pinterest_settings")
    if pinterest is not None and (fields is None or "pinterest_settings" in fields) and pinterest.media_ids:
        kinds = [media_kind(media[m]) for m in pinterest.media_ids]
        path = "$.pinterest_settings"
        if "video" in kinds:
            if len(kinds) != 1:
                issues.add(f"{path}.media_ids", "MEDIA_KIND", "A video Pin takes exactly one video and no images.")
            elif pinterest.post_type != "PIN_VIDEO":
                issues.add(f"{path}.post_type", "POST_TYPE_MISMATCH", "The media is a video: use PIN_VIDEO.")
        elif any(k != "image" for k in kinds):
            issues.add(f"{path}.media_ids", "MEDIA_KIND", "Pins take 1 to 5 images, or one video.")
        elif pinterest.post_type != "PIN_IMAGE":
            issues.add(f"{path}.post_type", "POST_TYPE_MISMATCH", "The media are images: use PIN_IMAGE.")
    threads = draft.settings.get("threads_settings")
    if threads is not None and (fields is None or "threads_settings" in fields):
        want = {"TH_IMAGE": "image", "TH_VIDEO": "video"}.get(threads.post_type)
        for i, m in enumerate(threads.media_ids):
            kind = media_kind(media[m])
            if (want and kind != want) or kind not in ("image", "video"):
                issues.add(f"$.threads_settings.media_ids[{i}]", "MEDIA_KIND",
                           f"{threads.post_type} takes {want or 'images and videos'}; this media item is {kind}.")


def check(draft: Draft) -> None:
    shape_issues(draft).raise_if_any("MALFORMED_REQUEST")


async def check_data(session: AsyncSession, brand_id: str, draft: Draft, fields: set[str] | None = None) -> None:
    (await data_issues(session, brand_id, draft, fields)).raise_if_any()


# -- stored rows ----------------------------------------------------------------------------------------------

async def load_item(session: AsyncSession, brand_id: str, item_id: str) -> ContentItem:
    item = (await session.exec(select(ContentItem).where(ContentItem.id == item_id,
                                                         ContentItem.brand_id == brand_id))).first()
    if item is None:
        raise ApiError("CONTENT_ITEM_NOT_FOUND", "No content item of this brand has this ID, or it is not visible "
                                                 "to this API key; list_content_items shows the brand's items.")
    return item


# Built once: a list page asks for the labels of its items on every call.
_LABELS_OF = Query(select(ContentItemLabel.content_item_id, ContentItemLabel.label_id)
                      .where(col(ContentItemLabel.content_item_id).in_(bindparam("item_ids", expanding=True)))
                      .order_by(ContentItemLabel.label_id))


async def label_ids_of(session: AsyncSession, item_ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {i: [] for i in item_ids}
    if item_ids:
        rows = await _LABELS_OF.rows(session, {"item_ids": item_ids})
        for item_id, label_id in rows:
            out[item_id].append(label_id)
    return out


# An item's label IDs as one column of the item's own row (`string_agg` on PostgreSQL, `group_concat` on SQLite:
# SQLAlchemy's `aggregate_strings`), so a list page reads its items and their labels in one statement, from one
# snapshot, instead of a second select (four driver calls on SQLite; docs/decisions.md, "Public APIs, fewer
# statements"). IDs never hold a comma; `labels_of_column` splits and orders them as `label_ids_of` does.
# The separator is SQL text, not the `str` the function's signature names: SQLAlchemy renders a `str` separator
# into the SQL at every execution (a "post-compile" literal, which the statement cache cannot hold).
_COMMA: Any = literal_column("','")
LABEL_IDS_COLUMN = (select(func.aggregate_strings(col(ContentItemLabel.label_id), _COMMA))
                    .where(col(ContentItemLabel.content_item_id) == col(ContentItem.id))
                    .scalar_subquery().label("label_ids"))


def labels_of_column(value: str | None) -> list[str]:
    """`LABEL_IDS_COLUMN`'s text as the item's label IDs, in ID order."""
    return sorted(value.split(",")) if value else []


async def set_labels(session: AsyncSession, item: ContentItem, label_ids: list[str]) -> None:
    current = {r.label_id: r for r in (await session.exec(select(ContentItemLabel).where(
        ContentItemLabel.content_item_id == item.id))).all()}
    for label_id, row in current.items():
        if label_id not in label_ids:
            await session.delete(row)
    for label_id in label_ids:
        if label_id not in current:
            session.add(ContentItemLabel(content_item_id=item.id, label_id=label_id, brand_id=item.brand_id))
    await session.flush()


# -- public shapes --------------------------------------------------------------------------------------------

def _settings_out(item: ContentItem | SimpleNamespace) -> dict[str, Any]:
    """The five main settings always (null when unset); the others, and thread_parts, only when set."""
    out: dict[str, Any] = dict.fromkeys(MAIN_SETTINGS_KEYS)
    for key, value in item.settings.items():
        if value.get("thread_parts", ...) is None:
            value = {k: v for k, v in value.items() if k != "thread_parts"}
        out[key] = sc.SETTINGS_OUT[key].model_validate(value)
    return out


def released(item: ContentItem | SimpleNamespace, label_ids: list[str]) -> Any:
    return sc.ContentItem.model_validate({
        "id": item.id, "brand_id": item.brand_id, "name": item.name, "label_ids": label_ids,
        "thumbnail_media_id": item.thumbnail_media_id, "thumbnail_timestamp": item.thumbnail_timestamp,
        "intended_integration_ids": item.intended_integration_ids, "copy_mode": item.copy_mode,
        "single_copy": item.single_copy, "platform_copy": item.platform_copy, **_settings_out(item),
        "created_at": iso(item.created_at), "updated_at": iso(item.updated_at),
    })


def older(item: ContentItem | SimpleNamespace, label_ids: list[str]) -> Any:
    single = None if item.single_copy is None else {k: item.single_copy[k] for k in ("caption", "hashtags")}
    return sc.OlderContentItem.model_validate({
        "id": item.id, "brand_id": item.brand_id, "name": item.name, "created_by": item.created_by,
        "label_ids": label_ids, "thumbnail_timestamp": item.thumbnail_timestamp, "copy_mode": item.copy_mode,
        "single_copy": single, "platform_copy": item.platform_copy, **_settings_out(item),
        "created_at": iso(item.created_at), "updated_at": iso(item.updated_at),
    })


def caption_preview(item: ContentItem) -> str:
    """The single caption, or the first platform caption (registry order) of a per-platform item."""
    text = ""
    if item.copy_mode == "single":
        text = (item.single_copy or {}).get("caption", "")
    else:
        for key in PLATFORM_KEYS:
            text = ((item.platform_copy or {}).get(key) or {}).get("caption", "")
            if text:
                break
    return text if len(text) <= sc.PREVIEW_MAX else text[: sc.PREVIEW_MAX - 1] + "…"


def media_ids(item: ContentItem) -> list[str]:
    seen: dict[str, None] = {}
    settings = item.settings  # once: the list reads rows, whose attribute access is not free
    # the item's own settings keys in registry order (a loop over every registry key cost more than the rest)
    for key in _settings_in_order(settings):
        s = settings[key]
        if not s:
            continue
        seen.update(dict.fromkeys(s.get("media_ids") or []))
        for part in s.get("thread_parts") or []:
            seen.update(dict.fromkeys(part.get("media_ids") or []))
    return list(seen)


def platforms(item: ContentItem) -> list[str]:
    settings, copy = item.settings, item.platform_copy
    if type(settings) is not dict or not (copy is None or type(copy) is dict):
        return list(_platforms(settings, copy))
    key = (*settings, None, *(copy or ()))  # the keys are what decides (None: never a JSON object's key)
    found = _PLATFORMS_OF.get(key)
    if found is None:
        found = _platforms(settings, copy)  # raises as before for a settings key of no platform
        _remember(_PLATFORMS_OF, key, found)
    return list(found)


def _platforms(settings: Any, copy: Any) -> tuple[str, ...]:
    have = {PLATFORM_OF_SETTINGS[k] for k in settings} | set(copy or {})
    return tuple(sorted((k for k in have if k in _PLATFORM_ORDER), key=_PLATFORM_ORDER.__getitem__))  # registry order


def _settings_in_order(settings: Any) -> tuple[str, ...]:
    """The registry's settings keys among `settings`' keys, in registry order."""
    if type(settings) is not dict:
        return tuple(sorted((k for k in settings if k in _SETTINGS_ORDER), key=_SETTINGS_ORDER.__getitem__))
    key = tuple(settings)
    found = _SETTINGS_IN_ORDER.get(key)
    if found is None:
        found = tuple(sorted((k for k in key if k in _SETTINGS_ORDER), key=_SETTINGS_ORDER.__getitem__))
        _remember(_SETTINGS_IN_ORDER, key, found)
    return found


# A list page computes `platforms` and `media_ids` for each of its items, whose settings and per-platform copy
# come in a handful of key sets: what the keys decide (the platforms, the order of the settings to walk) is kept
# by key set, bounded (bench/HISTORY.md, "the content list, fifth pass").
_PLATFORMS_OF: dict[tuple[Any, ...], tuple[str, ...]] = {}
_SETTINGS_IN_ORDER: dict[tuple[Any, ...], tuple[str, ...]] = {}
_REMEMBERED = 512


def _remember(memo: dict[tuple[Any, ...], tuple[str, ...]], key: tuple[Any, ...], value: tuple[str, ...]) -> None:
    if len(memo) >= _REMEMBERED:
        memo.clear()
    memo[key] = value


def summary(item: Any, label_ids: list[str], self_link: Any) -> dict[str, Any]:
    """A list row (tools/content/routes.py `_LIST`: its times already `iso()` text) as the public summary;
    `self_link`: `links_to("get_content_item", "content_item_id", brand_id=...)` of the item's brand."""
    return {
        "id": item.id, "brand_id": item.brand_id, "name": item.name, "caption_preview": caption_preview(item),
        "copy_mode": item.copy_mode, "platforms": platforms(item), "media_ids": media_ids(item),
        "intended_integration_ids": item.intended_integration_ids, "label_ids": label_ids,
        "created_at": item.created_at, "updated_at": item.updated_at,
        "links": {"self": self_link(item.id)},
    }
