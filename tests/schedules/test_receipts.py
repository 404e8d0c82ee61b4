"""Publish receipts and provider cleanup: exactly the latest run, redacted, a single-use expiring authority that
appears only for a bounded run, cleanup queued (never performed) by the route and done by the worker."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from sqlmodel import select

from server.worker import Worker
from storage.tables.integrations import Integration
from storage.tables.jobs import Job
from storage.tables.publishing import PublishExecution, PublishTarget
from tests.publishing.outcomes import ACTION_REQUIRED, FAILED, PROVIDER_TEXT, PUBLISHED, run, schedule

pytestmark = pytest.mark.anyio


class Setup:
    def __init__(self, world: Any) -> None:
        self.world, self.env = world, world.env
        self.brand = world.brand_a
        self.ig, self.tt, self.fb, self.li = (world.integrations[p] for p in ("instagram", "tiktok", "facebook",
                                                                               "linkedin"))

    def url(self, schedule_id: str, what: str = "receipt", brand_id: str | None = None) -> str:
        return f"/v1/brands/{brand_id or self.brand.id}/schedules/{schedule_id}/{what}"

    async def receipt(self, schedule_id: str, secret: str | None = None, brand_id: str | None = None) -> Any:
        return await self.env.rest.get(self.url(schedule_id, brand_id=brand_id),
                                        headers=self.env.auth(secret or self.world.full_key))

    async def cleanup(self, schedule_id: str, body: dict[str, Any], key: str | None = "k1",
                      secret: str | None = None) -> Any:
        headers = self.env.auth(secret or self.world.full_key, **({"Idempotency-Key": key} if key else {}))
        return await self.env.rest.post(self.url(schedule_id, "provider-cleanup"), json=body, headers=headers)

    async def finished_run(self, outcomes: list[tuple[Any, dict[str, Any]]] | None = None) -> tuple[Any, dict[str, Any]]:
        outcomes = outcomes or [(self.ig, PUBLISHED), (self.tt, FAILED), (self.fb, ACTION_REQUIRED)]
        sched = await schedule(self.env, self.brand, [i for i, _ in outcomes], self.world.full_key)
        return sched, await run(self.env, sched, outcomes)

    async def authority(self, schedule_id: str) -> str:
        resp = await self.receipt(schedule_id)
        assert resp.status_code == 200, resp.json()
        return resp.json()["data"]["cleanup_authority"]

    async def jobs(self) -> list[Job]:
        async with self.env.db.session(write=False) as s:
            return list((await s.exec(select(Job).where(Job.kind == "provider_cleanup"))).all())

    async def target(self, target_id: str) -> PublishTarget:
        async with self.env.db.session(write=False) as s:
            return await s.get(PublishTarget, target_id)


@pytest.fixture
async def rc(world) -> Setup:
    return Setup(world)


def error(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.json()
    body = resp.json()
    assert body["success"] is False and body["error"]["code"] == code, body
    return body["error"]


# -- receipt -------------------------------------------------------------------------------------------------------


async def test_no_run_yet_is_a_null_receipt_with_wait_for_execution(rc) -> None:
    sched = await schedule(rc.env, rc.brand, [rc.ig], rc.world.full_key)
    resp = await rc.receipt(sched.id)
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    assert data["schedule_id"] == sched.id and data["receipt"] is None
    assert [a["action"] for a in data["next_actions"]] == ["wait_for_execution"]
    assert "cleanup_authority" not in data and "provider_cleanup" not in data["links"]
    assert data["links"]["self"] == {"href": rc.url(sched.id), "required_scopes": ["schedule:read"]}


async def test_finished_run_receipt_has_redacted_outcomes_and_a_cleanup_authority(rc) -> None:
    sched, seeded = await rc.finished_run()
    resp = await rc.receipt(sched.id)
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    receipt = data["receipt"]
    assert receipt["execution_id"] == seeded["execution"].id
    assert receipt["status"] == "partially_published" and receipt["bounded"] is True
    assert receipt["started_at"] == "2026-03-02T09:00:00.000Z" and receipt["finished_at"] == receipt["started_at"]
    assert receipt["summary"] == {"total": 3, "published": 1, "failed": 1, "action_required": 1, "in_progress": 0}
    by_platform = {t["platform"]: t for t in receipt["targets"]}
    assert set(by_platform["instagram"]) == {"integration_id", "platform", "state", "attempts", "attempted_at",
                                             "settled_at", "failure_reason", "next_action", "has_permalink",
                                             "cleanup_status"}
    assert by_platform["instagram"] | {"attempted_at": None, "settled_at": None} == {
        "integration_id": rc.ig.id, "platform": "instagram", "state": "published", "attempts": 1,
        "attempted_at": None, "settled_at": None, "failure_reason": None, "next_action": None, "has_permalink": True,
        "cleanup_status": None}
    assert by_platform["tiktok"]["state"] == "failed" and by_platform["tiktok"]["next_action"] == "repair_and_preflight"
    assert by_platform["facebook"]["next_action"] == "reconnect_integration"
    assert by_platform["facebook"]["failure_reason"].startswith("The account's authorisation")
    assert data["cleanup_authority"].startswith("cla_")
    assert data["cleanup_authority_expires_at"] == "2026-03-02T09:30:00.000Z"
    assert data["links"]["provider_cleanup"] == {"href": rc.url(sched.id, "provider-cleanup"), "method": "POST",
                                                 "required_scopes": ["publish:execute"]}
    assert "request_provider_cleanup" in [a["action"] for a in data["next_actions"]]


async def test_receipt_never_shows_provider_ids_errors_tokens_or_links(rc) -> None:
    sched, seeded = await rc.finished_run()
    async with rc.env.db.session(write=False) as s:
        creds = (await s.get(Integration, rc.ig.id)).credentials
    text = json.dumps((await rc.receipt(sched.id)).json())
    secrets = [PROVIDER_TEXT, "upstream", "abc123", "998877", "sandbox.socialpub.invalid"]
    for target in seeded["targets"].values():
        secrets += [target.idempotency_token, target.id]
        if target.publish_id:
            secrets.append(target.publish_id)
    secrets += [str(v) for v in (creds or {}).values() if isinstance(v, str) and len(v) > 6]
    leaked = [s for s in secrets if s in text]
    assert not leaked
    assert "publish_id" not in text and "idempotency_token" not in text and "permalink_url" not in text


async def test_receipt_reads_only_the_latest_run(rc) -> None:
    sched, first = await rc.finished_run([(rc.ig, PUBLISHED), (rc.tt, PUBLISHED)])
    rc.env.clock.advance(minutes=5)
    second = await run(rc.env, sched, [(rc.ig, FAILED), (rc.tt, FAILED)])
    data = (await rc.receipt(sched.id)).json()["data"]
    assert data["receipt"]["execution_id"] == second["execution"].id != first["execution"].id
    assert data["receipt"]["status"] == "failed"
    assert {t["state"] for t in data["receipt"]["targets"]} == {"failed"}
    # The earlier run's published posts are not offered for cleanup: this run published nothing.
    assert "cleanup_authority" not in data and "provider_cleanup" not in data["links"]
    assert first["targets"][rc.ig.id].publish_id not in json.dumps(data)


async def test_run_in_progress_is_not_bounded_and_has_no_authority(rc) -> None:
    sched = await schedule(rc.env, rc.brand, [rc.ig, rc.tt], rc.world.full_key)
    await run(rc.env, sched, [(rc.ig, PUBLISHED), (rc.tt, {"state": "retry_wait", "error_kind": "transient"})],
              finished=False)
    data = (await rc.receipt(sched.id)).json()["data"]
    assert data["receipt"]["bounded"] is False and data["receipt"]["status"] == "processing"
    assert data["receipt"]["summary"]["in_progress"] == 1
    assert [a["action"] for a in data["next_actions"]] == ["wait_for_execution"]
    assert "cleanup_authority" not in data and "provider_cleanup" not in data["links"]


async def test_finished_run_without_published_posts_offers_no_cleanup(rc) -> None:
    sched, _ = await rc.finished_run([(rc.tt, FAILED), (rc.fb, ACTION_REQUIRED)])
    data = (await rc.receipt(sched.id)).json()["data"]
    assert data["receipt"]["bounded"] is True and data["receipt"]["status"] == "failed"
    assert "cleanup_authority" not in data and "provider_cleanup" not in data["links"]


async def test_receipt_refusals_scope_brand_and_missing(rc) -> None:
    sched, _ = await rc.finished_run()
    no_read = await rc.env.key(rc.world.ws, scopes=["publications:read", "publish:execute"], name="no read")
    err = error(await rc.receipt(sched.id, secret=no_read), 403, "INSUFFICIENT_SCOPE")
    assert err["details"]["missing_scopes"] == ["schedule:read"]
    error(await rc.receipt(sched.id, secret=rc.world.key_b_only), 404, "NOT_FOUND")
    # the Schedule exists in brand A only: asked through brand B it is missing, not disclosed
    error(await rc.receipt(sched.id, brand_id=rc.world.brand_b.id), 404, "NOT_FOUND")
    error(await rc.receipt("sch_01JAAAAAAAAAAAAAAAAAAAAAAA"), 404, "NOT_FOUND")


async def test_authority_is_stable_within_its_window_and_expires(rc) -> None:
    sched, _ = await rc.finished_run()
    first = await rc.authority(sched.id)
    rc.env.clock.advance(minutes=14)
    assert await rc.authority(sched.id) == first
    rc.env.clock.advance(minutes=2)  # the next quarter hour: a new authority with a later expiry
    later = (await rc.receipt(sched.id)).json()["data"]
    assert later["cleanup_authority"] != first and later["cleanup_authority_expires_at"] == "2026-03-02T09:45:00.000Z"


async def test_receipt_is_a_pure_read(rc) -> None:
    sched, _ = await rc.finished_run()
    before = await rc.env.row_counts()
    async with rc.env.db.session(write=False) as s:
        hash_before = (await s.get(PublishExecution, (await s.exec(select(PublishExecution.id))).first())
                       ).cleanup_authority_hash
    await rc.receipt(sched.id)
    assert await rc.env.row_counts() == before and hash_before is None
    assert rc.env.sandbox.calls == []


# -- provider cleanup ------------------------------------------------------------------------------------------------


async def test_cleanup_queues_published_targets_only_and_calls_no_provider(rc) -> None:
    sched, seeded = await rc.finished_run()
    authority = await rc.authority(sched.id)
    resp = await rc.cleanup(sched.id, {"cleanup_authority": authority})
    assert resp.status_code == 200, resp.json()
    data = resp.json()["data"]
    assert data["outcome"] == "cleanup_queued" and data["queued"] == 1 and data["skipped"] == 2
    assert data["execution_id"] == seeded["execution"].id
    assert {t["platform"]: (t["cleanup"], t["skip_reason"]) for t in data["targets"]} == {
        "instagram": ("queued", None), "tiktok": ("skipped", "not_published"),
        "facebook": ("skipped", "not_published")}
    assert rc.env.sandbox.calls == []
    jobs = await rc.jobs()
    ig_target = seeded["targets"][rc.ig.id]
    assert [(j.payload["target_id"], j.dedupe_key) for j in jobs] == [(ig_target.id,
                                                                      f"provider_cleanup:{ig_target.id}")]
    assert (await rc.target(ig_target.id)).cleanup_status == "queued"
    assert (await rc.target(seeded["targets"][rc.tt.id].id)).cleanup_status is None
    assert "sbx_" not in json.dumps(resp.json())
    # the receipt no longer offers cleanup: nothing published is left uncleaned
    after = (await rc.receipt(sched.id)).json()["data"]
    assert "cleanup_authority" not in after
    assert {t["platform"]: t["cleanup_status"] for t in after["receipt"]["targets"]}["instagram"] == "queued"


async def test_worker_deletes_each_published_post_once(rc) -> None:
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED), (rc.li, PUBLISHED), (rc.tt, FAILED)])
    resp = await rc.cleanup(sched.id, {"cleanup_authority": await rc.authority(sched.id)})
    assert resp.json()["data"]["queued"] == 2
    await Worker(rc.env.rt).run_once()
    deletes = sorted((c["integration_id"], c["publish_id"]) for c in rc.env.sandbox.calls)
    assert [c["op"] for c in rc.env.sandbox.calls] == ["delete_post", "delete_post"]
    assert deletes == sorted((i.id, seeded["targets"][i.id].publish_id) for i in (rc.ig, rc.li))
    for integration in (rc.ig, rc.li):
        assert (await rc.target(seeded["targets"][integration.id].id)).cleanup_status == "done"
    assert {j.status for j in await rc.jobs()} == {"done"}
    await Worker(rc.env.rt).run_once()
    assert len(rc.env.sandbox.calls) == 2  # nothing runs twice
    targets = (await rc.receipt(sched.id)).json()["data"]["receipt"]["targets"]
    assert {t["platform"]: (t["cleanup_status"], t["has_permalink"]) for t in targets} == {
        "instagram": ("done", False), "linkedin": ("done", False), "tiktok": (None, False)}


async def test_replay_returns_the_stored_result_and_changed_input_conflicts(rc) -> None:
    sched, _ = await rc.finished_run()
    authority = await rc.authority(sched.id)
    first = await rc.cleanup(sched.id, {"cleanup_authority": authority}, key="same")
    replay = await rc.cleanup(sched.id, {"cleanup_authority": authority}, key="same")
    assert replay.status_code == 200 and replay.headers["Idempotency-Replayed"] == "true"
    assert replay.json()["data"] == {**first.json()["data"], "outcome": "replayed"}
    assert len(await rc.jobs()) == 1
    other, _ = await rc.finished_run()
    changed = await rc.cleanup(sched.id, {"cleanup_authority": await rc.authority(other.id)}, key="same")
    error(changed, 409, "IDEMPOTENCY_KEY_CONFLICT")
    assert len(await rc.jobs()) == 1 and rc.env.sandbox.calls == []


async def test_a_spent_authority_cannot_queue_again(rc) -> None:
    sched, _ = await rc.finished_run()
    authority = await rc.authority(sched.id)
    assert (await rc.cleanup(sched.id, {"cleanup_authority": authority}, key="a")).status_code == 200
    err = error(await rc.cleanup(sched.id, {"cleanup_authority": authority}, key="b"), 409, "CONFLICT")
    assert err["next_action"] == "get_schedule_receipt"
    assert len(await rc.jobs()) == 1


async def test_wrong_forged_and_other_schedule_authorities_are_refused(rc) -> None:
    sched, _ = await rc.finished_run()
    other, _ = await rc.finished_run()
    good = await rc.authority(sched.id)
    forged = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    later_expiry = f"cla_{int(good[4:14]) + 900:010d}{good[14:]}"
    for bad in (forged, later_expiry, await rc.authority(other.id)):
        err = error(await rc.cleanup(sched.id, {"cleanup_authority": bad}, key=f"k-{bad[-6:]}"), 422,
                    "DOMAIN_VALIDATION_FAILED")
        assert err["issues"][0]["code"] == "CLEANUP_AUTHORITY_INVALID"
        assert err["next_action"] == "get_schedule_receipt"
    for malformed in ("", "sbx_secret_123", "cla_x", good + "A"):
        error(await rc.cleanup(sched.id, {"cleanup_authority": malformed}, key="m" + str(len(malformed))), 400,
              "MALFORMED_REQUEST")
    assert await rc.jobs() == [] and rc.env.sandbox.calls == []


async def test_expired_authority_is_refused(rc) -> None:
    sched, _ = await rc.finished_run()
    authority = await rc.authority(sched.id)
    rc.env.clock.advance(minutes=30)
    err = error(await rc.cleanup(sched.id, {"cleanup_authority": authority}), 422, "DOMAIN_VALIDATION_FAILED")
    assert err["issues"][0]["code"] == "CLEANUP_AUTHORITY_EXPIRED"
    assert await rc.jobs() == []


async def test_authority_of_an_earlier_run_is_refused(rc) -> None:
    sched, _ = await rc.finished_run([(rc.ig, PUBLISHED)])
    authority = await rc.authority(sched.id)
    await run(rc.env, sched, [(rc.ig, PUBLISHED)])  # a new latest run
    err = error(await rc.cleanup(sched.id, {"cleanup_authority": authority}), 422, "DOMAIN_VALIDATION_FAILED")
    assert err["issues"][0]["code"] == "CLEANUP_AUTHORITY_INVALID"
    assert await rc.jobs() == []


async def test_cleanup_refusals_scope_body_key_and_state(rc) -> None:
    sched, _ = await rc.finished_run()
    authority = await rc.authority(sched.id)
    no_publish = await rc.env.key(rc.world.ws, scopes=["schedule:read", "schedule:write"], name="no publish")
    err = error(await rc.cleanup(sched.id, {"cleanup_authority": authority}, secret=no_publish), 403,
                "INSUFFICIENT_SCOPE")
    assert err["details"]["required_scopes"] == ["publish:execute"]
    err = error(await rc.cleanup(sched.id, {"cleanup_authority": authority, "publish_id": "sbx_secret_1"}), 400,
                "MALFORMED_REQUEST")
    assert err["issues"][0]["field_path"] == "$.publish_id"
    error(await rc.cleanup(sched.id, {"cleanup_authority": authority}, key=None), 400, "MALFORMED_REQUEST")
    error(await rc.cleanup(sched.id, {"cleanup_authority": authority}, secret=rc.world.key_b_only), 404, "NOT_FOUND")
    # a run in progress has no bounded outcome to clean up
    busy = await schedule(rc.env, rc.brand, [rc.ig], rc.world.full_key)
    await run(rc.env, busy, [(rc.ig, {"state": "attempting"})], finished=False)
    err = error(await rc.cleanup(busy.id, {"cleanup_authority": authority}, key="busy"), 409, "CONFLICT")
    assert err["next_action"] == "wait_for_execution"
    never = await schedule(rc.env, rc.brand, [rc.ig], rc.world.full_key)
    error(await rc.cleanup(never.id, {"cleanup_authority": authority}, key="never"), 409, "CONFLICT")
    assert await rc.jobs() == [] and rc.env.sandbox.calls == []


async def test_retryable_delete_failure_retries_then_succeeds(rc) -> None:
    async with rc.env.db.session(write=True) as s:
        row = await s.get(Integration, rc.ig.id)
        row.provider_state = {"faults": {"delete_post": "transient:1"}}
        s.add(row)
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED)])
    await rc.cleanup(sched.id, {"cleanup_authority": await rc.authority(sched.id)})
    target_id = seeded["targets"][rc.ig.id].id
    await Worker(rc.env.rt).run_once()
    assert (await rc.target(target_id)).cleanup_status == "queued"
    [job] = await rc.jobs()
    assert job.status == "queued" and job.last_error == "transient"
    rc.env.clock.advance(seconds=10)
    await Worker(rc.env.rt).run_once()
    assert (await rc.target(target_id)).cleanup_status == "done"
    assert [c["op"] for c in rc.env.sandbox.calls] == ["delete_post", "delete_post"]


async def test_final_delete_failure_marks_failed_and_cleanup_can_be_requested_again(rc) -> None:
    async with rc.env.db.session(write=True) as s:
        row = await s.get(Integration, rc.ig.id)
        row.provider_state = {"faults": {"delete_post": "rejected:1"}}
        s.add(row)
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED)])
    first = await rc.authority(sched.id)
    await rc.cleanup(sched.id, {"cleanup_authority": first}, key="one")
    await Worker(rc.env.rt).run_once()
    target_id = seeded["targets"][rc.ig.id].id
    assert (await rc.target(target_id)).cleanup_status == "failed"
    data = (await rc.receipt(sched.id)).json()["data"]
    assert data["receipt"]["targets"][0]["cleanup_status"] == "failed"
    second = data["cleanup_authority"]
    assert second != first  # the spent one never comes back
    resp = await rc.cleanup(sched.id, {"cleanup_authority": second}, key="two")
    assert resp.status_code == 200 and resp.json()["data"]["queued"] == 1
    await Worker(rc.env.rt).run_once()
    assert (await rc.target(target_id)).cleanup_status == "done"


async def test_mcp_and_rest_give_the_same_receipt(rc) -> None:
    sched, _ = await rc.finished_run()
    rest = (await rc.receipt(sched.id)).json()["data"]
    direct = await rc.env.call("get_schedule_receipt", rc.world.full_key, brand_id=rc.brand.id, schedule_id=sched.id)
    assert direct.status == 200 and direct.body["data"] == rest


async def test_concurrent_requests_with_one_authority_queue_once(rc) -> None:
    sched, _ = await rc.finished_run([(rc.ig, PUBLISHED), (rc.li, PUBLISHED)])
    authority = await rc.authority(sched.id)
    results: list[Any] = []

    async def send(key: str) -> None:
        results.append(await rc.env.call("request_provider_cleanup", rc.world.full_key, idempotency_key=key,
                                         brand_id=rc.brand.id, schedule_id=sched.id, cleanup_authority=authority))

    async with anyio.create_task_group() as tg:
        for key in ("race-1", "race-2", "race-3"):
            tg.start_soon(send, key)
    statuses = sorted(r.status for r in results)
    assert statuses[0] == 200 and statuses[1:] == [409, 409], [r.body for r in results]
    assert {r.body["error"]["code"] for r in results if r.status == 409} == {"CONFLICT"}
    assert len(await rc.jobs()) == 2 and rc.env.sandbox.calls == []


async def test_cancelled_schedule_without_run_has_no_next_actions(rc) -> None:
    sched = await schedule(rc.env, rc.brand, [rc.ig], rc.world.full_key)
    async with rc.env.db.session(write=True) as s:
        row = await s.get(type(sched), sched.id)
        row.status, row.cancelled_at = "cancelled", rc.env.clock.now()
        s.add(row)
    data = (await rc.receipt(sched.id)).json()["data"]
    assert data["receipt"] is None and data["next_actions"] == []


async def test_valid_authority_with_nothing_left_to_clean_is_a_conflict(rc) -> None:
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED)])
    authority = await rc.authority(sched.id)
    async with rc.env.db.session(write=True) as s:
        target = await s.get(PublishTarget, seeded["targets"][rc.ig.id].id)
        target.cleanup_status = "done"
        s.add(target)
    err = error(await rc.cleanup(sched.id, {"cleanup_authority": authority}), 409, "CONFLICT")
    assert err["next_action"] == "get_schedule_receipt"
    assert await rc.jobs() == []


async def test_cleanup_of_a_disconnected_account_fails_without_a_provider_call(rc) -> None:
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED)])
    await rc.cleanup(sched.id, {"cleanup_authority": await rc.authority(sched.id)})
    async with rc.env.db.session(write=True) as s:
        row = await s.get(Integration, rc.ig.id)
        row.status = "expired"
        s.add(row)
    await Worker(rc.env.rt).run_once()
    assert (await rc.target(seeded["targets"][rc.ig.id].id)).cleanup_status == "failed"
    assert rc.env.sandbox.calls == []


async def test_a_hanging_delete_times_out_and_is_retried(rc, monkeypatch) -> None:
    from tools.schedules import receipts
    monkeypatch.setattr(receipts, "PROVIDER_TIMEOUT_SECONDS", 0.05)
    async with rc.env.db.session(write=True) as s:
        row = await s.get(Integration, rc.ig.id)
        row.provider_state = {"faults": {"delete_post": "hang:1"}}
        s.add(row)
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED)])
    await rc.cleanup(sched.id, {"cleanup_authority": await rc.authority(sched.id)})
    await Worker(rc.env.rt).run_once()
    [job] = await rc.jobs()
    assert job.status == "queued" and job.last_error == "timeout"
    rc.env.clock.advance(seconds=10)
    await Worker(rc.env.rt).run_once()
    assert (await rc.target(seeded["targets"][rc.ig.id].id)).cleanup_status == "done"


async def test_retryable_failures_until_the_last_attempt_mark_the_cleanup_failed(rc) -> None:
    async with rc.env.db.session(write=True) as s:
        row = await s.get(Integration, rc.ig.id)
        row.provider_state = {"faults": {"delete_post": "unavailable"}}
        s.add(row)
    sched, seeded = await rc.finished_run([(rc.ig, PUBLISHED)])
    await rc.cleanup(sched.id, {"cleanup_authority": await rc.authority(sched.id)})
    for _ in range(5):
        await Worker(rc.env.rt).run_once()
        rc.env.clock.advance(minutes=1)
    [job] = await rc.jobs()
    assert job.attempts == 5 and job.status == "done"
    assert (await rc.target(seeded["targets"][rc.ig.id].id)).cleanup_status == "failed"
    assert len(rc.env.sandbox.calls) == 5
    # cleanup may be asked for again (e.g. once the platform is back)
    assert "cleanup_authority" in (await rc.receipt(sched.id)).json()["data"]
