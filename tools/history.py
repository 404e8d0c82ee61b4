"""History (published-post list with safe links) and the publication records it reads; the older page/limit list
of publications is the publishing toolset's (tools/publishing/older.py).

Both read the Publication rows the publish worker writes, one per target of a run. Neither calls a provider
nor fetches engagement data. A failure is described by `tools.services.redaction.safe_failure` from the target's
error kind; a History link is shown only for a published post, only as a plain http(s) URL, and not after
provider cleanup removed the post.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import history as out
from schemas.history import ListHistoryRequest
from schemas.time import iso
from storage.pagination import older_page_of_ids, sort_order
from storage.tables.publishing import Publication, PublishTarget
from tools.endpoint import Call, Endpoint
from tools.services.redaction import safe_failure, safe_permalink


async def publication_targets(session: AsyncSession, brand_id: str,
                              rows: list[Publication]) -> dict[str, PublishTarget]:
    """The run targets behind a page of publications (error kind, cleanup state), in one bounded query. A service
    of this area: the publishing toolset's older list (tools/publishing/older.py) reads it too."""
    ids = [r.target_id for r in rows]
    if not ids:
        return {}
    found = (await session.exec(select(PublishTarget).where(col(PublishTarget.id).in_(ids),
                                                             PublishTarget.brand_id == brand_id))).all()
    return {t.id: t for t in found}


def _failure(p: Publication, target: PublishTarget | None) -> str | None:
    reason, _ = safe_failure(target.error_kind if target else None, p.failure_reason, p.status)
    return reason


def _source(value: str | None) -> str | None:
    """Spec: calendar or queue, or null. A queue slot's Schedule is `queue`; every other Schedule is on the
    calendar (api, publish-run and Autopilot schedules alike)."""
    if value is None:
        return None
    return "queue" if value == "queue" else "calendar"


def publication_out(p: Publication, target: PublishTarget | None) -> dict[str, Any]:
    return {"id": p.id, "platform": p.platform, "post_id": p.post_id, "post_name": p.post_name,
            "post_type": p.post_type, "media_type": p.media_type, "status": p.status, "source": _source(p.source),
            "failure_reason": _failure(p, target), "integration_id": p.integration_id,
            "publish_id": p.publish_id if p.status == "published" else None, "published_at": iso(p.published_at),
            "created_at": iso(p.created_at), "updated_at": iso(p.updated_at)}


def history_item(p: Publication, target: PublishTarget | None) -> dict[str, Any]:
    removed = target is not None and target.cleanup_status == "done"
    permalink = safe_permalink(p.permalink_url) if p.status == "published" and not removed else None
    return {"id": p.id, "platform": p.platform, "integration_id": p.integration_id, "post_id": p.post_id,
            "post_name": p.post_name, "post_type": p.post_type, "media_type": p.media_type, "status": p.status,
            "failure_reason": _failure(p, target), "permalink_url": permalink, "published_at": iso(p.published_at),
            "created_at": iso(p.created_at), "updated_at": iso(p.updated_at)}


async def list_history(call: Call, req: ListHistoryRequest) -> out.HistoryPage:
    order = sort_order(Publication.created_at, Publication.id, "desc")
    rows, pagination = await older_page_of_ids(call.session, Publication, Publication.id,
                                               (Publication.brand_id == call.brand_id,), order, req.page, req.limit)
    targets = await publication_targets(call.session, call.brand_id, rows)
    return out.HistoryPage.model_validate({"items": [history_item(r, targets.get(r.target_id)) for r in rows],
                                           "has_more": pagination["has_more"]})


ENDPOINTS = [
    Endpoint(
        name="list_history", method="GET", path="/v1/brands/{brand_id}/history", toolset="history",
        handler=list_history, request=ListHistoryRequest, response=out.HistoryPage, scopes=("publications:read",),
        title="List publication history",
        summary="List a brand's publication history, newest first, with a public permalink for "
                "published posts.",
        guidance="Read-only; calls no provider.",
    ),
]
