"""The labels discovery list: every label of a brand by name (posts:read), for tagging drafts. The labels
themselves are the labels area's (tools/labels.py); this is the content toolset's read of them."""

from __future__ import annotations

from schemas import library as sl
from schemas.library import ListLabelsRequest
from tools.endpoint import Call, Endpoint
from tools.labels import LABELS_PATH, brand_labels


async def list_labels(call: Call, req: ListLabelsRequest) -> sl.LabelList:
    rows = await brand_labels(call.session, call.brand_id)
    return sl.LabelList(items=[sl.LabelRef(id=r.id, name=r.name, color=r.color) for r in rows])


ENDPOINTS = [
    Endpoint(
        name="list_labels", method="GET", path=LABELS_PATH, toolset="content", handler=list_labels,
        request=ListLabelsRequest, response=sl.LabelList, scopes=("posts:read",), title="List labels",
        summary="List every label of a brand (id, name, colour), sorted by name, for tagging drafts.",
        guidance="Read-only. Use a label's id in create_content_item label_ids or as list_drafts label.",
    ),
]
