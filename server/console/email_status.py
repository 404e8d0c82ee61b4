"""What the notifications page says about email: on or off for this service, the signed-in user's address and
effective preferences for the brand, and (to admins) the workspace's emails that could not be delivered."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from server.console.identity import SignedIn
from storage.tables.accounts import User
from storage.tables.brands import Brand
from tools.events import mail_delivery
from tools.notifications import notify
from tools.runtime import Runtime

MAX_USERS = 200  # the per-user table an admin sees


async def email_panel(rt: Runtime, me: SignedIn, brand: Brand) -> dict[str, Any]:
    enabled = mail_delivery.email_enabled(rt)
    users: list[dict[str, Any]] = []
    async with rt.db.session(write=False) as session:
        prefs = (await notify.effective_preferences(session, brand.id, [me.user.id]))[me.user.id]
        if me.is_admin:  # per user: whether email reaches them, and which categories they turned off
            rows = (await session.exec(select(User).where(User.workspace_id == me.user.workspace_id)
                                       .order_by(col(User.created_at), User.id).limit(MAX_USERS))).all()
            every = await notify.effective_preferences(session, brand.id, [u.id for u in rows])
            users = [{"name": u.name, "email": u.email, "on": enabled and bool(u.email),
                      "off": [c for c, v in every[u.id].items() if not v]} for u in rows]
    failures = await mail_delivery.recent_failures(rt, me.user.workspace_id) if me.is_admin else []
    return {"enabled": enabled, "address": me.user.email, "preferences": prefs, "users": users,
            "failures": [{"to": f.to_email, "subject": f.subject, "error": f.last_error, "created_at": f.created_at}
                         for f in failures]}
