"""Seeding publish runs as the worker leaves them: a Schedule (tools.schedules.rows.new_schedule), one
PublishExecution, one PublishTarget per target and a Publication per settled target."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from schemas.ids import new_id
from storage.tables.content import ContentItem
from storage.tables.publishing import Publication, PublishExecution, PublishTarget, Schedule
from tools.schedules.rows import new_schedule

# Text a provider might say; it must never reach a client.
PROVIDER_TEXT = "upstream said: token abc123 invalid for page 998877"

PUBLISHED = {"state": "published"}
FAILED = {"state": "failed", "error_kind": "rejected", "failure_reason": PROVIDER_TEXT}
ACTION_REQUIRED = {"state": "action_required", "error_kind": "reauth_required", "failure_reason": PROVIDER_TEXT}


async def content_item(env: Any, brand: Any, name: str = "Spring launch") -> str:
    async with env.db.session(write=True) as s:
        item = ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id, created_by="usr_x",
                           name=name, single_copy={"caption": "Hello", "hashtags": [], "title": None}, settings={},
                           intended_integration_ids=[], created_at=env.clock.now(), updated_at=env.clock.now())
        s.add(item)
    return item.id


async def schedule(env: Any, brand: Any, integrations: list[Any], secret: str, *, item_id: str | None = None,
                   source: str = "api") -> Schedule:
    key = env.key_row(secret)
    item_id = item_id or await content_item(env, brand)
    async with env.db.session(write=True) as s:
        return new_schedule(s, brand=brand, content_item_id=item_id,
                            integration_ids=sorted(i.id for i in integrations),
                            scheduled_at=env.clock.now() + timedelta(hours=1), approval_status="approved",
                            source=source, user_id=key.user_id, key_id=key.id, now=env.clock.now())


async def run(env: Any, sched: Schedule, outcomes: list[tuple[Any, dict[str, Any]]], *,
              finished: bool = True, post_name: str | None = "Spring launch") -> dict[str, Any]:
    """One run of `sched`; `outcomes` pairs an Integration with its target fields (state, error_kind, ...).
    Returns {"execution": ..., "targets": {integration_id: target}, "publications": {integration_id: pub}}."""
    now = env.clock.now()
    states = [o["state"] for _, o in outcomes]
    if not finished:
        status = "processing"
    elif all(s == "published" for s in states):
        status = "published"
    elif any(s == "published" for s in states):
        status = "partially_published"
    else:
        status = "failed"
    out: dict[str, Any] = {"targets": {}, "publications": {}}
    async with env.db.session(write=True) as s:
        execution = PublishExecution(id=new_id("run"), brand_id=sched.brand_id, schedule_id=sched.id, status=status,
                                     started_at=now, finished_at=now if finished else None, created_at=now,
                                     updated_at=now)
        s.add(execution)
        await s.flush()
        for integration, fields in outcomes:
            fields = dict(fields)
            state = fields.pop("state")
            settled = state in ("published", "failed", "action_required")
            publish_id = f"sbx_secret_{integration.id[-8:]}" if state == "published" else None
            target = PublishTarget(
                id=new_id("tgt"), execution_id=execution.id, schedule_id=sched.id, brand_id=sched.brand_id,
                integration_id=integration.id, platform=integration.platform, state=state, attempts=1,
                idempotency_token=f"idem_tok_{integration.id[-10:]}", attempted_at=now,
                settled_at=now if settled else None, publish_id=publish_id,
                permalink_url=fields.pop("permalink_url", f"https://sandbox.socialpub.invalid/{integration.platform}/"
                                                          f"posts/{integration.id[-6:]}") if publish_id else None,
                created_at=now, updated_at=now, **fields)
            s.add(target)
            out["targets"][integration.id] = target
            if settled:
                pub = Publication(
                    id=new_id("pub"), workspace_id=sched.workspace_id, brand_id=sched.brand_id, schedule_id=sched.id,
                    execution_id=execution.id, target_id=target.id, platform=integration.platform,
                    integration_id=integration.id, post_id=sched.content_item_id, post_name=post_name,
                    post_type="GRID_POST", media_type="image",
                    status="published" if state == "published" else "failed",
                    source="queue" if sched.source == "queue" else "calendar",
                    failure_reason=target.failure_reason, publish_id=publish_id,
                    permalink_url=target.permalink_url, published_at=now if state == "published" else None,
                    created_at=now, updated_at=now)
                target.publication_id = pub.id
                s.add(pub)
                out["publications"][integration.id] = pub
        row = await s.get(Schedule, sched.id)
        row.latest_execution_id = execution.id
        row.status = "publishing" if not finished else status
        s.add(row)
    out["execution"] = execution
    return out
