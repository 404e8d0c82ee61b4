"""The publishing worker: turns due, approved Schedules into runs and runs into Publications.

One tick (`publish_due`, run by server/worker.py) repeatedly claims a bounded batch of due Schedules under a
lease and carries each out. Its parts, each a module with its own tests:

- `claims.py`: claiming, lease renewal and hand-back, on the one lease mechanism of `storage/leases.py`;
- `run_state.py`: the run / target state machine (start a run, record an attempt, settle, finish);
- `attempts.py`: provider attempts (what is sent, the call outside any transaction, safe failure words);
- `steps.py`: how the steps reach the database (a batch's steps share commits, `Steps`).

Per target: record the attempt (`attempting`, attempts + 1) and COMMIT; then call the provider outside any
transaction; then settle in a new transaction, only while this worker still holds the lease. When every target is
final the run and the Schedule take the outcome and the lease is cleared; targets waiting to retry keep the
Schedule `publishing` with its lease released and `next_attempt_at` set. Provider IDs and permalinks stay in the
tables; failure reasons are our own safe text, never the provider's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import anyio

from tools.publishing import attempts, claims, run_state
from tools.publishing.attempts import Attempt
from tools.publishing.run_state import MAX_ATTEMPTS
from tools.publishing.steps import Steps
from tools.runtime import Runtime

__all__ = ["CONCURRENCY", "MAX_ATTEMPTS", "TICKS", "Pass", "publish_due", "run_schedule", "run_target"]

log = logging.getLogger("socialpub.publishing")

BATCH = 20  # Schedules per claim while provider calls are slow (at CONCURRENCY)
# Schedules of a batch carried out at once; each one's targets go one after another. Their transactions are
# committed together (group commit, `Steps`), so this is also how many share one commit. It starts at
# CONCURRENCY: a stopping worker waits for the calls in flight, and each one in flight (hung, say) holds its
# Schedule until its lease expires. While every provider call answers within FAST_CALL_SECONDS it grows by
# one per such call up to FAST_CONCURRENCY (bigger groups: fewer statements and commits per target), and the
# claims grow with it (BATCH per CONCURRENCY); one slower call sets it back to CONCURRENCY.
CONCURRENCY = 4
FAST_CONCURRENCY = 16
FAST_CALL_SECONDS = 0.25
MAX_SCHEDULES_PER_TICK = 1000  # then the tick returns, so other ticks and jobs get their turn


class Pace:
    """How many Schedules of a tick run at once (CONCURRENCY up to FAST_CONCURRENCY, see there)."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(CONCURRENCY)

    def answered(self, seconds: float) -> None:
        tokens = self.limiter.total_tokens
        if seconds > FAST_CALL_SECONDS:
            self.limiter.total_tokens = CONCURRENCY  # those running keep their slot; no new one until below
        elif tokens < FAST_CONCURRENCY:
            self.limiter.total_tokens = int(tokens) + 1

    def claim(self) -> int:
        return BATCH * int(self.limiter.total_tokens) // CONCURRENCY


@dataclass
class Pass:
    """What the runs of one worker pass share: the worker, its steps' commits and its pace. A run without one
    (`run_schedule(rt, owner, id)`) commits each step on its own."""

    rt: Runtime
    owner: str
    steps: Steps
    pace: Pace | None = None
    started: set[str] = field(default_factory=set)  # Schedules of the batch whose run began

    @classmethod
    def alone(cls, rt: Runtime, owner: str) -> Pass:
        return cls(rt, owner, Steps(rt, group=False))


async def publish_due(rt: Runtime, worker_id: str) -> int:
    """The worker tick: claim and carry out due Schedules, CONCURRENCY (or more, see there) at once (a slow
    provider call does not hold up the others). Returns how many Schedules it worked on."""
    done = 0
    pace = Pace()
    while done < MAX_SCHEDULES_PER_TICK and worker_id not in rt.stopping:
        claimed = await claims.claim_due(rt, worker_id, limit=min(pace.claim(), MAX_SCHEDULES_PER_TICK - done))
        if not claimed:
            break
        work = Pass(rt, worker_id, Steps(rt), pace)  # the batch's runs share commits
        left, batch_done = len(claimed), anyio.Event()

        async def one(schedule_id: str, work: Pass = work, batch_done: anyio.Event = batch_done) -> None:
            nonlocal left
            try:
                async with pace.limiter:
                    if worker_id in rt.stopping:  # stopping: what has not started is handed back
                        return
                    work.started.add(schedule_id)
                    try:
                        await run_schedule(rt, worker_id, schedule_id, work)
                    except Exception:
                        # The lease stays; once it expires another pass recovers the run (attempts are recorded).
                        log.exception("publishing schedule %s failed", schedule_id)
            finally:
                left -= 1
                if not left:
                    batch_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(claims.renew_leases, rt, worker_id, batch_done)
            tg.start_soon(claims.hand_back, rt, worker_id, claimed, work.started, batch_done)
            for schedule_id in claimed:
                tg.start_soon(one, schedule_id)
        done += len(claimed)
    return done


async def run_schedule(rt: Runtime, owner: str, schedule_id: str, work: Pass | None = None) -> None:
    """Carry out one claimed Schedule: start or resume its run, attempt its runnable targets one after another,
    then finish the run or release it until its earliest retry."""
    work = work or Pass.alone(rt, owner)
    begun = await work.steps.run(lambda tx: run_state.begin_run(tx, rt, owner, schedule_id), schedule_id)
    if begun is None:
        return
    runnable, first = begun
    finished = False
    for n, target_id in enumerate(runnable):
        if owner in rt.stopping:  # stopping: the targets left go to another worker via finish_schedule
            break
        finished = await run_target(work, target_id, schedule_id, begun=first if n == 0 else None)
    if not finished:
        await work.steps.run(lambda tx: run_state.finish_schedule(tx, rt, owner, schedule_id), schedule_id)


async def run_target(work: Pass, target_id: str, schedule_id: str, *,
                     begun: Attempt | bool | None = None) -> bool:
    """Attempt one target. True when settling it also finished the whole run (every target final). `begun`: the
    attempt already recorded (and committed) by the caller."""
    rt, owner = work.rt, work.owner
    # 1. Record the attempt and commit before any provider call.
    if begun is None:
        begun = await work.steps.run(
            lambda tx: run_state.begin_attempt(tx, rt, owner, target_id, schedule_id=schedule_id), schedule_id)
    if isinstance(begun, bool):
        return begun
    attempt = begun
    # 2. The provider, outside any transaction.
    outcome = await attempts.call(rt, attempt, target_id)
    if work.pace is not None:
        work.pace.answered(outcome.seconds)
    # 3. Settle, only while this worker still holds the lease.
    return await work.steps.run(lambda tx: run_state.settle(tx, rt, owner, target_id, attempt, outcome),
                                attempt.schedule_id)


TICKS = [publish_due]
