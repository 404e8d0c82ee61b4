"""Autopilot request and response models (spec: Resources > Autopilot; the four Autopilot routes).

Week numbers count the weeks of one plan from 1; see docs/autopilot.md and docs/decisions.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from schemas.envelope import Link
from schemas.ids import Id
from schemas.requests import LOCATION_KEY, PathParam, QueryParam, RequestModel

GUIDANCE_MAX = 2000
RECENT_WEEKS_MAX = 100
WEEK_NUMBER_MAX = 100_000
ITEMS_PER_WEEK_MAX = 14


def _path_int(value: Any) -> Any:
    """REST path parameters arrive as text: accept canonical decimal digits only ("7", not "07" or "+7")."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and (value == "0" or value[0] != "0"):
        return int(value)
    return value


BrandId = Annotated[str, PathParam("Brand ID, from get_context.")]
WeekNumber = Annotated[int, Field(
    ge=1, le=WEEK_NUMBER_MAX, description="Week number within the plan (1 is the plan's first week), from "
                                          "get_autopilot_plan's weeks.", json_schema_extra={LOCATION_KEY: "path"}),
    BeforeValidator(_path_int)]
ItemId = Annotated[str, PathParam("Autopilot item ID, from get_autopilot_week.")]


class GetAutopilotPlanRequest(RequestModel):
    brand_id: BrandId


class GetAutopilotWeekRequest(RequestModel):
    brand_id: BrandId
    week_number: WeekNumber
    plan_id: Id = QueryParam(description="The plan's ID, from get_autopilot_plan (data.plan.id).")


class _ItemWrite(RequestModel):
    brand_id: BrandId
    week_number: WeekNumber
    item_id: ItemId
    plan_id: Id = Field(description="The plan's ID, from get_autopilot_plan.")
    confirm_item_id: Id = Field(description="Must equal the item ID in the path.")


class ApproveAutopilotItemRequest(_ItemWrite):
    pass


class RegenerateAutopilotItemRequest(_ItemWrite):
    guidance: str | None = Field(None, max_length=GUIDANCE_MAX,
                                 description="Optional direction for the new topic, up to 2,000 characters.")


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AutopilotPlanLinks(_Out):
    self: Link
    latest_week: Link | None = Field(description="The newest week of the plan (get_autopilot_week), or null.")


class AutopilotPlanOut(_Out):
    id: str
    brand_id: str
    status: Literal["active", "archived"]
    auto_approval: bool = Field(description="Recorded plan setting; Schedules generated from Autopilot items are "
                                            "held as pending_review even when it is on.")
    items_per_week: int
    weeks: list[int] = Field(max_length=RECENT_WEEKS_MAX,
                             description="Up to 100 most recent week numbers, ascending.")
    created_at: str
    updated_at: str
    links: AutopilotPlanLinks


class AutopilotPlanRead(_Out):
    plan: AutopilotPlanOut | None = Field(description="The brand's active plan, or null when no plan exists.")
    has_more_weeks: bool = Field(description="True when the plan has weeks older than those listed.")


class AutopilotItemLinks(_Out):
    approve: Link
    regenerate: Link
    content_item: Link | None
    schedule: Link | None


class AutopilotItemOut(_Out):
    id: str
    plan_id: str
    week_number: int
    position: int
    topic: str
    review_status: Literal["pending_review", "approved"]
    regeneration_status: Literal["none", "uncertain"] = Field(
        description="uncertain: a regeneration failed or timed out; the topic shown is the stored one.")
    content_item_id: str | None
    schedule_id: str | None
    approved_at: str | None
    created_at: str
    updated_at: str
    links: AutopilotItemLinks


class AutopilotWeekLinks(_Out):
    self: Link
    plan: Link


class AutopilotWeekOut(_Out):
    plan_id: str
    week_number: int
    status: Literal["pending_review", "approved", "scheduled"]
    theme: str
    starts_on: str = Field(description="First day of the week (a Monday, YYYY-MM-DD, brand timezone).")
    ends_on: str = Field(description="Last day of the week (a Sunday, YYYY-MM-DD, brand timezone).")
    items: list[AutopilotItemOut] = Field(max_length=ITEMS_PER_WEEK_MAX)
    links: AutopilotWeekLinks


class AutopilotItemWrite(_Out):
    id: str
    outcome: Literal["approved", "regenerated"]
    item: AutopilotItemOut
