"""Schedules: request models of the schedule routes and the spec's Schedule resource.

A Schedule is a durable publishing instruction, not an execution attempt. `latest_execution` is built from
the PublishExecution / PublishTarget rows of its latest run and never carries provider IDs, permalinks or
provider errors: a target's failure text is only the service's own safe `failure_reason`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model
from pydantic_core import PydanticCustomError

from schemas.envelope import Link
from schemas.ids import Id
from schemas.preflight import IntegrationIds
from schemas.requests import PathParam, QueryParam, RequestModel
from schemas.states import ApprovalStatus, ScheduleStatus, TargetState
from schemas.time import parse_timestamp

LIST_DEFAULT = 31
LIST_MAX = 50
WINDOW_MAX_DAYS = 93



def _timestamp(value: str) -> str:
    try:
        parse_timestamp(value)
    except ValueError:
        raise PydanticCustomError("invalid_timestamp", "must be an ISO 8601 date-time with an explicit offset or Z, "
                                                       "e.g. 2026-03-01T09:30:00Z", {"issue_code": "INVALID_TIMESTAMP"}
                                  ) from None
    return value  # the handler parses it again; the request hash covers what was sent


Timestamp = Annotated[str, Field(max_length=64), AfterValidator(_timestamp)]
BrandId = Annotated[str, PathParam("Brand ID, from get_context or list_brands.")]
ScheduleId = Annotated[str, PathParam("Schedule ID (sch_...), from create_schedule or list_schedules.")]
ConfirmId = Annotated[str, Field(max_length=64, description="Must equal schedule_id (a guard against the wrong one).")]


# -- requests ---------------------------------------------------------------------------------------------------

class SchedulePath(RequestModel):
    brand_id: BrandId
    schedule_id: ScheduleId


class ConfirmRequest(RequestModel):
    brand_id: BrandId
    schedule_id: ScheduleId
    confirm_schedule_id: ConfirmId


class RescheduleRequest(ConfirmRequest):
    scheduled_at: Timestamp = Field(description="The new time: ISO 8601 with an offset or Z, in the future.")


# `from` is a Python keyword, so this model is built with create_model; read it with getattr(req, "from").
# (A `dict[str, Any]` table, so that create_model's overloads take it as field definitions.)
_LIST_SCHEDULES_FIELDS: dict[str, Any] = {
    "brand_id": (BrandId, ...),
    "from": (str, QueryParam(..., "Window start, inclusive (UTC, e.g. 2026-03-01T00:00:00.000Z).", max_length=64)),
    "to": (str, QueryParam(..., f"Window end (exclusive): after from, at most {WINDOW_MAX_DAYS} days after it.",
                           max_length=64)),
    "limit": (int, QueryParam(LIST_DEFAULT, f"Items per page, 1 to {LIST_MAX}.", ge=1, le=LIST_MAX)),
    "cursor": (str | None, QueryParam(None, "next_cursor of the previous page (same filters).", max_length=400)),
    # Optional[]: pyright does not apply `|` to an Annotated alias used as a value
    "label": (Optional[Id], QueryParam(None, "Only Schedules whose content carries this label ID.")),  # noqa: UP045
    "order_direction": (Literal["asc", "desc"],
                        QueryParam("asc", "asc (default): earliest first; desc: latest first.")),
}
ListSchedulesRequest = create_model("ListSchedulesRequest", __base__=RequestModel, **_LIST_SCHEDULES_FIELDS)


# -- responses --------------------------------------------------------------------------------------------------

class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BlockingReason(_Out):
    code: str = Field(description="e.g. APPROVAL_PENDING for a Schedule held for review.")
    message: str
    repair_guidance: str


class ExecutionTarget(_Out):
    integration_id: str
    platform: str
    state: TargetState
    attempts: int
    failure_reason: str | None = Field(description="Safe text written by the service when the target failed; "
                                                   "never the provider's words.")


class LatestExecution(_Out):
    id: str = Field(description="Opaque correlation handle of the run (not a provider ID).")
    status: Literal["processing", "published", "partially_published", "failed"]
    started_at: str
    finished_at: str | None
    targets: list[ExecutionTarget] = Field(max_length=20)


class ScheduleNextAction(_Out):
    action: Literal["review_approval", "wait_for_execution"]
    guidance: str


class ScheduleLinks(_Out):
    self: Link = Field(description="get_schedule (schedule:read).")
    targets: Link = Field(description="list_targets (integrations:read).")
    preflight: Link = Field(description="preflight_content for the content item (POST, schedule:write).")


class Schedule(_Out):
    id: str
    brand_id: str
    content_item_id: str
    integration_ids: list[str] = Field(min_length=1, max_length=20)
    scheduled_at: str = Field(description="UTC, millisecond precision.")
    approval_status: ApprovalStatus
    status: ScheduleStatus
    blocking_reason: BlockingReason | None
    latest_execution: LatestExecution | None = Field(description="null until a publish run starts.")
    next_actions: list[ScheduleNextAction] = Field(max_length=2, description="Empty when cancelled.")
    created_at: str
    updated_at: str
    links: ScheduleLinks


class SchedulePage(_Out):
    items: list[Schedule] = Field(max_length=LIST_MAX)
    has_more: bool
    next_cursor: str | None


class CreatedSchedule(_Out):
    schedule: Schedule
    outcome: Literal["created", "replayed"] = Field(description="replayed: an exact replay of the idempotency key.")


class RescheduledSchedule(_Out):
    schedule: Schedule
    outcome: Literal["rescheduled", "replayed"]


class CancelledSchedule(_Out):
    schedule: Schedule
    outcome: Literal["cancelled", "replayed"]


class ApprovedSchedule(_Out):
    id: str = Field(description="The Schedule ID.")
    schedule: Schedule
    outcome: Literal["approved"] = Field(description="A replay keeps the outcome and adds Idempotency-Replayed.")


class MovedToDraft(_Out):
    id: str = Field(description="The removed Schedule's ID.")
    content_item_id: str = Field(description="The content item, kept as a draft.")
    outcome: Literal["moved_to_draft"] = Field(description="A replay keeps the outcome and adds "
                                                           "Idempotency-Replayed.")


class DeletedSchedule(_Out):
    id: str = Field(description="The removed Schedule's ID.")
    content_item_id: str = Field(description="The content item, kept with its media.")
    outcome: Literal["deleted"] = Field(description="A replay keeps the outcome and adds Idempotency-Replayed.")


# -- request models ------------------------------------------------------------------------------------------

class CreateScheduleRequest(RequestModel):
    brand_id: BrandId
    content_item_id: Id = Field(description="The draft to publish: a content item ID of this brand.")
    scheduled_at: Timestamp = Field(description="ISO 8601 with an offset or Z, in the future.")
    integration_ids: IntegrationIds
    approval_status: Annotated[ApprovalStatus, Field(
        description="Never inferred. pending_review: held for review; approved: publishes at scheduled_at "
                    "(needs publish:execute); rejected: never publishes.")]
