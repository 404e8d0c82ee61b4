"""The composer's preview cards: the review console's per-target cards (server/console/preview.py, counted by the
rules engine's own measure, so a card never disagrees with preflight), for a stored draft or an unsaved
composition. Media geometry and thumbnails come from the media rows, as the review pages read them.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from server.console import preview
from storage.tables.media import Media
from tools.media.items import asset_url
from tools.runtime import Runtime
from tools.schedules.preflight import media_facts

MAX_CARDS = 20  # one per chosen account (a post takes at most 20)
MAX_MEDIA = 100


async def preview_cards(rt: Runtime, brand_id: str, item: dict[str, Any], targets: list[dict[str, Any]],
                        media_ids: list[str], issues: list[dict[str, Any]]) -> list[Any]:
    """`item`: a content item in the API's shape (stored, or a create body with an `id`); `targets`: the chosen
    accounts (list_targets rows); `issues`: preflight's, placed next to the part they concern."""
    wanted = list(dict.fromkeys(media_ids))[:MAX_MEDIA]
    async with rt.db.session(write=False) as session:
        rows = (await session.exec(select(Media).where(Media.brand_id == brand_id, col(Media.id).in_(wanted)))).all() \
            if wanted else []
    thumbs = {m.id: url for m in rows if (url := asset_url(rt.settings, m.thumbnail_large_id or m.thumbnail_small_id))}
    try:
        return preview.cards(item, targets[:MAX_CARDS], media={m.id: media_facts(m) for m in rows}, issues=issues,
                             thumbs=thumbs)
    except ValueError:  # a composition the content model cannot read yet (the check panel says why)
        return []
