"""A Schedule's post as it will appear, for the review queue and the schedule page: the content item, each
target's account, media thumbnails, the time in the brand's zone, who created it, preflight as if approved now,
and the per-target preview cards (server/console/preview.py).

Reads the API offers go through the dispatcher as the signed-in user (`Console.api`); the few facts it does not
offer (the creating user and key's names, media geometry for the preview, an account's own text limit) are read
from the tables, with preflight's own fact builders.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlmodel import col, select

from schemas.platforms import BY_KEY, SETTINGS_KEYS
from server.console import preview
from server.console.identity import SignedIn
from server.console.pages.shared import Console
from server.console.web import ConsoleError
from storage.tables.accounts import ApiKey, User
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.media import Media
from storage.tables.publishing import Schedule
from tools.media.items import asset_url
from tools.schedules.preflight import media_facts, text_max_of
from tools.schedules.rows import is_held

MEDIA_MAX = 100  # media items read for one post


def local_time(at: str, tz_name: str | None) -> tuple[str, str]:
    """(brand-local text, UTC text) of an API timestamp."""
    moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    tz = ZoneInfo(tz_name or "UTC")
    return (moment.astimezone(tz).strftime("%a %d %b %Y, %H:%M ") + (tz_name or "UTC"),
            moment.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%d %H:%M UTC"))


async def creator(c: Console, schedule_id: str) -> str:
    """Who created the Schedule: the key's name and its owner's name."""
    async with c.rt.db.session(write=False) as session:
        row = await session.get(Schedule, schedule_id)
        if row is None:
            return "unknown"
        key = await session.get(ApiKey, row.created_by_key) if row.created_by_key else None
        user = await session.get(User, row.created_by)
    who = user.name if user is not None else None
    if key is not None and key.name.startswith("Console: "):
        return f"{who or key.name.removeprefix('Console: ')} (in the console)"
    if key is not None:
        return f"the API key “{key.name}”" + (f" of {who}" if who else "")
    return who or "unknown"


async def post_view(c: Console, me: SignedIn, brand: Brand, s: dict[str, Any], *,
                    with_preflight: bool = True) -> dict[str, Any]:
    """Everything the templates show of Schedule `s` (an API payload)."""
    item = (await c.api(me, "get_content_item", brand_id=brand.id, content_item_id=s["content_item_id"]))[
        "content_item"]
    listed = {t["integration_id"]: t for t in (await c.api(me, "list_targets", brand_id=brand.id))["targets"]
              if t.get("integration_id")}
    async with c.rt.db.session(write=False) as session:
        rows = {i.id: i for i in (await session.exec(select(Integration).where(
            Integration.brand_id == brand.id, col(Integration.id).in_(s["integration_ids"])))).all()}
        wanted = _media_ids(item)[:MEDIA_MAX]
        media = (await session.exec(select(Media).where(Media.brand_id == brand.id, col(Media.id).in_(wanted)))).all() \
            if wanted else []
    targets = []
    for iid in s["integration_ids"]:
        row = listed.get(iid) or {"integration_id": iid, "platform": rows[iid].platform if iid in rows else "unknown",
                                  "display_name": None, "connection_status": "disconnected"}
        targets.append({**row, "text_max": text_max_of(rows[iid]) if iid in rows else None})
    thumbs = {m.id: url for m in media
              if (url := asset_url(c.rt.settings, m.thumbnail_large_id or m.thumbnail_small_id))}
    executed = s.get("latest_execution") is not None
    preflight, preflight_error = None, None
    if with_preflight and not executed and s["status"] != "cancelled":
        try:
            preflight = await c.api(me, "preflight_content", brand_id=brand.id, content_item_id=s["content_item_id"],
                                    integration_ids=s["integration_ids"], scheduled_at=s["scheduled_at"],
                                    approval_status="approved")
        except ConsoleError as exc:
            preflight_error = exc.message
    issues = (preflight or {}).get("issues") or []
    cards = preview.cards(item, targets, media={m.id: media_facts(m) for m in media}, issues=issues, thumbs=thumbs)
    local, utc = local_time(s["scheduled_at"], brand.timezone)
    target_ids = set(s["integration_ids"])
    return {"s": s, "item": item, "targets": targets, "cards": cards, "local_time": local, "utc_time": utc,
            "created_by": await creator(c, s["id"]), "preflight": preflight, "preflight_error": preflight_error,
            "request_issues": [i for i in issues if not i.get("integration_id") or i["integration_id"] not in
                               target_ids],
            "held": is_held(s["status"], s["approval_status"]), "executed": executed,
            "copies": _copies(item)}


def _media_ids(item: dict[str, Any]) -> list[str]:
    """Media the item's settings objects name (main post and thread parts), in order, once each."""
    seen: dict[str, None] = {}
    for key in SETTINGS_KEYS:
        settings = item.get(key) or {}
        seen.update(dict.fromkeys(settings.get("media_ids") or []))
        for part in settings.get("thread_parts") or []:
            seen.update(dict.fromkeys(part.get("media_ids") or []))
    return list(seen)


def _copies(item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(label, copy) pairs: the single copy, or each platform's copy."""
    if item.get("copy_mode") == "per_platform":
        return [(BY_KEY[k].display_name if k in BY_KEY else k, v) for k, v in (item.get("platform_copy") or {}).items()
                if v]
    return [("All networks", item["single_copy"])] if item.get("single_copy") else []
