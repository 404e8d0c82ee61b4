"""The preflight endpoint: the spec's result, write-free, a stable fingerprint, links that follow authority."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import select

from schemas.ids import new_id
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.media import Media
from tests.schedules.support import Sched, add_media

pytestmark = pytest.mark.anyio


class Setup(Sched):
    """The schedule tests' brand and draft, plus the preflight call."""

    def url(self, item_id: str) -> str:
        return f"/v1/brands/{self.brand.id}/content-items/{item_id}/preflight"

    async def run(self, item_id: str, secret: str | None = None, **body: Any) -> Any:
        body.setdefault("integration_ids", self.targets)
        return await self.env.rest.post(self.url(item_id), json=body,
                                        headers=self.env.auth(secret or self.world.full_key))


@pytest.fixture
async def pf(world) -> Setup:
    return await Setup(world).setup()  # pyright: ignore[reportReturnType]  # the fixture's Setup returns the world it was given


def codes(issues: list[dict]) -> set[str]:
    return {i["code"] for i in issues}


async def test_ready_result_has_every_field(pf) -> None:
    item = await pf.item()
    resp = await pf.run(item, scheduled_at="2026-03-05T10:30:00+01:00", approval_status="pending_review")
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    assert set(data) == {"validation_version", "fingerprint", "content_item", "request", "policy", "can_schedule",
                         "target_count", "targets", "issues", "blockers", "warnings", "next_actions", "links"}
    assert data["fingerprint"].startswith("sha256:") and len(data["fingerprint"]) == 71
    assert data["content_item"]["id"] == item and data["content_item"]["brand_id"] == pf.brand.id
    assert data["request"] == {"integration_ids": sorted([pf.ig, pf.tt]),
                               "scheduled_at": "2026-03-05T09:30:00.000Z", "approval_status": "pending_review"}
    assert data["can_schedule"] is True and data["policy"] == {"scheduling_allowed": True}
    assert data["target_count"] == 2 and [t["integration_id"] for t in data["targets"]] == sorted([pf.ig, pf.tt])
    for t in data["targets"]:
        assert set(t) >= {"integration_id", "platform", "display_name", "connection_status", "can_schedule",
                          "issues", "blockers", "warnings"}
        assert t["can_schedule"] is True and t["connection_status"] == "connected"
    assert data["blockers"] == []
    assert codes(data["warnings"]) == {"APPROVAL_PENDING"}
    warning = data["warnings"][0]
    assert warning["severity"] == "warning" and warning["scope"] == "approval"
    assert warning["field_path"] == "$.approval_status" and warning["repair_action"]["action"] == "review_approval"
    assert data["links"]["self"] == {"href": pf.url(item), "method": "POST", "required_scopes": ["schedule:write"]}
    assert data["links"]["targets"]["href"] == f"/v1/brands/{pf.brand.id}/targets"
    assert data["links"]["create_schedule"] == {"href": f"/v1/brands/{pf.brand.id}/schedules",
                                                "method": "POST", "required_scopes": ["schedule:write"]}


async def test_create_schedule_link_scopes_follow_the_requested_approval(pf) -> None:
    item = await pf.item()
    data = (await pf.run(item, scheduled_at="2026-03-05T10:30:00Z", approval_status="approved")).json()["data"]
    assert data["can_schedule"] is True
    assert data["links"]["create_schedule"]["required_scopes"] == ["schedule:write", "publish:execute"]


async def test_blocked_result_points_at_each_field(pf) -> None:
    item = await pf.item(tiktok_settings={"media_ids": [pf.video], "post_type": "VIDEO"})
    data = (await pf.run(item, scheduled_at="2026-03-05T10:30:00Z")).json()["data"]
    assert data["can_schedule"] is False and "create_schedule" not in data["links"]
    assert data["policy"]["scheduling_allowed"] is True  # content blockers are not policy
    by_code = {i["code"]: i for i in data["blockers"]}
    assert set(by_code) == {"TIKTOK_PRIVACY_LEVEL_REQUIRED", "TIKTOK_TERMS_NOT_AGREED"}
    privacy = by_code["TIKTOK_PRIVACY_LEVEL_REQUIRED"]
    assert privacy["field_path"] == "$.tiktok_settings.privacy_level"
    assert privacy["integration_id"] == pf.tt and privacy["platform"] == "tiktok"
    assert privacy["repair_action"]["action"] == "choose_privacy_level"
    tiktok = next(t for t in data["targets"] if t["platform"] == "tiktok")
    instagram = next(t for t in data["targets"] if t["platform"] == "instagram")
    assert tiktok["can_schedule"] is False and instagram["can_schedule"] is True
    assert data["next_actions"]


async def test_approved_without_publish_authority_is_a_policy_blocker(pf) -> None:
    item = await pf.item()
    writer = await pf.env.key(pf.world.ws, scopes=["schedule:write", "posts:write"], name="no publish")
    data = (await pf.run(item, writer, scheduled_at="2026-03-05T10:30:00Z", approval_status="approved")).json()["data"]
    assert data["can_schedule"] is False and data["policy"] == {"scheduling_allowed": False}
    (blocker,) = [i for i in data["blockers"] if i["scope"] == "policy"]
    assert blocker["code"] == "PUBLISH_PERMISSION_REQUIRED"
    assert blocker["repair_action"]["action"] == "use_authorized_api_key"


async def test_time_rules_and_foreign_targets(pf) -> None:
    item = await pf.item()
    other = await pf.env.integration(pf.world.brand_b, "instagram")
    past = (await pf.run(item, scheduled_at="2026-03-01T10:30:00Z")).json()["data"]
    assert "SCHEDULED_AT_IN_PAST" in codes(past["blockers"])
    naive = (await pf.run(item, scheduled_at="2026-03-05T10:30:00")).json()["data"]
    assert "SCHEDULED_AT_MALFORMED" in codes(naive["blockers"]) and naive["request"]["scheduled_at"] is None
    foreign = (await pf.run(item, integration_ids=sorted([pf.ig, other.id]))).json()["data"]
    missing = [i for i in foreign["blockers"] if i["code"] == "TARGET_NOT_FOUND"]
    assert len(missing) == 1 and missing[0]["integration_id"] == other.id
    assert "Brand B" not in str(foreign)  # nothing about the other brand's account is disclosed


async def test_request_shape_is_refused_with_field_issues(pf) -> None:
    item = await pf.item()
    ids = sorted([pf.ig, pf.tt])
    cases = [
        ({"integration_ids": []}, "$.integration_ids", "TOO_FEW_ITEMS"),
        ({"integration_ids": list(reversed(ids))}, "$.integration_ids[1]", "NOT_ASCENDING"),
        ({"integration_ids": [ids[0], ids[0]]}, "$.integration_ids[1]", "DUPLICATE"),
        ({"integration_ids": sorted(new_id("int") for _ in range(21))}, "$.integration_ids", "TOO_MANY_ITEMS"),
        ({"integration_ids": [" " + ids[0]]}, "$.integration_ids[0]", "INVALID_FORMAT"),
        ({"integration_ids": ids, "approval_status": "maybe"}, "$.approval_status", "NOT_ALLOWED"),
        ({"integration_ids": ids, "scheduledAt": "2026-03-05T10:30:00Z"}, "$.scheduledAt", "UNKNOWN_FIELD"),
    ]
    for body, path, code in cases:
        resp = await pf.env.rest.post(pf.url(item), json=body, headers=pf.env.auth(pf.world.full_key))
        assert resp.status_code == 400, (body, resp.json())
        assert (path, code) in {(i["field_path"], i["code"]) for i in resp.json()["error"]["issues"]}, resp.json()
    resp = await pf.env.rest.post(pf.url(new_id("ci")), json={"integration_ids": ids},
                                  headers=pf.env.auth(pf.world.full_key))
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "CONTENT_ITEM_NOT_FOUND"


async def test_preflight_writes_nothing_and_calls_no_provider(pf) -> None:
    ready = await pf.item()
    blocked = await pf.item(tiktok_settings={"media_ids": [pf.video], "post_type": "VIDEO"})

    async def stamps() -> dict[str, Any]:
        async with pf.env.db.session(write=False) as s:
            rows = (await s.exec(select(ContentItem.id, ContentItem.updated_at))).all()
            media = (await s.exec(select(Media.id, Media.updated_at))).all()
            accounts = (await s.exec(select(Integration.id, Integration.updated_at, Integration.status))).all()
        return {"items": sorted(rows), "media": sorted(media), "accounts": sorted(accounts)}

    counts, before = await pf.env.row_counts(), await stamps()
    pf.env.clock.advance(minutes=5)
    for item in (ready, blocked):
        for approval in (None, "pending_review", "approved"):
            resp = await pf.run(item, scheduled_at="2026-03-05T10:30:00Z", approval_status=approval)
            assert resp.status_code == 200
    assert await pf.env.row_counts() == counts
    assert await stamps() == before
    assert pf.env.sandbox.calls == []


async def test_fingerprint_is_stable_and_tracks_every_checked_input(pf, monkeypatch) -> None:
    env = pf.env
    item = await pf.item()
    body = {"scheduled_at": "2026-03-05T10:30:00Z", "approval_status": "pending_review"}

    async def fp(**changes: Any) -> str:
        return (await pf.run(item, **{**body, **changes})).json()["data"]["fingerprint"]

    base = await fp()
    assert await fp() == base
    env.clock.advance(minutes=1)
    assert await fp() == base  # the clock alone changes nothing that was checked
    assert await fp(scheduled_at="2026-03-05T10:31:00Z") != base
    assert await fp(scheduled_at="2026-03-05T11:30:00+01:00") == base  # same instant, other offset
    assert await fp(approval_status="approved") != base
    assert await fp(integration_ids=[pf.ig]) != base

    seen = {base}

    async def changed() -> str:
        new = await fp()
        assert new not in seen
        seen.add(new)
        return new

    # content
    resp = await env.rest.patch(f"/v1/brands/{pf.brand.id}/content-items/{item}", json={"name": "Renamed"},
                                headers=env.auth(pf.world.full_key))
    assert resp.status_code == 200, resp.json()
    await changed()
    # media facts
    async with env.db.session(write=True) as s:
        (await s.get(Media, pf.image)).width = 1081
    await changed()
    # integration status
    async with env.db.session(write=True) as s:
        (await s.get(Integration, pf.tt)).status = "expired"
    expired = await changed()
    assert expired != base
    # rules version
    import tools.schedules.rules_engine as engine

    monkeypatch.setattr(engine, "VALIDATION_VERSION", "2099-01-01.1")
    await changed()


async def test_aspect_ratio_blocker_carries_repair_options(pf) -> None:
    banner = await add_media(pf.env, pf.brand, width=3000, height=1000)
    item = await pf.item(instagram_settings={"media_ids": [banner], "post_type": "GRID_POST"})
    data = (await pf.run(item, integration_ids=[pf.ig])).json()["data"]
    (blocker,) = [i for i in data["blockers"] if i["code"] == "MEDIA_ASPECT_RATIO_OUT_OF_RANGE"]
    assert blocker["repair_action"]["action"] == "create_repair_derivative"
    modes = {o["mode"]: o for o in blocker["repair_options"]}
    assert set(modes) == {"centre_crop", "pad"}
    assert all(o["media_id"] == banner and o["integration_id"] == pf.ig for o in modes.values())
    assert any(o["available"] and o["id"].startswith("ro_") for o in modes.values())
    # issues without options do not carry the key at all
    assert all("repair_options" not in i for i in data["warnings"])


async def test_rest_and_direct_dispatch_agree(pf) -> None:
    item = await pf.item(tiktok_settings={"media_ids": [pf.video], "post_type": "VIDEO"})
    args = {"integration_ids": sorted([pf.ig, pf.tt]), "scheduled_at": "2026-03-05T10:30:00Z"}
    rest = (await pf.run(item, **args)).json()["data"]
    direct = await pf.env.call("preflight_content", pf.world.full_key, brand_id=pf.brand.id, content_item_id=item,
                               **args)
    assert direct.status == 200 and direct.body["data"] == rest
