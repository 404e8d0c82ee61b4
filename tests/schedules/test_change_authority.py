"""Issue 27 item 1: an approved Schedule's time, targets and content change only with publish:execute.

The reproductions first (REST through httpx's ASGITransport, and MCP), then the catalogue-wide probe: every write
endpoint of the catalogue is either tried against an approved Schedule (and an approved queue) with a key holding
every scope but publish:execute and with one holding it, or named below as unable to touch one, with the reason.
A new write route fails `test_every_write_endpoint_is_classified` until it is one or the other.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from schemas.scopes import ALL_SCOPES, PUBLISH_SCOPE
from schemas.time import iso
from storage.tables.content import ContentItem
from storage.tables.media import Media
from storage.tables.publishing import Schedule
from storage.tables.queues import Queue
from tests.mcp.support import envelope, in_memory
from tests.schedules.support import Sched, new_key
from tools import catalogue

pytestmark = pytest.mark.anyio

LATER = "2026-03-06T08:00:00.000Z"  # a day after tests.schedules.support.WHEN, still in the future
SOON = "2026-03-02T09:00:40.000Z"  # "40 s ahead" of the frozen clock, as in the issue


async def _no_publish_key(sc: Sched) -> str:
    """Every scope but publish:execute (an admin's key, so roles never stand in the way)."""
    return await sc.env.key(sc.world.ws, scopes=[s for s in ALL_SCOPES if s != PUBLISH_SCOPE], role="admin",
                            name="all but publish")


async def _approved(sc: Sched) -> str:
    resp = await sc.create(sc.item_id, approval_status="approved")
    assert resp.status == 201, resp.body
    return resp.body["data"]["schedule"]["id"]


async def test_publish_run_patch_cannot_move_an_approved_schedule_without_publish_execute(sc) -> None:
    env = sc.env
    sid = await _approved(sc)
    before = await sc.row(sid)
    weak = await _no_publish_key(sc)
    resp = await env.rest.patch(f"/v1/brands/{sc.brand.id}/publish-runs/{sid}", json={"scheduled_at": SOON},
                                headers=env.auth(weak))
    body = resp.json()
    assert resp.status_code == 403, body
    assert body["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert PUBLISH_SCOPE in body["error"]["details"]["required_scopes"]
    assert await sc.row(sid) == before
    # Holding it for review at the same time is allowed: it no longer publishes without a new approval.
    resp = await env.rest.patch(f"/v1/brands/{sc.brand.id}/publish-runs/{sid}",
                                json={"scheduled_at": LATER, "approval_status": "pending_review"},
                                headers=env.auth(weak))
    assert resp.status_code == 200, resp.json()
    row = await sc.row(sid)
    assert (row["approval_status"], row["status"], row["approved_by_key"]) == ("pending_review", "action_required",
                                                                               None)


async def test_publish_run_patch_moves_an_approved_schedule_with_publish_execute(sc) -> None:
    env = sc.env
    sid = await _approved(sc)
    resp = await env.rest.patch(f"/v1/brands/{sc.brand.id}/publish-runs/{sid}", json={"scheduled_at": LATER},
                                headers=env.auth(sc.world.full_key))
    assert resp.status_code == 200, resp.json()
    row = await sc.row(sid)
    assert (iso(row["scheduled_at"]), row["approval_status"], row["status"]) == (LATER, "approved", "scheduled")
    assert row["approved_by_key"] == env.key_row(sc.world.full_key).id


async def test_publish_run_patch_over_mcp_is_refused_the_same_way(sc) -> None:
    sid = await _approved(sc)
    before = await sc.row(sid)
    weak = await _no_publish_key(sc)
    async with in_memory(sc.env, weak) as client:
        result = await client.call_tool("update_publish_run", {"brand_id": sc.brand.id, "publish_run_id": sid,
                                                               "scheduled_at": SOON})
    body = envelope(result)
    assert result.is_error and body["error"]["code"] == "INSUFFICIENT_SCOPE", body
    assert PUBLISH_SCOPE in body["error"]["details"]["required_scopes"]
    assert await sc.row(sid) == before


async def _queue(sc: Sched, secret: str | None = None) -> dict[str, Any]:
    resp = await sc.env.rest.post(f"/v1/brands/{sc.brand.id}/queues", json={
        "name": "Mornings", "mode": "times_of_day", "times_of_day": ["09:00"], "content_item_ids": [sc.item_id],
        "integration_ids": sc.targets}, headers=sc.env.auth(secret or sc.world.full_key))
    assert resp.status_code == 201, resp.json()
    return resp.json()["data"]


@pytest.mark.parametrize("change", [{"times_of_day": ["06:00"]}, {"timezone": "Asia/Tokyo"},
                                    {"mode": "interval", "interval_minutes": 5}, {"skip_count": 1},
                                    {"start_at": "2026-03-02T09:00:40Z", "mode": "interval", "interval_minutes": 60},
                                    {"active": True}])
async def test_queue_time_change_without_publish_execute_holds_its_schedules(sc, change) -> None:
    queue = await _queue(sc)
    assert queue["approval_status"] == "approved"
    if change == {"active": True}:  # reactivating is a time change too: pause it first with authority
        resp = await sc.env.rest.patch(f"/v1/brands/{sc.brand.id}/queues/{queue['id']}", json={"active": False},
                                       headers=sc.env.auth(sc.world.full_key))
        assert resp.json()["data"]["approval_status"] == "approved"
    weak = await _no_publish_key(sc)
    resp = await sc.env.rest.patch(f"/v1/brands/{sc.brand.id}/queues/{queue['id']}", json=change,
                                   headers=sc.env.auth(weak))
    assert resp.status_code == 200, resp.json()
    assert resp.json()["data"]["approval_status"] == "pending_review"
    # The same change by a key holding publish:execute keeps (renews) the approval.
    resp = await sc.env.rest.patch(f"/v1/brands/{sc.brand.id}/queues/{queue['id']}", json=change,
                                   headers=sc.env.auth(sc.world.full_key))
    assert resp.json()["data"]["approval_status"] == "approved"


async def test_pausing_or_renaming_a_queue_keeps_its_approval(sc) -> None:
    queue = await _queue(sc)
    weak = await _no_publish_key(sc)
    for change in ({"name": "Renamed"}, {"active": False}, {"times_of_day": ["09:00"]}):  # the last changes nothing
        resp = await sc.env.rest.patch(f"/v1/brands/{sc.brand.id}/queues/{queue['id']}", json=change,
                                       headers=sc.env.auth(weak))
        assert resp.json()["data"]["approval_status"] == "approved", change


# -- the catalogue-wide probe ------------------------------------------------------------------------------------

# Write endpoints that cannot change when, where or what an existing approved Schedule or queue publishes, and why.
# Everything else that writes is probed below; a write endpoint in neither place fails the classification test.
CANNOT_TOUCH = {
    "refresh_target_dynamic_options": "refreshes a target's live choices; changes no content, Schedule or target",
    "create_media_upload_session": "creates a new Media item; content names media by ID",
    "import_media": "creates a new Media item",
    "request_media_upload_url": "creates a new Media item (legacy flow)",
    "repair_media_derivative": "creates a new immutable Media item; never changes the draft's media",
    "create_content_item": "creates a new draft",
    "create_content_item_older": "creates a new draft",
    "preflight_content": "write-free",
    "request_provider_cleanup": "removes already-published posts; needs publish:execute itself",
    "create_schedule": "creates a new Schedule (approved needs publish:execute)",
    "create_publish_run": "creates a new Schedule (approved needs publish:execute)",
    "create_queue": "creates a new queue (approved only when the key holds publish:execute)",
    "create_label": "labels do not change what publishes",
    "update_label": "labels do not change what publishes",
    "delete_label": "labels do not change what publishes",
    "create_snippet": "snippets are text to copy, never part of a draft",
    "update_snippet": "snippets are text to copy, never part of a draft",
    "delete_snippet": "snippets are text to copy, never part of a draft",
    "create_idea": "ideas are not drafts",
    "update_idea": "ideas are not drafts",
    "delete_idea": "ideas are not drafts",
    "update_notification_settings": "email preferences",
    "revert_notification_settings": "email preferences",
    "approve_autopilot_item": "queues no generation, approves no schedule, publishes nothing (spec)",
    "regenerate_autopilot_item": "refused for an item that has content or a Schedule",
    "create_community_post": "community posts are not brand content",
    "update_community_post": "community posts are not brand content",
    "delete_community_post": "community posts are not brand content",
    "add_community_post_note": "community posts are not brand content",
    "create_community_post_comment": "community posts are not brand content",
    "delete_community_post_comment": "community posts are not brand content",
    "create_prospect_brand": "creates a new prospect brand",
    "update_prospect_brand": "changes a prospect brand's marketing configuration, not its Schedules",
    "start_website_scan": "reads a website into a prospect brand's profile",
    "start_content_pipeline": "makes new drafts for a prospect brand",
    "create_claim_link": "makes a claim link for a prospect brand",
}

# Path and body fields naming the objects under test ("@name": resolved per probe by Probe.ids), and confirmations.
TARGET_FIELDS = {"schedule_id": "@schedule", "publish_run_id": "@schedule", "queue_id": "@queue",
                 "content_item_id": "@item", "draft_id": "@item", "media_id": "@media", "integration_id": "@tiktok"}
CONFIRM_FIELDS = {"confirm_schedule_id": "schedule_id", "confirm_draft_id": "draft_id"}
# One change per field that can move when, where or what something publishes (each tried on its own).
CHANGES: dict[str, Any] = {
    "scheduled_at": SOON, "integration_ids": "@other_targets", "content_item_id": "@other_item",
    "approval_status": "pending_review", "name": "Changed", "caption": "Changed caption",
    "single_copy": {"caption": "Changed caption", "hashtags": [], "title": None},
    "instagram_settings": {"media_ids": [], "post_type": "GRID_POST"}, "privacy_level": "PUBLIC_TO_EVERYONE",
    "times_of_day": ["06:00"], "timezone": "Asia/Tokyo", "interval_minutes": 5, "mode": "interval",
    "start_at": SOON, "skip_count": 1, "content_item_ids": "@other_items", "loop": True, "active": True,
    "description": "Changed", "status": "ready_for_processing", "folder_id": None,
    "copy_mode": "per_platform", "platform_copy": {"instagram": {"caption": "Changed", "hashtags": [], "title": None}},
    "intended_integration_ids": "@other_targets", "label_ids": [], "thumbnail_media_id": "@media",
    "thumbnail_timestamp": 1.0,
}
# Every platform's settings of a draft: cleared (each a change of what publishes there).
CHANGES.update({f"{p}_settings": None for p in ("bluesky", "discord", "facebook", "linkedin", "mastodon",
                                                 "pinterest", "telegram", "threads", "tiktok", "tumblr", "x",
                                                 "youtube") if f"{p}_settings" not in CHANGES})
# Fields a change needs alongside to be a valid request.
PER_PLATFORM = {"copy_mode": "per_platform", "platform_copy": CHANGES["platform_copy"], "single_copy": None}
WITH = {"mode": {"interval_minutes": 60}, "copy_mode": PER_PLATFORM, "platform_copy": PER_PLATFORM}
# Fields a probe leaves out.
UNTRIED = {"brand_id", "idempotency_key"}
OBJECT_PATHS = {"schedule_id", "publish_run_id", "queue_id", "content_item_id", "draft_id", "media_id"}


def _write_endpoints() -> list[Any]:
    return [e for e in catalogue.endpoints() if e.method != "GET"]


def _probed() -> list[Any]:
    return [e for e in _write_endpoints() if e.name not in CANNOT_TOUCH]


def test_every_write_endpoint_is_classified() -> None:
    """A write endpoint is either probed (it names a Schedule, run, queue, content item or media) or listed in
    CANNOT_TOUCH with a reason; the probe knows a value for every field of a probed one."""
    names = {e.name for e in _write_endpoints()}
    assert set(CANNOT_TOUCH) <= names, sorted(set(CANNOT_TOUCH) - names)
    for ep in _probed():
        fields = set(ep.request.model_fields)
        assert fields & OBJECT_PATHS, (f"{ep.name}: a new write endpoint: probe it here or list it in "
                                       "CANNOT_TOUCH with the reason")
        unknown = fields - set(TARGET_FIELDS) - set(CONFIRM_FIELDS) - set(CHANGES) - UNTRIED
        assert not unknown, f"{ep.name}: teach the probe a value for {sorted(unknown)}"
        assert attempts(ep), ep.name


def attempts(ep: Any) -> list[dict[str, Any]]:
    """Argument sets for one endpoint: the objects under test in its path (and required fields), then one set
    per change field it takes, each alone; an endpoint without change fields (a delete, a cancel) gets one."""
    fields = ep.request.model_fields
    base: dict[str, Any] = {"brand_id": "@brand"}
    for name, what in TARGET_FIELDS.items():
        if name in ep.path_params or (name in fields and fields[name].is_required()):
            base[name] = what
    for name, source in CONFIRM_FIELDS.items():
        if name in fields:
            base[name] = base[source]
    changes = [n for n in CHANGES if n in fields and n not in base]
    required = [n for n in changes if fields[n].is_required()]
    base.update({n: CHANGES[n] for n in required})
    optional = [n for n in changes if n not in required]
    if not optional:
        return [base]
    return [{**base, n: CHANGES[n], **{k: v for k, v in WITH.get(n, {}).items() if k in fields and k != n}}
            for n in optional]


class Probe:
    """An approved Schedule (its draft, media and targets) and an approved queue, made with full authority."""

    def __init__(self, sc: Sched) -> None:
        self.sc, self.env = sc, sc.env

    async def make(self) -> Probe:
        sc = self.sc
        self.item = await sc.item()
        self.other_item = await sc.item(name="Other")
        self.schedule = await _approved_for(sc, self.item)
        self.queue_item = await sc.item(name="Queued")
        resp = await self.env.rest.post(f"/v1/brands/{sc.brand.id}/queues", json={
            "name": "Mornings", "mode": "times_of_day", "times_of_day": ["09:00"],
            "content_item_ids": [self.queue_item], "integration_ids": sc.targets},
            headers=self.env.auth(sc.world.full_key))
        assert resp.status_code == 201 and resp.json()["data"]["approval_status"] == "approved", resp.json()
        self.queue = resp.json()["data"]["id"]
        return self

    def resolve(self, args: dict[str, Any]) -> dict[str, Any]:
        sc = self.sc
        ids = {"@brand": sc.brand.id, "@schedule": self.schedule, "@queue": self.queue, "@item": self.item,
               "@media": sc.image, "@tiktok": sc.tt, "@other_item": self.other_item, "@other_targets": [sc.ig],
               "@other_items": [self.other_item]}
        return {k: ids.get(v, v) if isinstance(v, str) else v for k, v in args.items()}

    async def drop_queue(self) -> None:
        async with self.env.db.session(write=True) as s:
            queue = await s.get(Queue, self.queue)
            if queue is not None:
                await s.delete(queue)

    async def state(self) -> dict[str, Any]:
        """What publishes, where and when, for the approved Schedule and the approved queue; one that no longer
        publishes without a new approval (held, cancelled, deleted, paused) is "not approved"."""
        async with self.env.db.session(write=False) as s:
            row = (await s.exec(select(Schedule).where(Schedule.id == self.schedule))).first()
            queue = await s.get(Queue, self.queue)
            items = {i.id: i for i in (await s.exec(select(ContentItem))).all()}
            media = (await s.exec(select(Media).where(Media.id == self.sc.image))).first()

        def content(item_id: str) -> Any:
            item = items.get(item_id)
            return item and (item.name, item.single_copy, item.platform_copy, item.settings)

        picture = media and (media.status, media.asset_id, media.sha256)
        out: dict[str, Any] = {"schedule": "not approved", "queue": "not approved"}
        if row is not None and row.approval_status == "approved" and row.status == "scheduled":
            out["schedule"] = (row.scheduled_at, list(row.integration_ids), row.content_item_id,
                               content(row.content_item_id), picture)
        if queue is not None and queue.approved_by_key and queue.active:
            out["queue"] = (queue.next_run_at, list(queue.times_of_day), queue.timezone, queue.mode,
                            queue.interval_minutes, queue.start_at, queue.skip_count, queue.loop,
                            list(queue.integration_ids), [content(i) for i in queue.content_item_ids])
        return out


async def _approved_for(sc: Sched, item_id: str) -> str:
    resp = await sc.create(item_id, approval_status="approved")
    assert resp.status == 201, resp.body
    return resp.body["data"]["schedule"]["id"]


@pytest.mark.slow
async def test_no_write_endpoint_changes_an_approved_post_without_publish_execute(sc) -> None:
    env = sc.env
    weak = await _no_publish_key(sc)
    tried = 0
    changed_with_authority: set[str] = set()
    for ep in _probed():
        for symbolic in attempts(ep):
            for secret in (weak, sc.world.full_key):
                probe = await Probe(sc).make()
                args = probe.resolve(symbolic)
                before = await probe.state()
                keyed = {"idempotency_key": new_key()} if ep.idempotency != "none" else {}
                resp = await env.dispatcher.invoke(ep, {**args, **keyed}, token=secret)
                assert resp.status < 500, (ep.name, args, resp.body)
                after = await probe.state()
                moved = [k for k in before if after[k] != "not approved" and after[k] != before[k]]
                if secret == weak:
                    assert not moved, (f"{ep.name} changed the approved {moved} without publish:execute", args,
                                       resp.status, resp.body)
                    tried += 1
                else:  # a request the route understood: the probe's arguments are not what was refused
                    assert resp.status != 400, f"{ep.name} {sorted(args)} {resp.body}"
                    if moved:
                        changed_with_authority.add(ep.name)
                await probe.drop_queue()  # a brand holds at most 100 queues
    assert tried >= 30, tried
    # The rule refuses the weak key only: with publish:execute an approved post can still be changed.
    assert {"reschedule_schedule", "update_publish_run", "update_queue"} <= changed_with_authority


async def test_reschedule_moves_only_with_publish_execute(sc) -> None:
    sid = await _approved(sc)
    weak = await _no_publish_key(sc)
    args = {"brand_id": sc.brand.id, "schedule_id": sid, "confirm_schedule_id": sid, "scheduled_at": LATER}
    refused = await sc.env.call("reschedule_schedule", weak, idempotency_key=new_key(), **args)
    assert refused.status == 403 and PUBLISH_SCOPE in refused.body["error"]["details"]["required_scopes"]
    done = await sc.env.call("reschedule_schedule", sc.world.full_key, idempotency_key=new_key(), **args)
    assert done.status == 200 and done.body["data"]["schedule"]["scheduled_at"] == LATER
