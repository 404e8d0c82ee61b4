"""Publications (older page/limit list of delivery records) and History (published-post list with safe links).

Both read the Publication rows the publish worker writes, one per target of a run. Neither calls a provider
nor fetches engagement data. A failure is described by `tools.services.redaction.safe_failure` from the target's
error kind; a History link is shown only for a published post, only as a plain http(s) URL, and not after
provider cleanup removed the post.
"""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from schemas import history as out
from schemas.history import ListHistoryRequest, ListPublicationsRequest
from schemas.time import iso
from storage.pagination import older_page, sort_order
from storage.tables.publishing import Publication, PublishTarget
from tools.endpoint import Call, Endpoint, Reply
from tools.services.redaction import safe_failure, safe_permalink


async def _targets(call: Call, rows: list[Publication]) -> dict[str, PublishTarget]:
    """The run targets behind a page of publications (error kind, cleanup state), in one bounded query."""
    ids = [r.target_id for r in rows]
    if not ids:
        return {}
    found = (await call.session.exec(select(PublishTarget).where(col(PublishTarget.id).in_(ids),
                                                                  PublishTarget.brand_id == call.brand_id))).all()
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


async def list_publications(call: Call, req: ListPublicationsRequest) -> Reply[list[out.Publication]]:
    order = sort_order(getattr(Publication, req.sort_by), Publication.id, req.sort_dir)
    rows, pagination = await older_page(
        call.session, select(Publication).where(Publication.brand_id == call.brand_id).order_by(*order),
        req.page, req.limit)
    targets = await _targets(call, rows)
    return Reply(data=[out.Publication.model_validate(publication_out(r, targets.get(r.target_id))) for r in rows],
                 pagination=pagination)


async def list_history(call: Call, req: ListHistoryRequest) -> out.HistoryPage:
    order = sort_order(Publication.created_at, Publication.id, "desc")
    rows, pagination = await older_page(
        call.session, select(Publication).where(Publication.brand_id == call.brand_id).order_by(*order),
        req.page, req.limit)
    targets = await _targets(call, rows)
    return out.HistoryPage.model_validate({"items": [history_item(r, targets.get(r.target_id)) for r in rows],
                                           "has_more": pagination["has_more"]})


ENDPOINTS = [
    Endpoint(
        name="list_publications", method="GET", path="/v1/brands/{brand_id}/publications", toolset="publishing",
        handler=list_publications, request=ListPublicationsRequest, response=out.Publication, list_shape="older",
        scopes=("publications:read",), title="List publications",
        summary="List a brand's publication records (one per target of each publish run) in the older page/limit "
                "shape, newest first by default.",
        guidance="Read-only; calls no provider. status is processing, published or failed; failure_reason is safe "
                 "text. For public post links use list_history; for one Schedule's latest run use "
                 "get_schedule_receipt.",
    ),
    Endpoint(
        name="list_history", method="GET", path="/v1/brands/{brand_id}/history", toolset="history",
        handler=list_history, request=ListHistoryRequest, response=out.HistoryPage, scopes=("publications:read",),
        title="List publication history",
        summary="List a brand's publication history, newest first, with a public permalink for "
                "published posts.",
        guidance="Read-only; calls no provider.",
    ),
]
