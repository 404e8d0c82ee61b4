"""Older publish-run routes: a Schedule row seen through the older shape (one source of truth)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from storage.tables.content import ContentItem
from storage.tables.media import Media
from storage.tables.publishing import Schedule
from tests.schedules.support import add_media

pytestmark = pytest.mark.anyio

FIELDS = {"id", "brand_id", "content_item_id", "scheduled_at", "integration_ids", "status", "approval_status",
          "source", "failure_reason", "thumbnail_url", "created_at", "updated_at"}
LATER = "2026-04-01T10:00:00+02:00"  # the test clock starts at 2026-03-02T09:00Z
SCHEDULE_ONLY = ("schedule:read", "schedule:write", "posts:read", "posts:write")


class Runs:
    def __init__(self, world: Any) -> None:
        self.world, self.env, self.brand = world, world.env, world.brand_a
        self.li, self.x = world.integrations["linkedin"].id, world.integrations["x"].id
        self.limited = ""  # a schedule:write-only key, made by the `runs` fixture

    def url(self, suffix: str = "", brand_id: str | None = None) -> str:
        return f"/v1/brands/{brand_id or self.brand.id}/publish-runs{suffix}"

    async def item(self, name: str = "Post", **extra: Any) -> str:
        body = {"name": name, "copy_mode": "single", "single_copy": {"caption": "Hello", "hashtags": [],
                                                                     "title": None},
                "linkedin_settings": {}, "x_settings": {}, **extra}
        resp = await self.env.rest.post(f"/v1/brands/{self.brand.id}/content-items", json=body,
                                        headers=self.env.auth(self.world.full_key))
        assert resp.status_code == 201, resp.json()
        return resp.json()["data"]["content_item"]["id"]

    async def create(self, secret: str | None = None, **body: Any) -> Any:
        return await self.env.rest.post(self.url(), json=body, headers=self.env.auth(secret or self.world.full_key))

    async def patch(self, run_id: str, secret: str | None = None, **body: Any) -> Any:
        return await self.env.rest.patch(self.url(f"/{run_id}"), json=body,
                                         headers=self.env.auth(secret or self.world.full_key))

    async def made(self, secret: str | None = None, **body: Any) -> dict[str, Any]:
        body.setdefault("scheduled_at", LATER)
        body.setdefault("integration_ids", [self.li])
        if "content_item_id" not in body:
            body["content_item_id"] = await self.item()
        resp = await self.create(secret, **body)
        assert resp.status_code == 201, resp.json()
        return resp.json()["data"]

    async def row(self, run_id: str) -> Schedule | None:
        async with self.env.db.session(write=False) as s:
            return await s.get(Schedule, run_id)

    async def set(self, run_id: str, **values: Any) -> None:
        async with self.env.db.session(write=True) as s:
            row = await s.get(Schedule, run_id)
            for k, v in values.items():
                setattr(row, k, v)
            s.add(row)

    async def count(self) -> int:
        async with self.env.db.session(write=False) as s:
            return len((await s.exec(select(Schedule))).all())


@pytest.fixture
async def runs(world) -> Runs:
    r = Runs(world)
    r.limited = await world.env.key(world.ws, scopes=SCHEDULE_ONLY, name="schedule only")
    return r


def codes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(i["field_path"], i["code"]) for i in body["error"].get("issues", [])]


# -- create -----------------------------------------------------------------------------------------------------

async def test_create_defaults_to_held_and_is_a_schedule_row(runs) -> None:
    item = await runs.item()
    resp = await runs.create(content_item_id=item, scheduled_at=LATER, integration_ids=[runs.li, runs.x][::-1])
    assert resp.status_code == 201, resp.json()
    data = resp.json()["data"]
    assert set(data) == FIELDS
    assert data["status"] == "ready_for_processing" and data["approval_status"] == "pending_review"
    assert data["source"] == "publish_run" and data["failure_reason"] is None and data["thumbnail_url"] is None
    assert data["scheduled_at"] == "2026-04-01T08:00:00.000Z" and data["content_item_id"] == item
    assert data["integration_ids"] == sorted([runs.li, runs.x])
    row = await runs.row(data["id"])
    assert row is not None and row.status == "action_required" and row.approved_by_key is None
    assert row.blocking_reason["code"] == "APPROVAL_PENDING"


async def test_create_approved_needs_publish_execute(runs) -> None:
    item = await runs.item()
    refused = await runs.create(runs.limited, content_item_id=item, scheduled_at=LATER, integration_ids=[runs.li],
                                approval_status="approved")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "INSUFFICIENT_SCOPE"
    assert refused.json()["error"]["details"]["missing_scopes"] == ["publish:execute"]
    assert await runs.count() == 0
    held = await runs.made(runs.limited, content_item_id=item)
    assert held["approval_status"] == "pending_review"
    ok = await runs.made(content_item_id=item, approval_status="approved")
    row = await runs.row(ok["id"])
    assert row.status == "scheduled" and row.approved_by_key == runs.env.key_row(runs.world.full_key).id
    assert ok["status"] == "ready_for_processing"


async def test_create_refuses_ids_of_another_brand_with_field_issues(runs, world) -> None:
    other = await world.env.integration(world.brand_b, "linkedin")
    resp = await runs.env.rest.post(f"/v1/brands/{world.brand_b.id}/content-items", json={
        "name": "B", "copy_mode": "single", "single_copy": {"caption": "b", "hashtags": [], "title": None}},
        headers=runs.env.auth(world.full_key))
    b_item = resp.json()["data"]["content_item"]["id"]
    resp = await runs.create(content_item_id=b_item, scheduled_at=LATER, integration_ids=[runs.li, other.id])
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "DOMAIN_VALIDATION_FAILED"
    assert codes(resp.json()) == [("$.content_item_id", "NOT_FOUND"), ("$.integration_ids[1]", "NOT_FOUND")]
    assert await runs.count() == 0


@pytest.mark.parametrize("body, path", [
    ({"integration_ids": []}, "$.integration_ids"),
    ({"integration_ids": "many"}, "$.integration_ids"),
    ({"scheduled_at": "2026-04-01T10:00:00"}, "$.scheduled_at"),
    ({"approval_status": "auto"}, "$.approval_status"),
    ({"content_item_id": " ci_x"}, "$.content_item_id"),
    ({"status": "ready_for_processing"}, "$.status"),
])
async def test_create_refuses_malformed_input(runs, body, path) -> None:
    item = await runs.item()
    full = {"content_item_id": item, "scheduled_at": LATER, "integration_ids": [runs.li], **body}
    resp = await runs.create(**full)
    assert resp.status_code == 400, resp.json()
    assert path in [p for p, _ in codes(resp.json())]
    assert await runs.count() == 0


async def test_create_limits_integrations_to_twenty_and_refuses_duplicates(runs) -> None:
    item = await runs.item()
    ids = sorted(i.id for i in runs.world.integrations.values())
    resp = await runs.create(content_item_id=item, scheduled_at=LATER, integration_ids=(ids * 3)[:21])
    assert resp.status_code == 400
    resp = await runs.create(content_item_id=item, scheduled_at=LATER, integration_ids=[runs.li, runs.li])
    assert resp.status_code == 400 and ("$.integration_ids[1]", "DUPLICATE") in codes(resp.json())


async def test_create_runs_preflight(runs) -> None:
    item = await runs.item()
    past = await runs.create(content_item_id=item, scheduled_at="2026-03-01T09:00:00Z", integration_ids=[runs.li])
    assert past.status_code == 422 and past.json()["error"]["code"] == "PREFLIGHT_BLOCKED"
    assert ("$.scheduled_at", "SCHEDULED_AT_IN_PAST") in codes(past.json())
    bare = await runs.item("No settings", linkedin_settings=None)
    resp = await runs.create(content_item_id=bare, scheduled_at=LATER, integration_ids=[runs.li])
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "PREFLIGHT_BLOCKED"
    assert await runs.count() == 0


async def test_create_replays_with_an_idempotency_key(runs) -> None:
    item = await runs.item()
    body = {"content_item_id": item, "scheduled_at": LATER, "integration_ids": [runs.li]}
    headers = runs.env.auth(runs.world.full_key, Idempotency_Key="run-1")
    first = await runs.env.rest.post(runs.url(), json=body, headers=headers)
    again = await runs.env.rest.post(runs.url(), json=body, headers=headers)
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["Idempotency-Replayed"] == "true" and again.json()["data"] == first.json()["data"]
    changed = await runs.env.rest.post(runs.url(), json={**body, "scheduled_at": "2026-04-02T10:00:00Z"},
                                       headers=headers)
    assert changed.status_code == 409 and await runs.count() == 1


async def test_brand_restriction_hides_runs(runs, world) -> None:
    run = await runs.made()
    for method, suffix in (("GET", ""), ("POST", ""), ("PATCH", f"/{run['id']}"), ("DELETE", f"/{run['id']}")):
        resp = await runs.env.rest.request(method, runs.url(suffix), json={} if method in ("POST", "PATCH") else None,
                                           headers=runs.env.auth(world.key_b_only))
        assert resp.status_code == 404, (method, resp.json())
    # A run of brand A addressed through brand B is missing there.
    resp = await runs.env.rest.delete(runs.url(f"/{run['id']}", brand_id=world.brand_b.id),
                                      headers=runs.env.auth(world.full_key))
    assert resp.status_code == 404 and await runs.row(run["id"]) is not None


# -- list -------------------------------------------------------------------------------------------------------

async def test_list_is_the_older_shape_sorted_by_scheduled_at_asc(runs) -> None:
    late = await runs.made(scheduled_at="2026-05-01T10:00:00Z")
    early = await runs.made(scheduled_at="2026-04-01T10:00:00Z")
    middle = await runs.made(scheduled_at="2026-04-15T10:00:00Z")
    resp = await runs.env.rest.get(runs.url(), headers=runs.env.auth(runs.limited))
    body = resp.json()
    assert resp.status_code == 200 and body["pagination"] == {"page": 1, "limit": 50, "has_more": False}
    assert [r["id"] for r in body["data"]] == [early["id"], middle["id"], late["id"]]
    assert all(set(r) == FIELDS for r in body["data"])
    resp = await runs.env.rest.get(runs.url("?sort_by=created_at&sort_dir=desc&limit=2&page=1"),
                                   headers=runs.env.auth(runs.limited))
    assert [r["id"] for r in resp.json()["data"]] == [middle["id"], early["id"]]
    assert resp.json()["pagination"] == {"page": 1, "limit": 2, "has_more": True}
    resp = await runs.env.rest.get(runs.url("?sort_by=created_at&sort_dir=desc&limit=2&page=2"),
                                   headers=runs.env.auth(runs.limited))
    assert [r["id"] for r in resp.json()["data"]] == [late["id"]] and not resp.json()["pagination"]["has_more"]


@pytest.mark.parametrize("query", ["limit=101", "limit=0", "page=0", "sort_by=updated_at", "sort_dir=up"])
async def test_list_refuses_bad_paging(runs, query) -> None:
    resp = await runs.env.rest.get(runs.url(f"?{query}"), headers=runs.env.auth(runs.limited))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_QUERY"


async def test_list_maps_statuses_to_the_older_vocabulary(runs) -> None:
    made = [await runs.made() for _ in range(6)]
    statuses = ["scheduled", "publishing", "published", "partially_published", "failed", "cancelled"]
    for run, status in zip(made, statuses, strict=True):
        await runs.set(run["id"], status=status)
    resp = await runs.env.rest.get(runs.url("?sort_by=created_at"), headers=runs.env.auth(runs.limited))
    assert [r["status"] for r in resp.json()["data"]] == [
        "ready_for_processing", "processing", "published", "partially_published", "failed", "cancelled"]


async def test_list_needs_schedule_read(runs, world) -> None:
    key = await world.env.key(world.ws, scopes=("posts:read",), name="posts only")
    resp = await runs.env.rest.get(runs.url(), headers=runs.env.auth(key))
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "INSUFFICIENT_SCOPE"


async def test_thumbnail_url_is_the_items_media_preview(runs, world) -> None:
    image = await add_media(world.env, world.brand_a)
    item = await runs.item("With image", thumbnail_media_id=image)
    run = await runs.made(content_item_id=item)
    async with world.env.db.session(write=False) as s:
        media = await s.get(Media, image)
    assert run["thumbnail_url"] == f"{world.env.rt.settings.resolved_media_url}/assets/{media.asset_id}"
    listed = (await runs.env.rest.get(runs.url(), headers=runs.env.auth(runs.limited))).json()["data"]
    assert listed[0]["thumbnail_url"] == run["thumbnail_url"]


# -- update -----------------------------------------------------------------------------------------------------

async def test_changing_time_resets_state_and_clears_failure_metadata(runs) -> None:
    run = await runs.made(approval_status="approved")
    await runs.set(run["id"], failure_reason="The target was not reachable.", status="action_required",
                   blocking_reason={"code": "X", "message": "m", "repair_guidance": "g"})
    # Moving an approved run's time needs publish:execute (issue 27; tests/schedules/test_change_authority.py);
    # with it the approval stays.
    refused = await runs.patch(run["id"], runs.limited, scheduled_at="2026-04-02T10:00:00Z")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "INSUFFICIENT_SCOPE"
    resp = await runs.patch(run["id"], scheduled_at="2026-04-02T10:00:00Z")
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    assert data["status"] == "ready_for_processing" and data["failure_reason"] is None
    assert data["approval_status"] == "approved" and data["scheduled_at"] == "2026-04-02T10:00:00.000Z"
    assert data["integration_ids"] == run["integration_ids"] and data["content_item_id"] == run["content_item_id"]
    row = await runs.row(run["id"])
    assert row.status == "scheduled" and row.blocking_reason is None and row.failure_reason is None


async def test_changing_targets_or_content_resets_state(runs) -> None:
    run = await runs.made()
    await runs.set(run["id"], failure_reason="Earlier problem.")
    resp = await runs.patch(run["id"], integration_ids=[runs.x, runs.li])
    assert resp.status_code == 200 and resp.json()["data"]["failure_reason"] is None
    assert resp.json()["data"]["integration_ids"] == sorted([runs.x, runs.li])
    await runs.set(run["id"], failure_reason="Earlier problem.")
    other = await runs.item("Other")
    resp = await runs.patch(run["id"], content_item_id=other)
    data = resp.json()["data"]
    assert data["content_item_id"] == other and data["failure_reason"] is None
    assert data["status"] == "ready_for_processing" and data["approval_status"] == "pending_review"


async def test_unchanged_fields_keep_failure_metadata(runs) -> None:
    run = await runs.made()
    await runs.set(run["id"], failure_reason="Earlier problem.")
    resp = await runs.patch(run["id"], scheduled_at=run["scheduled_at"])  # same time: nothing changes
    assert resp.status_code == 200 and resp.json()["data"]["failure_reason"] == "Earlier problem."


async def test_approval_changes_follow_authority(runs) -> None:
    run = await runs.made()
    refused = await runs.patch(run["id"], runs.limited, approval_status="approved")
    assert refused.status_code == 403 and (await runs.row(run["id"])).approval_status == "pending_review"
    ok = await runs.patch(run["id"], approval_status="approved")
    assert ok.json()["data"]["approval_status"] == "approved"
    row = await runs.row(run["id"])
    assert row.status == "scheduled" and row.approved_by_key == runs.env.key_row(runs.world.full_key).id
    # Changing what an approved run publishes needs publish:execute too.
    other = await runs.item("Other")
    refused = await runs.patch(run["id"], runs.limited, content_item_id=other)
    assert refused.status_code == 403 and (await runs.row(run["id"])).content_item_id == run["content_item_id"]
    refused = await runs.patch(run["id"], runs.limited, integration_ids=[runs.x])
    assert refused.status_code == 403
    # Holding needs only schedule:write, and clears the approval.
    held = await runs.patch(run["id"], runs.limited, approval_status="pending_review", content_item_id=other)
    assert held.status_code == 200 and held.json()["data"]["approval_status"] == "pending_review"
    row = await runs.row(run["id"])
    assert row.status == "action_required" and row.approved_by_key is None and row.approved_at is None


async def test_update_validates_ids_and_input(runs, world) -> None:
    run = await runs.made()
    other = await world.env.integration(world.brand_b, "linkedin")
    resp = await runs.patch(run["id"], integration_ids=[runs.li, other.id])
    assert resp.status_code == 422 and codes(resp.json()) == [("$.integration_ids[1]", "NOT_FOUND")]
    resp = await runs.patch(run["id"], integration_ids=[])
    assert resp.status_code == 400
    resp = await runs.patch(run["id"])
    assert resp.status_code == 400 and codes(resp.json()) == [("$", "EMPTY_UPDATE")]
    resp = await runs.patch(run["id"], scheduled_at="2026-03-01T09:00:00Z")
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "PREFLIGHT_BLOCKED"
    resp = await runs.patch("sch_01M813C05ZAMFD857P260GAYXK", scheduled_at=LATER)
    assert resp.status_code == 404
    assert (await runs.row(run["id"])).integration_ids == [runs.li]


@pytest.mark.parametrize("state", [{"status": "publishing"}, {"status": "published"}, {"status": "failed"},
                                   {"status": "cancelled"}, {"latest_execution_id": "run_01M813C05ZAMFD857P260GAYXK"}])
async def test_update_refuses_a_run_that_is_executing_or_has_run(runs, state) -> None:
    run = await runs.made()
    await runs.set(run["id"], **state)
    resp = await runs.patch(run["id"], scheduled_at="2026-04-02T10:00:00Z")
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "CONFLICT"
    assert (await runs.row(run["id"])).scheduled_at.isoformat().startswith("2026-04-01T08:00")


# -- delete -----------------------------------------------------------------------------------------------------

async def test_delete_keeps_the_content_item(runs) -> None:
    run = await runs.made()
    resp = await runs.env.rest.delete(runs.url(f"/{run['id']}"), headers=runs.env.auth(runs.limited))
    assert resp.status_code == 200 and resp.json()["data"] == {"id": run["id"], "outcome": "deleted"}
    assert await runs.row(run["id"]) is None
    async with runs.env.db.session(write=False) as s:
        assert await s.get(ContentItem, run["content_item_id"]) is not None
    again = await runs.env.rest.delete(runs.url(f"/{run['id']}"), headers=runs.env.auth(runs.limited))
    assert again.status_code == 404


@pytest.mark.parametrize("state, allowed", [
    ({"status": "publishing"}, False), ({"status": "published"}, False), ({"status": "failed"}, False),
    ({"status": "cancelled"}, True), ({"status": "scheduled", "latest_execution_id": "run_x"}, False)])
async def test_delete_refuses_once_executing(runs, state, allowed) -> None:
    run = await runs.made()
    await runs.set(run["id"], **state)
    resp = await runs.env.rest.delete(runs.url(f"/{run['id']}"), headers=runs.env.auth(runs.limited))
    assert resp.status_code == (200 if allowed else 409)
    assert (await runs.row(run["id"]) is None) == allowed
