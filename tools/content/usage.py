"""Is a content item in use? The extension point between drafts and the areas that use them.

Drafts can be edited, deleted and have their TikTok privacy changed only while nothing uses them. What uses
them lives in other areas' tables (Schedules and publish runs, queues, publications), so those areas declare
a probe, listed as `usage_probes` of their entry in tools/areas.py, instead of this area reading their tables:

    async def schedule_usage(session, brand_id, content_item_ids):
        ...  # one query, filtered by brand_id and content_item_ids
        return {content_item_id: {"scheduled"}, ...}

A probe returns, for each item that is in use, the set of states it is in; items not in use may be left out.
Report "scheduled" for a live Schedule or publish run (held for review or approved; not cancelled or
deleted), "queued" for an item in a queue's content_item_ids, "published" once any publication exists
(processing, published or failed), "publishing" while a run is executing. Any state at all, including one
not listed here, makes the item "in use": the check fails closed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping

from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.errors import ApiError
from tools import catalogue

UsageProbe = Callable[[AsyncSession, str, list[str]], Awaitable[Mapping[str, Iterable[str]]]]



async def usage(session: AsyncSession, brand_id: str, content_item_ids: Iterable[str]) -> dict[str, set[str]]:
    """States of every given item that is in use (items not in use are absent)."""
    ids = sorted(set(content_item_ids))
    found: dict[str, set[str]] = {}
    if not ids:
        return found
    for probe in catalogue.usage_probes():
        for item_id, states in (await probe(session, brand_id, ids)).items():
            states = set(states)
            if item_id in ids and states:
                found.setdefault(item_id, set()).update(states)
    return found


async def require_unused(session: AsyncSession, brand_id: str, content_item_id: str, *, action: str) -> None:
    """409 CONFLICT when the item is scheduled, queued, publishing or published."""
    states = (await usage(session, brand_id, [content_item_id])).get(content_item_id)
    if states:
        listed = ", ".join(sorted(states))
        raise ApiError(
            "CONFLICT", f"This content item is in use ({listed}), so it cannot be {action} here.",
            details={"usage": sorted(states)}, next_action="list_schedules",
            repair_guidance="Cancel or move its Schedule to drafts (move_schedule_to_draft), or remove it from its "
                            "queue, then retry; published content cannot be changed here.")
