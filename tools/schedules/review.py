"""What a reviewer's rejection leaves behind: the reason on the Schedule and a notification to its author.

The console rejects a held Schedule with the API's own `cancel_schedule` (its authority, conflicts and
idempotency); this then records why, in the same words for the author (get_schedule's blocking_reason, which
agents read) and in the author's notification channel (in-app, and email per their preferences).
"""

from __future__ import annotations

from datetime import datetime

from sqlmodel.ext.asyncio.session import AsyncSession

from storage.tables.brands import Brand
from storage.tables.content import ContentItem
from storage.tables.publishing import Schedule
from tools.notifications.notify import notify
from tools.schedules.rows import BLOCKING_REASONS

REASON_MAX = 1000  # characters; the notification message holds it with the post's name


async def record_rejection(session: AsyncSession, now: datetime, brand: Brand, schedule_id: str, reason: str,
                           reviewer: str) -> None:
    """On a Schedule `cancel_schedule` has just cancelled: approval `rejected`, the reason as its
    blocking_reason, and a `post_rejected` notification to the user whose key created it."""
    row = await session.get(Schedule, schedule_id)
    if row is None or row.brand_id != brand.id or row.status != "cancelled":
        raise ValueError("only a cancelled Schedule of this brand records a rejection")
    reason = " ".join(reason.split())[:REASON_MAX]
    row.approval_status = "rejected"
    row.blocking_reason = {"code": BLOCKING_REASONS["rejected"]["code"],
                           "message": f"Rejected in review by {reviewer}: {reason}",
                           "repair_guidance": BLOCKING_REASONS["rejected"]["repair_guidance"]}
    row.updated_at = now
    session.add(row)
    item = await session.get(ContentItem, row.content_item_id)
    name = (item.name if item is not None else None) or row.content_item_id
    await notify(session, now, brand, "post_rejected", "planner_action_required", f"Post rejected: {name}",
                 f"{reviewer} rejected “{name}” in review: {reason}", audience=[row.created_by])
    await session.flush()
