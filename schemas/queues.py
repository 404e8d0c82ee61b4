"""Publish runs (the older scheduling shape of a Schedule) and posting queues: requests and responses."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, RootModel
from pydantic_core import PydanticCustomError

from schemas.admin import Timezone
from schemas.content import BrandId, StrictBody, no_default, trimmed
from schemas.ids import Id
from schemas.paging import OlderLimit, Page
from schemas.requests import PathParam, QueryParam
from schemas.states import ApprovalStatus
from schemas.time import parse_timestamp
from schemas.validators import unique_items

INTEGRATIONS_MAX = 20
QUEUE_NAME_MAX = 200
QUEUE_ITEMS_MAX = 500  # our bound on a queue's ordered content_item_ids
QUEUE_TIMES_MAX = 48  # slots per day in times_of_day mode
QUEUES_PER_BRAND_MAX = 100  # our bound, so list_queues (no pagination object) stays bounded
INTERVAL_MIN_MINUTES = 5
INTERVAL_MAX_MINUTES = 40_320  # 28 days

# Older status vocabulary of a publish run (docs/queues.md: the mapping from Schedule.status).
PublishRunStatus = Literal["ready_for_processing", "processing", "published", "partially_published", "failed",
                           "cancelled"]

PublishRunId = Annotated[str, PathParam("Publish run ID, from list_publish_runs or create_publish_run.")]
QueueId = Annotated[str, PathParam("Queue ID, from list_queues or create_queue.")]


def _timestamp(value: str) -> str:
    try:
        parse_timestamp(value)
    except ValueError:
        raise PydanticCustomError("invalid_timestamp", "must be an ISO 8601 date-time with an explicit offset or Z, "
                                  "e.g. 2026-03-01T09:30:00Z", {"issue_code": "INVALID_TIMESTAMP"}) from None
    return value


_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")


def _times(values: list[str]) -> list[str]:
    for i, v in enumerate(values):
        if not _HHMM.match(v):
            raise PydanticCustomError("invalid_time_of_day", "item {index} is not a 24-hour HH:MM time such as 09:30",
                                      {"index": i, "issue_code": "INVALID_TIME_OF_DAY"})
    return unique_items(values)


Timestamp = Annotated[str, Field(max_length=64), AfterValidator(_timestamp)]
IntegrationIds = Annotated[list[Id], Field(min_length=1, max_length=INTEGRATIONS_MAX, description=(
    "1 to 20 integration IDs of this brand (from list_targets), each once.")), AfterValidator(unique_items)]
ContentItemIds = Annotated[list[Id], Field(max_length=QUEUE_ITEMS_MAX, description=(
    "Content item IDs of this brand in posting order, each once, at most 500.")), AfterValidator(unique_items)]
TimesOfDay = Annotated[list[Annotated[str, Field(max_length=5)]], Field(max_length=QUEUE_TIMES_MAX, description=(
    "times_of_day mode: local HH:MM slot times in the queue's timezone, each once, at most 48.")),
    AfterValidator(_times)]
QueueName = trimmed(QUEUE_NAME_MAX, "Queue name.")
IntervalMinutes = Annotated[int, Field(ge=INTERVAL_MIN_MINUTES, le=INTERVAL_MAX_MINUTES, description=(
    "interval mode: minutes between slots, 5 to 40320 (28 days). Elapsed time: DST does not shift it."))]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- publish runs ---------------------------------------------------------------------------------------------

class PublishRun(_Out):
    id: str
    brand_id: str
    content_item_id: str
    scheduled_at: str
    integration_ids: list[str]
    status: PublishRunStatus
    approval_status: ApprovalStatus
    source: str
    failure_reason: str | None
    thumbnail_url: str | None
    created_at: str
    updated_at: str


class ListPublishRunsRequest(StrictBody):
    brand_id: BrandId
    page: Page = 1
    limit: OlderLimit = 50
    sort_by: Literal["scheduled_at", "created_at"] = QueryParam("scheduled_at", "Sort key.")
    sort_dir: Literal["asc", "desc"] = QueryParam("asc", "Sort direction.")


class CreatePublishRunRequest(StrictBody):
    brand_id: BrandId
    content_item_id: Id = Field(description="A content item of this brand, from create_content_item.")
    scheduled_at: Timestamp = Field(description="ISO 8601 with an explicit offset or Z; must be in the future.")
    integration_ids: IntegrationIds
    approval_status: ApprovalStatus = Field(
        "pending_review", description="pending_review (default: held, never publishes until approved), approved "
                                      "(needs publish:execute) or rejected.")


class UpdatePublishRunRequest(StrictBody):
    brand_id: BrandId
    publish_run_id: PublishRunId
    content_item_id: Id = no_default("A content item of this brand.")
    scheduled_at: Timestamp = no_default("ISO 8601 with an explicit offset or Z; must be in the future.")
    integration_ids: IntegrationIds = no_default()
    approval_status: ApprovalStatus = no_default("approved needs publish:execute.")


class PublishRunPath(StrictBody):
    brand_id: BrandId
    publish_run_id: PublishRunId


# -- queues ---------------------------------------------------------------------------------------------------

class QueueOut(_Out):
    id: str
    name: str
    brand_id: str
    active: bool
    mode: Literal["times_of_day", "interval"]
    times_of_day: list[str]
    timezone: str
    interval_minutes: int | None
    start_at: str | None
    next_run_at: str | None
    loop: bool
    content_item_ids: list[str]
    integration_ids: list[str]
    skip_count: int
    approval_status: Literal["approved", "pending_review"] = Field(
        description="approved: the key that last set content_item_ids, integration_ids or loop held "
                    "publish:execute, so slots become approved Schedules; pending_review: they are held.")
    created_at: str
    updated_at: str


class QueueList(RootModel[list[QueueOut]]):
    """`data` of list_queues: a plain array (no pagination object), every queue of the brand (at most 100)."""


class BrandPath(StrictBody):
    brand_id: BrandId


class CreateQueueRequest(StrictBody):
    brand_id: BrandId
    name: QueueName  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    mode: Literal["times_of_day", "interval"] = Field(description="times_of_day or interval.")
    integration_ids: IntegrationIds
    content_item_ids: ContentItemIds = []
    times_of_day: TimesOfDay = []
    timezone: Timezone | None = Field(None, description="IANA time zone of times_of_day; default the brand's.")
    interval_minutes: IntervalMinutes | None = None
    start_at: Timestamp | None = Field(None, description="interval mode: the first slot (ISO 8601 with offset); "
                                                         "default: one interval from now.")
    loop: bool = Field(False, description="Start again from the first item after the last one.")
    active: bool = True


class UpdateQueueRequest(StrictBody):
    brand_id: BrandId
    queue_id: QueueId
    name: QueueName = no_default()  # pyright: ignore[reportInvalidTypeForm]  # an Annotated type built by a function (constrained field)
    mode: Literal["times_of_day", "interval"] = no_default()
    integration_ids: IntegrationIds = no_default("Cannot be empty.")
    content_item_ids: ContentItemIds = no_default("Replaces the whole ordered list; skip_count is kept.")
    times_of_day: TimesOfDay = no_default()
    timezone: Timezone = no_default()
    interval_minutes: IntervalMinutes = no_default()
    start_at: Timestamp = no_default()
    loop: bool = no_default()
    active: bool = no_default()
    skip_count: Annotated[int, Field(ge=0, le=1_000_000)] = no_default(
        "Positions already consumed: the next item is content_item_ids[skip_count] (modulo its length with loop).")


class QueuePath(StrictBody):
    brand_id: BrandId
    queue_id: QueueId
