"""The analytics area's service to the publishing worker: start collecting a published post's metrics."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from providers.metrics import support
from storage.tables.analytics import PostMetricsState
from tools.analytics.cadence import STEPS

POST_METRICS = PostMetricsState.__table__  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it


def enrollment(*, publication_id: str, workspace_id: str, brand_id: str, integration_id: str, platform: str,
               post_id: str, publish_id: str | None, published_at: datetime) -> dict[str, Any] | None:
    """The `POST_METRICS` row that starts collecting a just-published post's metrics, or None when its network
    offers none. The caller inserts it in the transaction that records the post as published (enrolled exactly
    then); columns left out take the table's defaults (collecting, step 0, no readings). Plain values, not a
    model: the worker inserts a group's rows in one Core statement."""
    if support(platform) is None or not publish_id:
        return None
    return {"publication_id": publication_id, "workspace_id": workspace_id, "brand_id": brand_id,
            "integration_id": integration_id, "platform": platform, "post_id": post_id, "publish_id": publish_id,
            "published_at": published_at, "next_due_at": published_at + STEPS[0], "created_at": published_at,
            "updated_at": published_at}
