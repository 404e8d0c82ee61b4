"""Per-target preview cards: a content item draft as each network will show it.

    cards(item, targets, media=..., issues=..., thumbs=...) -> list[Card]

`item` is a content item in the API's JSON shape (get_content_item, or a composer's unsaved draft with an `id`);
`targets` are target rows as `list_targets` returns them (`integration_id`, `platform`, `display_name`,
`username`, `connection_status`, optionally `text_max`); `media` maps media IDs to `MediaFacts` (or dicts of its
fields); `issues` are preflight issues (the API's dicts) to place next to the field they concern; `thumbs` maps
media IDs to thumbnail URLs.

Counts are preflight's own: `rules_engine.measure` runs the very checks `evaluate` runs and returns what they
counted, so a card can never show a number preflight would not. Cards hold plain strings; the template
escapes them (nothing here builds HTML).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from schemas.platforms import BY_KEY
from schemas.preflight import ContentFacts, IntegrationFacts, MediaFacts, PreflightFacts
from schemas.textcount import COUNTING_DESCRIPTIONS, compose_text, find_hashtags, find_mentions, find_urls
from tools.schedules.rules_engine import Measure, measure

# How a network shows what it does not make a link (presentation only, not a publishing rule): Instagram and
# TikTok captions never make URLs clickable; Telegram, Discord and the others do.
PLAIN_LINKS = frozenset({"instagram", "tiktok"})
# Networks whose hashtags are not links in the post (shown as plain words).
PLAIN_HASHTAGS = frozenset({"discord", "telegram", "google_business"})


@dataclass(frozen=True)
class Segment:
    kind: str  # text | link | hashtag | mention
    text: str
    href: str | None = None  # for a link the network makes clickable; never rendered for another scheme


@dataclass
class MediaCard:
    media_id: str
    kind: str | None
    thumb: str | None
    size: str | None  # "1080×1350"
    verdict: str  # what the network will do with it, in a sentence
    refused: bool = False
    issues: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Part:
    """The main post or one reply of the chain (a thread part, the Threads follow-up reply)."""

    label: str
    field_path: str
    segments: list[Segment]
    counts: list[Measure] = field(default_factory=list)
    media: list[MediaCard] = field(default_factory=list)
    issues: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Card:
    integration_id: str
    platform: str
    platform_name: str
    display_name: str
    username: str | None
    post_type: str | None
    title: str | None
    parts: list[Part]
    issues: list[dict[str, Any]]  # issues of this target not shown next to a part (settings, connection)
    counts_how: dict[str, str]  # counting method -> one sentence

    @property
    def blocked(self) -> bool:
        return any(i.get("severity") == "blocker" for i in self.all_issues())

    def all_issues(self) -> list[dict[str, Any]]:
        return [*self.issues, *(i for p in self.parts for i in p.issues),
                *(i for p in self.parts for m in p.media for i in m.issues)]


def _spans(text: str, found: Sequence[str], kind: str) -> list[tuple[int, int, str]]:
    """Where each of `found` (in order, as textcount found them) sits in `text`."""
    out, pos = [], 0
    for word in found:
        at = text.find(word, pos)
        if at < 0:
            continue
        out.append((at, at + len(word), kind))
        pos = at + len(word)
    return out


def segments(text: str, platform: str) -> list[Segment]:
    """`text` split into plain text, links, hashtags and mentions, found by preflight's own finders
    (schemas.textcount), marked up the way the network shows them."""
    links = _spans(text, find_urls(text), "link")
    taken = [(a, b) for a, b, _ in links]
    words = [s for s in _spans(text, [f"#{h}" for h in find_hashtags(text)], "hashtag")
             + _spans(text, find_mentions(text), "mention") if not any(a <= s[0] < b for a, b in taken)]
    out: list[Segment] = []
    pos = 0
    for a, b, kind in sorted(links + words):
        if a < pos:
            continue
        if a > pos:
            out.append(Segment("text", text[pos:a]))
        word = text[a:b]
        if kind == "link" and platform not in PLAIN_LINKS:
            href = word if word.lower().startswith(("http://", "https://")) else f"https://{word}"
            out.append(Segment("link", word, href))
        elif (kind == "hashtag" and platform in PLAIN_HASHTAGS) or kind == "link":
            out.append(Segment("text", word))
        else:
            out.append(Segment(kind, word))
        pos = b
    if pos < len(text):
        out.append(Segment("text", text[pos:]))
    return out


def _media_facts(value: MediaFacts | Mapping[str, Any]) -> MediaFacts:
    return value if isinstance(value, MediaFacts) else MediaFacts.model_validate(value)


def _at(issues: Sequence[Mapping[str, Any]], path: str) -> list[dict[str, Any]]:
    return [dict(i) for i in issues if i.get("field_path") == path or str(i.get("field_path", "")).startswith(
        (path + ".", path + "["))]


def _verdict(m: MediaFacts | None, issues: list[dict[str, Any]], platform_name: str) -> tuple[str, bool]:
    blockers = [i for i in issues if i.get("severity") == "blocker"]
    if m is None:
        return "Not a media item of this brand: the post cannot carry it.", True
    if blockers:
        options = [o for i in blockers for o in (i.get("repair_options") or []) if o.get("available")]
        fixes = "; ".join(
            f"a centre crop to {o['target']['width']}×{o['target']['height']} "
            f"(cuts {round(100 * (o.get('crop_loss') or 0))}%)" if o["mode"] == "centre_crop" else
            f"padding to {o['target']['width']}×{o['target']['height']} "
            f"({round(100 * (o.get('pad_share') or 0))}% border)" for o in options if o.get("target"))
        text = f"{platform_name} refuses it as it is."
        return (text + (f" A derivative would fit: {fixes}." if fixes else "")), True
    size = f"{m.width}×{m.height}" if m.width and m.height else None
    return (f"{platform_name} takes it as it is" + (f" ({size})." if size else ".")), False


def _media(ids: Sequence[str], base: str, media: Mapping[str, MediaFacts], issues: Sequence[Mapping[str, Any]],
           thumbs: Mapping[str, str], platform_name: str) -> list[MediaCard]:
    out = []
    for i, mid in enumerate(ids):
        m = media.get(mid)
        own = _at(issues, f"{base}[{i}]")
        verdict, refused = _verdict(m, own, platform_name)
        out.append(MediaCard(media_id=mid, kind=m.kind if m else None, thumb=thumbs.get(mid),
                             size=f"{m.width}×{m.height}" if m and m.width and m.height else None,
                             verdict=verdict, refused=refused, issues=own))
    return out


def _taker(mine: Sequence[Mapping[str, Any]], used: set[str]) -> Any:
    """Issues at a path, remembering the path as shown (the rest are listed on the card as a whole)."""
    def take(path: str) -> list[dict[str, Any]]:
        used.add(path)
        return _at(mine, path)
    return take


def cards(item: Mapping[str, Any], targets: Sequence[Mapping[str, Any]],
          media: Mapping[str, MediaFacts | Mapping[str, Any]] | None = None,
          issues: Sequence[Mapping[str, Any]] = (), thumbs: Mapping[str, str] | None = None) -> list[Card]:
    """One card per target, in the order given."""
    content = ContentFacts.from_content_item(item)
    facts_media = {k: _media_facts(v) for k, v in (media or {}).items()}
    thumbs = thumbs or {}
    integrations = {t["integration_id"]: IntegrationFacts(
        id=t["integration_id"], platform=t["platform"], status=t.get("connection_status") or "connected",
        display_name=t.get("display_name"), text_max=t.get("text_max")) for t in targets}
    facts = PreflightFacts(content=content, integration_ids=tuple(integrations), integrations=integrations,
                           media=facts_media, now=datetime.now(UTC))
    counted = measure(facts)
    out: list[Card] = []
    for t in targets:
        iid, platform = t["integration_id"], t["platform"]
        p = BY_KEY.get(platform)
        name = p.display_name if p else platform
        mine = [i for i in issues if i.get("integration_id") == iid]
        settings = content.settings.get(platform) if p and p.settings_key else None
        sk = p.settings_key if p else None
        copy = ((content.platform_copy or {}).get(platform) if content.copy_mode == "per_platform"
                else content.single_copy)
        copy_path = f"$.platform_copy.{platform}" if content.copy_mode == "per_platform" else "$.single_copy"
        body = compose_text(copy.caption if copy else None, tuple(copy.hashtags) if copy else ())
        body_path = f"{copy_path}.caption"
        description = getattr(settings, "description", None)
        if description and p and p.rules.text_limit("description", getattr(settings, "post_type", None)
                                                     or p.default_post_type or ""):
            body, body_path = description, f"$.{sk}.description"
        measures = counted.get(iid, [])
        used: set[str] = set()
        take = _taker(mine, used)
        main_issues = take(body_path) + (take(f"{copy_path}.hashtags") if copy and copy.hashtags else [])
        media_path = f"$.{sk}.media_ids"
        main = Part(label="Post", field_path=body_path, segments=segments(body, platform),
                    counts=[m for m in measures if m.field_path == body_path], issues=main_issues,
                    media=_media(list(getattr(settings, "media_ids", []) or []), media_path, facts_media, mine,
                                 thumbs, name))
        used.add(media_path)
        parts = [main]
        for n, part in enumerate(getattr(settings, "thread_parts", None) or []):
            path = f"$.{sk}.thread_parts[{n}]"
            parts.append(Part(label=f"Reply {n + 1}", field_path=f"{path}.text", segments=segments(part.text, platform),
                              counts=[m for m in measures if m.field_path == f"{path}.text"],
                              issues=take(f"{path}.text"),
                              media=_media(list(getattr(part, "media_ids", []) or []), f"{path}.media_ids",
                                           facts_media, mine, thumbs, name)))
            used.add(f"{path}.media_ids")
        reply = getattr(settings, "follow_up_reply", None)
        if reply is not None:
            path = f"$.{sk}.follow_up_reply.text"
            parts.append(Part(label="Follow-up reply", field_path=path, segments=segments(reply.text, platform),
                              counts=[m for m in measures if m.field_path == path], issues=take(path)))
        title = getattr(settings, "title", None) or (copy.title if copy else None)
        rest = [dict(i) for i in mine if not any(
            i.get("field_path") == u or str(i.get("field_path", "")).startswith((u + ".", u + "[")) for u in used)]
        how = {m.counting: COUNTING_DESCRIPTIONS[m.counting] for m in measures}
        out.append(Card(integration_id=iid, platform=platform, platform_name=name,
                        display_name=t.get("display_name") or iid, username=t.get("username"),
                        post_type=getattr(settings, "post_type", None) or (p.default_post_type if p else None),
                        title=title, parts=parts, issues=rest, counts_how=how))
    return out
