"""The analytics area's service to the publishing worker: start collecting a published post's metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from providers.metrics import support
from storage.tables.analytics import PostMetricsState
from tools.analytics.cadence import STEPS


def enroll(session: Any, *, publication_id: str, workspace_id: str, brand_id: str, integration_id: str,
           platform: str, post_id: str, publish_id: str | None, published_at: datetime) -> bool:
    """Start collecting a just-published post's metrics, if its network offers them. Added to `session` (the
    caller's transaction: the post is enrolled exactly when it is recorded as published)."""
    if support(platform) is None or not publish_id:
        return False
    session.add(PostMetricsState(
        publication_id=publication_id, workspace_id=workspace_id, brand_id=brand_id, integration_id=integration_id,
        platform=platform, post_id=post_id, publish_id=publish_id, published_at=published_at,
        next_due_at=published_at + STEPS[0], created_at=published_at, updated_at=published_at))
    return True
