"""What the notifications page says about email: on or off for this service, the signed-in user's address and
effective preferences for the brand, and (to admins) the workspace's emails that could not be delivered."""

from __future__ import annotations

from typing import Any

from server.console.identity import SignedIn
from storage.tables.brands import Brand
from tools.events import mail_delivery
from tools.notifications import notify
from tools.runtime import Runtime


async def email_panel(rt: Runtime, me: SignedIn, brand: Brand) -> dict[str, Any]:
    async with rt.db.session(write=False) as session:
        prefs = (await notify.effective_preferences(session, brand.id, [me.user.id]))[me.user.id]
    failures = await mail_delivery.recent_failures(rt, me.user.workspace_id) if me.is_admin else []
    return {"enabled": mail_delivery.email_enabled(rt), "address": me.user.email, "preferences": prefs,
            "failures": [{"to": f.to_email, "subject": f.subject, "error": f.last_error, "created_at": f.created_at}
                         for f in failures]}
