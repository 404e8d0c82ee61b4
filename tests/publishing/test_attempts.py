"""Provider attempts (tools/publishing/attempts.py), against the sandbox provider: what a target sends, the call
outside any transaction (errors become outcomes, a hang times out, a recovery finds the earlier post instead of
publishing again), and the safe words a failure is stored with."""

from __future__ import annotations

from datetime import timedelta

import pytest

from providers.base import ProviderError
from tests.publishing.support import seed_post, seed_schedule
from tools.publishing import attempts, claims, run_state
from tools.publishing.steps import Steps
from tools.services.redaction import ADAPTER_MARK, FAILURE_MAX, SAFE_FAILURES

pytestmark = pytest.mark.anyio


def test_target_token_is_stable_per_target_and_unique_across_targets() -> None:
    token = attempts.target_token("run_1", "int_a")
    assert token == attempts.target_token("run_1", "int_a") and token.startswith("sp_") and len(token) <= 80
    assert len({token, attempts.target_token("run_1", "int_b"), attempts.target_token("run_2", "int_a")}) == 3


def test_reason_is_our_safe_text_never_the_providers_words() -> None:
    error = ProviderError("rejected", "provider said: SECRET token abc")
    assert attempts.reason(error, "rejected") == SAFE_FAILURES["rejected"][0]
    assert "SECRET" not in attempts.reason(error, "rejected")
    own = ProviderError("rejected", "raw", safe_reason="The caption is too long for this network. " * 40)
    worded = attempts.reason(own, "rejected")
    assert worded.startswith(ADAPTER_MARK) and len(worded) == FAILURE_MAX


async def begin(world, platform: str = "instagram") -> tuple[attempts.Attempt, str]:
    """A claimed Schedule of one target whose first attempt is recorded: (attempt, target ID)."""
    env = world.env
    now = env.clock.now()
    item, _ = await seed_post(env.db, world.brand_a, now)
    await seed_schedule(env.db, world.brand_a, item, [world.integrations[platform].id], now,
                        at=now - timedelta(minutes=1))
    (sid,) = await claims.claim_due(env.rt, "w1", limit=1)
    steps = Steps(env.rt, group=False)
    begun = await steps.run(lambda tx: run_state.begin_run(tx, env.rt, "w1", sid))
    assert begun is not None
    runnable, attempt = begun
    assert isinstance(attempt, attempts.Attempt)
    return attempt, runnable[0]


async def test_prepare_sends_the_copy_and_media_of_the_targets_platform(world) -> None:
    attempt, _ = await begin(world)
    assert isinstance(attempt, attempts.Attempt) and not attempt.recover
    post = attempt.post
    assert (post.platform, post.post_type, post.text) == ("instagram", "GRID_POST", "New roast\n\n#coffee")
    assert len(post.media) == 1 and post.media[0]["content_type"] == "image/jpeg"
    assert post.idempotency_token.startswith("sp_")


async def test_call_publishes_and_turns_every_failure_into_an_outcome(world, monkeypatch) -> None:
    env = world.env
    attempt, target_id = await begin(world)
    done = await attempts.call(env.rt, attempt, target_id)
    assert done.error is None and done.result is not None and done.result.publish_id.startswith("sbx_")

    for spec, kind in (("rate_limited", "rate_limited"), ("rejected", "rejected")):
        attempt.account.state = {"faults": {"publish": spec}}  # the sandbox's fault injection
        failed = await attempts.call(env.rt, attempt, target_id)
        assert failed.result is None and failed.error is not None and failed.error.kind == kind

    monkeypatch.setattr(attempts, "PROVIDER_TIMEOUT_SECONDS", 0.05)
    attempt.account.state = {"faults": {"publish": "hang"}}
    hung = await attempts.call(env.rt, attempt, target_id)
    assert hung.error is not None and hung.error.kind == "transient" and hung.result is None


async def test_a_recovering_attempt_finds_the_earlier_post_and_does_not_publish_again(world) -> None:
    env = world.env
    attempt, target_id = await begin(world)
    first = await attempts.call(env.rt, attempt, target_id)
    attempt.recover = True  # as after a crash between the call and its settlement
    again = await attempts.call(env.rt, attempt, target_id)
    assert again.result == first.result
    ops = [c["op"] for c in env.sandbox.calls if c.get("token") == attempt.post.idempotency_token]
    assert ops == ["publish", "find_post"]
    assert set(env.sandbox.ledger.publishes().values()) == {1}
