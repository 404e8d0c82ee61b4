"""The one rule for changing an approved post: when, where and what it publishes belong to its approval.

An approval (given by a key holding publish:execute) covers a Schedule's time, targets and content. Every route
that changes one of them on something approved calls this module, so none can be the odd one out
(tests/schedules/test_change_authority.py probes every write endpoint of the catalogue):

- a Schedule or publish run that stays approved after the change: `require_change_authority`. Without
  publish:execute the request fails closed (403 INSUFFICIENT_SCOPE, required_scopes naming publish:execute;
  spec, Authentication rule 6). Holding it for review in the same request needs no publish authority: it then
  publishes only after a new approval. With the authority, the caller becomes the approver of record.
- a queue, whose Schedules are made later and approved by the key that set it: `renew_queue_approval`. The spec
  lets schedule:write alone write queues, so a change by a key without publish:execute is accepted and drops
  the queue's approval: its next Schedules are held for review (docs/decisions.md, "Changing an approved post").
- content: a draft under a live Schedule or in a queue cannot be edited or deleted at all (409, the content
  area's usage check, tools/content/usage.py), with or without the authority.

Changing nothing (the same time, the same targets) is not a change and needs no authority.
"""

from __future__ import annotations

from collections.abc import Iterable

from schemas.scopes import PUBLISH_SCOPE
from storage.tables.publishing import Schedule
from storage.tables.queues import Queue
from tools.endpoint import Call

# What an approval covers, by the Schedule field that holds it.
COVERED = {"scheduled_at": "time", "integration_ids": "targets", "content_item_id": "content"}
# Queue fields that decide when, where or what its Schedules publish (everything but its name).
QUEUE_COVERED = ("mode", "times_of_day", "timezone", "interval_minutes", "start_at", "active", "content_item_ids",
                 "integration_ids", "loop", "skip_count")


def _reason(changed: Iterable[str], what: str) -> str:
    aspects = ", ".join(sorted({COVERED.get(c, c) for c in changed}))
    return (f" to change the {aspects} of an approved {what} (its approval covers when, where and what it "
            "publishes); send approval_status pending_review to hold it for review instead")


def require_change_authority(call: Call, schedule: Schedule, changed: Iterable[str], *, approved_after: bool,
                             what: str = "Schedule") -> None:
    """Fails closed (403) when `changed` (Schedule field names) touches what an approval covers and the Schedule
    is approved after the change, unless the caller holds publish:execute."""
    covered = set(changed) & set(COVERED)
    if covered and approved_after:
        call.require_scopes(PUBLISH_SCOPE, reason=_reason(covered, what))


def record_approver(call: Call, schedule: Schedule) -> None:
    """The caller (who holds publish:execute: checked above) approves the Schedule as it now is."""
    assert call.caller is not None and call.has_scopes(PUBLISH_SCOPE)
    schedule.approved_by_key = call.caller.key_id
    schedule.approved_at = call.now


def renew_queue_approval(call: Call, queue: Queue, changed: Iterable[str], sent: Iterable[str] = ()) -> None:
    """After a queue write: a key holding publish:execute that sent any field deciding when, where or what the
    queue publishes approves it as it now is (sending the same values re-approves it); a key without it that
    changed one of them leaves it unapproved (its next Schedules are held). Pausing it, renaming it, or sending
    values it already had leaves the approval as it was."""
    assert call.caller is not None
    changed_covered = set(changed) & set(QUEUE_COVERED)
    sent_covered = (set(sent) | changed_covered) & set(QUEUE_COVERED)
    if not queue.active and changed_covered <= {"active"} and sent_covered <= {"active"}:
        return  # paused: it publishes nothing, so nothing the approval covers has moved
    if call.has_scopes(PUBLISH_SCOPE) and sent_covered:
        queue.set_by_key = queue.approved_by_key = call.caller.key_id
    elif changed_covered:
        queue.set_by_key, queue.approved_by_key = call.caller.key_id, None
