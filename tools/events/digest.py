"""The `planner_review_reminders` digest: at most once a day per user, one email listing the held posts awaiting
review in the brands where that user's preference is on (brand override, else account default).

A worker tick looks every `LOOK_EVERY` (per process); a user who got a digest in the last 24 hours is skipped
(the digest's in-app notification carries the dedupe key). Two workers looking at the same moment may both write
one: the window is one transaction long, and the cost a second email.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import func
from sqlmodel import col, select

from storage.tables.accounts import User
from storage.tables.brands import Brand
from storage.tables.notifications import Notification
from storage.tables.publishing import Schedule
from tools.notifications import notify
from tools.runtime import Runtime

CATEGORY = "planner_review_reminders"
DEDUPE_KEY = "review_digest"
WINDOW = timedelta(hours=24)
LOOK_EVERY = timedelta(minutes=15)
MAX_BRANDS = 1000
_looked: dict[int, datetime] = {}


async def review_digest(rt: Runtime, owner: str, *, force: bool = False) -> int:
    """Tick: write the due digests (notification + outbox row, delivered by the mail tick); how many."""
    now = rt.clock.now()
    last = _looked.get(id(rt))
    if owner in rt.stopping or (not force and last is not None and now - last < LOOK_EVERY):
        return 0
    _looked[id(rt)] = now
    written = 0
    async with rt.db.session(write=True) as session:
        held = (await session.exec(
            select(Schedule.brand_id, func.count()).where(Schedule.status == "action_required",
                                                          Schedule.approval_status == "pending_review")
            .group_by(Schedule.brand_id).order_by(Schedule.brand_id).limit(MAX_BRANDS))).all()
        if not held:
            return 0
        counts = dict(held)
        brands = (await session.exec(select(Brand).where(col(Brand.id).in_(list(counts))).order_by(Brand.name))).all()
        by_workspace: dict[str, list[Brand]] = defaultdict(list)
        for brand in brands:
            by_workspace[brand.workspace_id].append(brand)
        for workspace_id, ws_brands in by_workspace.items():
            users = (await session.exec(select(User).where(User.workspace_id == workspace_id)
                                        .order_by(col(User.created_at), User.id).limit(notify.MAX_RECIPIENTS))).all()
            uids = [u.id for u in users]
            recent = set((await session.exec(select(Notification.user_id).where(
                col(Notification.user_id).in_(uids), Notification.dedupe_key == DEDUPE_KEY,
                Notification.created_at >= now - WINDOW))).all()) if uids else set()
            prefs = {b.id: await notify.effective_preferences(session, b.id, uids) for b in ws_brands}
            for user in users:
                if user.id in recent:
                    continue
                wanted = [b for b in ws_brands if prefs[b.id][user.id][CATEGORY]]
                if not wanted:
                    continue
                total = sum(counts[b.id] for b in wanted)
                listing = "; ".join(f"{b.name}: {counts[b.id]}" for b in wanted)
                result = await notify.notify(
                    session, now, wanted[0], "review_digest", CATEGORY,
                    f"{total} post{'s' if total != 1 else ''} awaiting review",
                    f"Held posts wait for someone with publishing permission to approve or reject them. {listing}.",
                    audience=[user.id], dedupe_key=DEDUPE_KEY, dedupe_window=WINDOW, digest=True,
                    link=notify.console_link(wanted[0].id, "calendar"))
                written += result.emails
    return written


async def review_digest_tick(rt: Runtime, owner: str) -> int:
    """The worker's tick: digests are notifications (like every other notify call, counted in /metrics), not items of
    the pass, whose count says what was published and which jobs ran (`worker --once` prints it)."""
    await review_digest(rt, owner)
    return 0


TICKS = [review_digest_tick]
