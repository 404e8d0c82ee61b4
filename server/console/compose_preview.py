"""Per-platform preview cards of a composition: the text each account would post (the same `compose_text` and
counters preflight uses), its media and thread parts. Presentation only: whether the post can go out is
preflight's answer, shown beside the cards. One function, `preview_cards`, so a richer preview module can
replace it without touching the composer.
"""

from __future__ import annotations

from typing import Any

from schemas.platforms import BY_KEY
from schemas.textcount import compose_text, count

MAX_CARDS = 20  # one per chosen account (a post takes at most 20)
MAX_THUMBS = 4


def _limit(platform: str, post_type: str | None) -> tuple[int, str] | None:
    p = BY_KEY.get(platform)
    if p is None:
        return None
    for limit in p.rules.text:
        if limit.field == "caption" and (limit.post_types is None or post_type in limit.post_types):
            return limit.max, limit.counting
    return None


def preview_cards(item: dict[str, Any], targets: list[dict[str, Any]],
                  media: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`item`: a content item (stored, or a create body); `targets`: the chosen accounts (list_targets rows);
    `media`: media items the item may refer to. One card per account."""
    by_id = {m["id"]: m for m in media}
    cards = []
    for t in targets[:MAX_CARDS]:
        platform = t["platform"]
        p = BY_KEY.get(platform)
        settings = (item.get(p.settings_key) if p and p.settings_key else None) or {}
        if item.get("copy_mode") == "per_platform":
            copy = (item.get("platform_copy") or {}).get(platform) or {}
        else:
            copy = item.get("single_copy") or {}
        text = compose_text(copy.get("caption") or "", tuple(copy.get("hashtags") or ()))
        post_type = settings.get("post_type") or (p.default_post_type if p else None)
        limit = _limit(platform, post_type)
        used = count(text, limit[1]) if limit else len(text)
        thumbs = [by_id[m] for m in (settings.get("media_ids") or [])[:MAX_THUMBS] if m in by_id]
        cards.append({
            "platform": platform, "platform_name": p.display_name if p else platform,
            "account": t.get("display_name") or t.get("username") or t["integration_id"],
            "title": copy.get("title"), "text": text, "used": used, "max": limit[0] if limit else None,
            "over": bool(limit and used > limit[0]), "post_type": post_type, "media": thumbs,
            "more_media": max(0, len(settings.get("media_ids") or []) - len(thumbs)),
            "parts": [part.get("text", "") for part in (settings.get("thread_parts") or [])][:25],
        })
    return cards
