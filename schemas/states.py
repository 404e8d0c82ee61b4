"""Enumerated value sets of Schedules and their targets, each defined once: request and response models,
the tables' comments and the services import them from here."""

from __future__ import annotations

from typing import Literal, get_args

ApprovalStatus = Literal["approved", "pending_review", "rejected"]
APPROVAL_STATUSES: tuple[ApprovalStatus, ...] = get_args(ApprovalStatus)

# Schedule.status. Held (pending_review / rejected) schedules are `action_required`; approved future ones
# `scheduled`; `publishing` while a run executes; then `published`, `partially_published` or `failed`.
ScheduleStatus = Literal["action_required", "scheduled", "publishing", "published", "partially_published", "failed",
                         "cancelled"]
SCHEDULE_STATUSES: tuple[str, ...] = get_args(ScheduleStatus)

# PublishTarget.state: pending -> attempting -> published | failed | action_required;
# attempting -> retry_wait (retryable provider error) -> attempting ...
TargetState = Literal["pending", "attempting", "retry_wait", "published", "failed", "action_required"]
TARGET_STATES: tuple[str, ...] = get_args(TargetState)
