"""The publishing worker (tools/publishing/worker.py): due approved Schedules publish; held ones never do; failures,
retries with backoff, reconnection and crash recovery settle every target exactly once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from providers.base import ProviderError
from server.worker import Worker
from storage.tables.integrations import Integration
from storage.tables.publishing import PublishExecution, Schedule
from tests.publishing.support import (
    notification_types,
    publications_of,
    schedule_of,
    seed_post,
    seed_schedule,
    set_provider_state,
    targets_of,
)
from tools.publishing import attempts
from tools.publishing import worker as publishing
from tools.services.redaction import SAFE_FAILURES

pytestmark = pytest.mark.anyio
USERS = 2  # the world fixture's workspace has two users (one per key)


def publish_calls(env, integration_id: str | None = None) -> list[dict]:
    return [c for c in env.sandbox.calls if c["op"] == "publish"
            and (integration_id is None or c["integration_id"] == integration_id)]


async def setup(world, platforms=("instagram", "tiktok", "facebook", "linkedin"), **kwargs):
    env = world.env
    item, _ = await seed_post(env.db, world.brand_a, env.clock.now())
    ids = [world.integrations[p].id for p in platforms]
    sid = await seed_schedule(env.db, world.brand_a, item, ids, env.clock.now(), **kwargs)
    return sid, item, {p: world.integrations[p].id for p in platforms}


async def fault(env, integration_id: str, spec: str, op: str = "publish") -> None:
    async with env.db.session(write=True) as s:
        await set_provider_state(s, integration_id, {"faults": {op: spec}})


async def test_due_approved_schedule_publishes_every_target_once(world) -> None:
    env = world.env
    sid, item, ids = await setup(world)
    worker = Worker(env.rt, owner="w1")
    assert await publishing.publish_due(env.rt, "w1") == 0  # not due yet
    assert publish_calls(env) == []
    env.clock.advance(minutes=5)
    assert await worker.run_once() >= 1

    schedule = await schedule_of(env.db, sid)
    assert schedule.status == "published" and schedule.lease_owner is None and schedule.failure_reason is None
    async with env.db.session(write=False) as s:
        run = await s.get(PublishExecution, schedule.latest_execution_id)
    assert run.id.startswith("run_") and run.status == "published" and run.finished_at == env.clock.now()
    targets = await targets_of(env.db, sid)
    assert set(targets) == set(ids.values())
    assert {t.state for t in targets.values()} == {"published"}
    assert all(t.attempts == 1 and t.publish_id and t.execution_id == run.id for t in targets.values())
    tokens = {t.idempotency_token for t in targets.values()}
    assert len(tokens) == 4 and all(len(tok) <= 80 for tok in tokens)
    assert sorted(c["token"] for c in publish_calls(env)) == sorted(tokens)
    assert set(env.sandbox.ledger.publishes().values()) == {1}

    pubs = await publications_of(env.db, sid)
    assert {p.status for p in pubs.values()} == {"published"}
    ig, tt, fb = pubs[ids["instagram"]], pubs[ids["tiktok"]], pubs[ids["facebook"]]
    assert (ig.post_type, ig.media_type, ig.source, ig.post_name) == ("GRID_POST", "image", "calendar", "Spring launch")
    assert (tt.post_type, tt.media_type) == ("VIDEO", "video") and (fb.post_type, fb.media_type) == ("FB_TEXT", None)
    assert ig.post_id == item and ig.published_at == env.clock.now() and ig.publish_id == targets[ids["instagram"]].publish_id
    assert await notification_types(env.db, world.brand_a.id) == {"post_published": 4 * USERS}

    # a second pass finds nothing to do and publishes nothing again
    assert await publishing.publish_due(env.rt, "w2") == 0
    assert len(publish_calls(env)) == 4


async def test_post_request_takes_copy_and_media_urls_not_settings_text(world) -> None:
    env = world.env
    seen = []
    original = env.sandbox.publish

    async def spy(account, post):
        seen.append(post)
        return await original(account, post)

    env.sandbox.publish = spy
    sid, _, _ = await setup(world, platforms=("instagram",), at=env.clock.now())
    await publishing.publish_due(env.rt, "w1")
    [post] = seen
    assert post.text.startswith("New roast") and "#coffee" in post.text and post.post_type == "GRID_POST"
    assert len(post.media) == 1 and post.media[0]["url"].startswith(env.rt.settings.resolved_media_url + "/assets/")
    assert post.settings["post_type"] == "GRID_POST" and post.idempotency_token
    assert (await schedule_of(env.db, sid)).status == "published"


@pytest.mark.parametrize("approval", ["pending_review", "rejected"])
async def test_held_schedule_never_publishes_until_approved(world, approval) -> None:
    env = world.env
    sid, _, ids = await setup(world, approval_status=approval)
    env.clock.advance(hours=2)
    assert await publishing.publish_due(env.rt, "w1") == 0
    schedule = await schedule_of(env.db, sid)
    assert schedule.status == "action_required" and schedule.latest_execution_id is None
    assert env.sandbox.calls == [] and await targets_of(env.db, sid) == {}

    async with env.db.session(write=True) as s:  # what approve_schedule does
        row = await s.get(Schedule, sid)
        row.approval_status, row.status, row.blocking_reason = "approved", "scheduled", None
        row.approved_by_key, row.approved_at = "key_approver", env.clock.now()
    assert await publishing.publish_due(env.rt, "w1") == 1
    assert (await schedule_of(env.db, sid)).status == "published"
    assert len(publish_calls(env)) == len(ids)


async def test_cancelled_schedule_never_publishes(world) -> None:
    env = world.env
    sid, _, _ = await setup(world)
    async with env.db.session(write=True) as s:
        row = await s.get(Schedule, sid)
        row.status, row.cancelled_at = "cancelled", env.clock.now()
    env.clock.advance(hours=1)
    assert await publishing.publish_due(env.rt, "w1") == 0
    assert env.sandbox.calls == [] and (await schedule_of(env.db, sid)).status == "cancelled"


async def test_approved_without_publish_authority_is_held_not_published(world) -> None:
    env = world.env
    sid, _, _ = await setup(world, key_id=None)  # approved, but no key with publish:execute recorded
    env.clock.advance(minutes=10)
    await publishing.publish_due(env.rt, "w1")
    schedule = await schedule_of(env.db, sid)
    assert env.sandbox.calls == []
    assert (schedule.status, schedule.approval_status) == ("action_required", "pending_review")
    assert schedule.blocking_reason is not None and schedule.blocking_reason["code"] == "APPROVAL_PENDING"
    assert schedule.lease_owner is None
    assert await publishing.publish_due(env.rt, "w1") == 0


async def test_rejected_target_fails_safely_while_the_others_publish(world) -> None:
    env = world.env
    sid, _, ids = await setup(world)
    await fault(env, ids["instagram"], "rejected")
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")

    targets = await targets_of(env.db, sid)
    ig = targets[ids["instagram"]]
    assert ig.state == "failed" and ig.attempts == 1 and ig.error_kind == "rejected" and ig.publish_id is None
    assert ig.failure_reason == SAFE_FAILURES["rejected"][0] and "sandbox" not in SAFE_FAILURES["rejected"][0]
    assert {targets[ids[p]].state for p in ("tiktok", "facebook", "linkedin")} == {"published"}
    pubs = await publications_of(env.db, sid)
    assert pubs[ids["instagram"]].status == "failed" and pubs[ids["instagram"]].failure_reason == ig.failure_reason
    assert pubs[ids["instagram"]].published_at is None and pubs[ids["instagram"]].publish_id is None
    assert (await schedule_of(env.db, sid)).status == "partially_published"
    assert await notification_types(env.db, world.brand_a.id) == {"post_published": 3 * USERS,
                                                                  "post_failed": 1 * USERS}
    assert len(publish_calls(env, ids["instagram"])) == 1  # final errors are not retried


async def test_every_target_failing_fails_the_schedule(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram",))
    await fault(env, ids["instagram"], "malformed")
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    schedule = await schedule_of(env.db, sid)
    assert schedule.status == "failed" and schedule.failure_reason == "1 of 1 targets did not publish."
    async with env.db.session(write=False) as s:
        assert (await s.get(PublishExecution, schedule.latest_execution_id)).status == "failed"


async def test_transient_failure_heals_with_backoff(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram", "tiktok"))
    await fault(env, ids["tiktok"], "transient:2")
    env.clock.advance(minutes=5)
    start = env.clock.now()
    await publishing.publish_due(env.rt, "w1")
    tt = (await targets_of(env.db, sid))[ids["tiktok"]]
    schedule = await schedule_of(env.db, sid)
    assert tt.state == "retry_wait" and tt.attempts == 1 and tt.next_attempt_at == start + timedelta(seconds=30)
    assert schedule.status == "publishing" and schedule.lease_owner is None
    assert schedule.next_attempt_at == tt.next_attempt_at
    assert (await targets_of(env.db, sid))[ids["instagram"]].state == "published"

    env.clock.advance(seconds=29)
    assert await publishing.publish_due(env.rt, "w1") == 0  # not yet
    env.clock.advance(seconds=1)
    assert await publishing.publish_due(env.rt, "w2") == 1
    tt = (await targets_of(env.db, sid))[ids["tiktok"]]
    assert tt.state == "retry_wait" and tt.attempts == 2 and tt.next_attempt_at == env.clock.now() + timedelta(minutes=1)
    env.clock.advance(minutes=1)
    await publishing.publish_due(env.rt, "w1")
    tt = (await targets_of(env.db, sid))[ids["tiktok"]]
    assert tt.state == "published" and tt.attempts == 3
    assert (await schedule_of(env.db, sid)).status == "published"
    # each retry asked the provider for the token first; the instagram target was never attempted again
    ops = [c["op"] for c in env.sandbox.calls if c["integration_id"] == ids["tiktok"]]
    assert ops == ["publish", "find_post", "publish", "find_post", "publish"]
    assert len(publish_calls(env, ids["instagram"])) == 1
    assert set(env.sandbox.ledger.publishes().values()) == {1}
    assert await notification_types(env.db, world.brand_a.id) == {"post_published": 2 * USERS}


async def test_retryable_failure_is_final_after_the_bound(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("linkedin",))
    await fault(env, ids["linkedin"], "unavailable")
    env.clock.advance(minutes=5)
    for _ in range(publishing.MAX_ATTEMPTS):
        await publishing.publish_due(env.rt, "w1")
        env.clock.advance(hours=1)
    target = (await targets_of(env.db, sid))[ids["linkedin"]]
    assert target.state == "failed" and target.attempts == publishing.MAX_ATTEMPTS
    assert target.failure_reason == SAFE_FAILURES["unavailable"][0]
    assert (await schedule_of(env.db, sid)).status == "failed"
    assert len(publish_calls(env)) == publishing.MAX_ATTEMPTS
    assert await publishing.publish_due(env.rt, "w1") == 0


async def test_reauth_required_marks_the_account_and_asks_for_reconnection(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram", "facebook"))
    await fault(env, ids["facebook"], "expired_credentials")
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    targets = await targets_of(env.db, sid)
    assert targets[ids["facebook"]].state == "action_required"
    assert targets[ids["instagram"]].state == "published"
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, ids["facebook"])).status == "needs_reauth"
    assert (await schedule_of(env.db, sid)).status == "partially_published"
    assert (await publications_of(env.db, sid))[ids["facebook"]].status == "failed"
    assert await notification_types(env.db, world.brand_a.id) == {
        "post_published": USERS, "post_failed": USERS, "integration_needs_refresh": USERS}


async def test_disconnected_account_is_never_called(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram", "tiktok"))
    async with env.db.session(write=True) as s:
        (await s.get(Integration, ids["tiktok"])).status = "expired"
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    assert [c for c in env.sandbox.calls if c["integration_id"] == ids["tiktok"]] == []
    target = (await targets_of(env.db, sid))[ids["tiktok"]]
    assert target.state == "action_required" and target.attempts == 0
    assert (await schedule_of(env.db, sid)).status == "partially_published"


async def test_missing_settings_skip_the_target_without_a_provider_call(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram", "youtube"))  # the item has no youtube_settings
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    yt = (await targets_of(env.db, sid))[ids["youtube"]]
    assert yt.state == "failed" and yt.failure_reason is not None and "youtube_settings" in yt.failure_reason
    assert publish_calls(env, ids["youtube"]) == []


class Crash(BaseException):
    """A worker dying mid-call: not an Exception, so nothing in the worker catches it."""


async def test_crash_after_publish_before_settlement_is_recovered_without_publishing_again(world) -> None:
    env = world.env
    sid, _, _ = await setup(world, platforms=("instagram", "tiktok"))
    env.clock.advance(minutes=5)
    real = env.sandbox.publish

    async def publish_then_die(account, post):
        await real(account, post)
        raise Crash

    env.sandbox.publish = publish_then_die
    with pytest.RaisesGroup(Crash):  # a dying worker: nothing in it survives
        await publishing.publish_due(env.rt, "dead")
    env.sandbox.publish = real
    targets = await targets_of(env.db, sid)
    attempting = [t for t in targets.values() if t.state == "attempting"]
    assert len(attempting) == 1 and attempting[0].attempts == 1  # the post exists; the worker died unsettled

    # the lease is still held by the dead worker: nobody else may touch the run yet
    assert await publishing.publish_due(env.rt, "w2") == 0
    env.clock.advance(minutes=6)
    assert await publishing.publish_due(env.rt, "w2") == 1
    targets = await targets_of(env.db, sid)
    assert {t.state for t in targets.values()} == {"published"}
    assert set(env.sandbox.ledger.publishes().values()) == {1}
    recovered = targets[attempting[0].integration_id]
    assert recovered.attempts == 2 and recovered.publish_id
    assert len(publish_calls(env, recovered.integration_id)) == 1  # found, not published again
    assert (await schedule_of(env.db, sid)).status == "published"


async def test_crash_before_the_provider_call_publishes_once_with_the_same_token(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram",))
    env.clock.advance(minutes=5)
    real = env.sandbox.publish

    async def die(account, post):
        raise Crash

    env.sandbox.publish = die
    with pytest.RaisesGroup(Crash):  # a dying worker: nothing in it survives
        await publishing.publish_due(env.rt, "dead")
    env.sandbox.publish = real
    token = (await targets_of(env.db, sid))[ids["instagram"]].idempotency_token
    env.clock.advance(minutes=6)
    await publishing.publish_due(env.rt, "w2")
    target = (await targets_of(env.db, sid))[ids["instagram"]]
    assert target.state == "published" and target.idempotency_token == token
    assert env.sandbox.ledger.publishes() == {(ids["instagram"], token): 1}


async def test_a_worker_that_lost_its_lease_does_not_settle(world) -> None:
    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram",))
    env.clock.advance(minutes=5)
    real = env.sandbox.publish
    calls = []

    async def slow_then_fail(account, post):
        calls.append(1)
        if len(calls) == 1:  # worker A is slow: its lease expires and worker B recovers the run meanwhile
            env.clock.advance(minutes=6)
            env.sandbox.publish = real
            assert await publishing.publish_due(env.rt, "B") == 1
            raise ProviderError("transient", "timeout")
        return await real(account, post)

    env.sandbox.publish = slow_then_fail
    await publishing.publish_due(env.rt, "A")
    target = (await targets_of(env.db, sid))[ids["instagram"]]
    assert target.state == "published" and target.attempts == 2 and target.next_attempt_at is None
    assert (await schedule_of(env.db, sid)).status == "published"
    assert set(env.sandbox.ledger.publishes().values()) == {1}


async def test_a_provider_that_never_answers_times_out_and_is_retried(world, monkeypatch) -> None:
    env = world.env
    monkeypatch.setattr(attempts, "PROVIDER_TIMEOUT_SECONDS", 0.05)
    sid, _, ids = await setup(world, platforms=("instagram",))
    await fault(env, ids["instagram"], "hang:1")
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    target = (await targets_of(env.db, sid))[ids["instagram"]]
    assert target.state == "retry_wait" and target.error_kind == "transient" and target.attempts == 1
    env.clock.advance(seconds=30)
    await publishing.publish_due(env.rt, "w1")
    target = (await targets_of(env.db, sid))[ids["instagram"]]
    assert target.state == "published" and target.attempts == 2
    assert set(env.sandbox.ledger.publishes().values()) == {1}


async def test_a_deleted_account_is_action_required_without_a_call(world) -> None:
    env = world.env
    sid, _, _ = await setup(world, platforms=("instagram",))
    async with env.db.session(write=True) as s:  # the account was removed after scheduling
        row = await s.get(Schedule, sid)
        row.integration_ids = ["int_gone"]
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    target = (await targets_of(env.db, sid))["int_gone"]
    assert target.state == "action_required" and target.attempts == 0 and env.sandbox.calls == []
    assert (await schedule_of(env.db, sid)).status == "failed"
    pub = (await publications_of(env.db, sid))["int_gone"]
    assert pub.status == "failed" and pub.platform == "unknown"


async def test_the_receipt_publications_and_history_read_what_the_worker_wrote(world) -> None:
    env = world.env
    sid, item, ids = await setup(world, platforms=("instagram", "facebook"))
    await fault(env, ids["facebook"], "rejected")
    env.clock.advance(minutes=5)
    await publishing.publish_due(env.rt, "w1")
    brand = world.brand_a.id

    receipt = await env.rest.get(f"/v1/brands/{brand}/schedules/{sid}/receipt", headers=env.auth(world.full_key))
    assert receipt.status_code == 200, receipt.json()
    body = receipt.json()["data"]["receipt"]
    assert body["status"] == "partially_published"
    assert body["execution_id"] == (await schedule_of(env.db, sid)).latest_execution_id
    states = {t["integration_id"]: t["state"] for t in body["targets"]}
    assert states == {ids["instagram"]: "published", ids["facebook"]: "failed"}
    targets = await targets_of(env.db, sid)
    text = receipt.text
    assert all(t.idempotency_token not in text for t in targets.values())
    assert targets[ids["instagram"]].publish_id not in text

    pubs = await env.rest.get(f"/v1/brands/{brand}/publications", headers=env.auth(world.full_key))
    assert pubs.status_code == 200, pubs.json()
    by_account = {p["integration_id"]: p for p in pubs.json()["data"]}
    assert by_account[ids["instagram"]]["status"] == "published" and by_account[ids["instagram"]]["post_id"] == item
    assert by_account[ids["facebook"]]["failure_reason"] == SAFE_FAILURES["rejected"][0]

    history = await env.rest.get(f"/v1/brands/{brand}/history", headers=env.auth(world.full_key))
    assert history.status_code == 200, history.json()
    assert "sandbox.socialpub.invalid" in history.text  # the safe public link of the published post


async def test_credentials_the_vault_cannot_open_settle_action_required_once(world, caplog) -> None:
    """A replica without the shared vault key (SOCIALPUB_SECRET_KEYS): the target is settled action_required with
    a safe reason and one clear log line, not retried in a loop; the other targets publish."""
    import logging

    from cryptography.fernet import Fernet

    env = world.env
    sid, _, ids = await setup(world, platforms=("instagram", "facebook"))
    foreign = Fernet(Fernet.generate_key()).encrypt(b'{"access_token": "x"}').decode()
    async with env.db.session(write=True) as s:
        integration = await s.get(Integration, ids["instagram"])
        integration.credentials = {"sealed": foreign}
        s.add(integration)
    env.clock.advance(minutes=5)
    caplog.set_level(logging.INFO)
    await Worker(env.rt, owner="w1").run_once()
    targets = await targets_of(env.db, sid)
    ig = targets[ids["instagram"]]
    assert ig.state == "action_required" and ig.failure_reason is not None and "vault key" in ig.failure_reason
    assert ig.attempts == 0
    assert targets[ids["facebook"]].state == "published"
    assert publish_calls(env, ids["instagram"]) == []
    lines = [r for r in caplog.records if "cannot be decrypted" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.ERROR and not lines[0].exc_info
    assert foreign not in caplog.text
    env.clock.advance(hours=2)
    await Worker(env.rt, owner="w2").run_once()  # settled: nothing is tried again
    assert len([r for r in caplog.records if "cannot be decrypted" in r.getMessage()]) == 1
    assert (await schedule_of(env.db, sid)).lease_owner is None
