"""The content area's services for other areas: what they may do to content items without a route handler
(the admin content pipeline creates drafts; the publishing toolset's older routes create and list them)."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import insert
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from storage.statements import Write
from storage.tables.content import ContentItem, ContentItemLabel
from tools.content.rules import Draft, check, check_data

# A new item and its labels are written by Core inserts of plain values: building a SQLModel object and flushing
# it through the unit of work cost more than the rest of the create (bench/HISTORY.md, "Write latency").
# Built once, run through Core on the session's connection (storage/statements.py).
_INSERT_ITEM = Write(insert(ContentItem.__table__))  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it
_INSERT_LABELS = Write(insert(ContentItemLabel.__table__))  # pyright: ignore[reportAttributeAccessIssue]  # SQLModel sets __table__ on table classes; its types do not declare it


async def checked_item(session: Any, caller: Any, brand_id: str, req: Any, now: Any,
                       item_id: str | None = None) -> tuple[SimpleNamespace, Draft]:
    """A create request as the item it would make, checked exactly as a create checks it (400 and 422 rules),
    and not stored: a plain object with ContentItem's attributes (what `released` and `older` read). The
    console's live preflight (`preflight_unsaved`) checks a composition this way without writing it."""
    draft = Draft.from_request(req)
    check(draft)
    await check_data(session, brand_id, draft)
    item = SimpleNamespace(id=item_id or new_id("ci"), workspace_id=caller.workspace_id, brand_id=brand_id,
                           created_by=caller.user_id, name=req.name.strip(), created_at=now, updated_at=now)
    draft.apply(item)  # pyright: ignore[reportArgumentType]  # a namespace standing in for the row (duck-typed)
    return item, draft


async def insert_item(session: AsyncSession, *, workspace_id: str, user_id: str, brand_id: str,
                      now: datetime, req: Any) -> tuple[SimpleNamespace, Draft]:
    """Check and insert a draft from a create request (released or older shape), created by `user_id` in a
    brand of the workspace that the caller was already allowed to act on: the new item as a plain object with
    ContentItem's attributes (what `released` and `older` read). Raises ApiError as create_content_item answers."""
    item, draft = await checked_item(session, SimpleNamespace(workspace_id=workspace_id, user_id=user_id), brand_id,
                                     req, now)
    await _INSERT_ITEM.run(session, vars(item))
    if draft.label_ids:
        await _INSERT_LABELS.run_many(session, [{"content_item_id": item.id, "label_id": label_id,
                                                 "brand_id": item.brand_id} for label_id in draft.label_ids])
    return item, draft
