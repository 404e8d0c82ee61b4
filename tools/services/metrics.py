"""Post metrics after an account is reconnected: readings stopped for a missing permission resume.

The metrics job (tools/analytics/collect.py) stops every post of an account whose network refused to share metrics
(`permission_missing`) and tells the brand's admins once. A reconnect is the repair: whatever it granted, the
readings are due again at once, and the notice is cleared (read, and no longer holding back a new one), so if the
network still refuses the admins hear it again. Shared because reconnects happen in tools/networks (real
accounts, CLI and console, OAuth callbacks) and tools/operator (a sandbox account's status), neither of which may
call into the analytics area.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import update
from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from providers.metrics import support
from storage.tables.analytics import PostMetricsState
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification


def permissions(platform: str, *, insights: bool = True) -> dict[str, bool]:
    """An account's `permissions` object (the spec leaves it platform-specific): `read_insights` is true where
    socialpub reads the platform's post metrics and the network has not refused them to this account."""
    return {"publish": True, "read_insights": insights and support(platform) is not None}


def with_insights(integration: Integration, insights: bool) -> None:
    """Set the account's `read_insights` (a new dict: the JSON column sees assignments, not edits in place)."""
    integration.permissions = {**(integration.permissions or permissions(integration.platform)),
                               "read_insights": insights and support(integration.platform) is not None}


def permission_notice_key(integration_id: str) -> str:
    """The dedupe key of the one "metrics need a permission" notice of an account."""
    return f"metrics_permission:{integration_id}"


async def resume_after_reconnect(session: AsyncSession, now: datetime, integration_id: str) -> int:
    """Make the account's posts stopped for a missing permission due now (one indexed update) and clear the
    notice. Returns how many posts resumed."""
    resumed = await session.exec(update(PostMetricsState)
                                 .where(col(PostMetricsState.integration_id) == integration_id,
                                        col(PostMetricsState.status) == "permission_missing")
                                 .values(status="collecting", next_due_at=now, failures=0, updated_at=now))
    integration = await session.get(Integration, integration_id)
    if integration is not None:
        with_insights(integration, True)
        session.add(integration)
    key = permission_notice_key(integration_id)
    await session.exec(update(Notification).where(col(Notification.dedupe_key) == key, col(Notification.read_at).is_(None))
                       .values(read_at=now))
    await session.exec(update(Notification).where(col(Notification.dedupe_key) == key)
                       .values(dedupe_key=f"{key}:cleared"))
    return int(resumed.rowcount or 0)
