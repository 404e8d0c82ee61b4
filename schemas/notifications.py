"""Notification items, the eight email categories and the notification settings object."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from schemas.paging import Cursor
from schemas.requests import PathParam, QueryParam, RequestModel

# Spec, Events 2: the email notification categories, each a per-user, per-brand boolean.
CATEGORIES: tuple[str, ...] = (
    "post_published", "post_failed", "integration_refresh", "credits_added", "credits_low",
    "planner_action_required", "planner_generation_failed", "planner_review_reminders",
)

# Built-in account default when a user never set any (docs/decisions.md, Engagement): every category on,
# so nothing is silently withheld; a user opts out per category or per brand.
BUILT_IN_DEFAULTS: dict[str, bool] = dict.fromkeys(CATEGORIES, True)

TITLE_MAX = 200
MESSAGE_MAX = 2000
LIST_MAX = 50
LIST_DEFAULT = 20


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NotificationItem(_Out):
    id: str
    brand_id: str
    type: str = Field(description="What happened, e.g. post_published, integration_needs_refresh.")
    category: str = Field(description="One of the eight email categories; decides which preference applies.")
    title: str
    message: str
    is_read: bool
    read_at: str | None
    created_at: str


class NotificationPage(_Out):
    items: list[NotificationItem]
    has_more: bool
    next_cursor: str | None = Field(description="Send back as `cursor` for the next (older) page; null at the end.")


# The eight booleans, all present (responses) ...
# Field tables are typed `dict[str, Any]` so that create_model's overloads take them as field definitions.
_FIELDS: dict[str, Any] = {c: (bool, ...) for c in CATEGORIES}
EmailNotifications = create_model("EmailNotifications", __base__=_Out, **_FIELDS)


def _no_default(schema: dict) -> None:
    schema.pop("default", None)


class _PatchBase(BaseModel):
    """Any of the eight booleans, at least one; unknown keys, nulls and non-booleans are refused."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"minProperties": 1})

    @model_validator(mode="after")
    def _at_least_one(self) -> _PatchBase:
        if not self.model_fields_set:
            raise ValueError("send at least one of the eight preferences: " + ", ".join(CATEGORIES))
        return self

    def given(self) -> dict[str, bool]:
        return {k: getattr(self, k) for k in CATEGORIES if k in self.model_fields_set}


# ... and any of them (PATCH input). An omitted key keeps its current value.
_PATCH_FIELDS: dict[str, Any] = {c: (bool, Field(default=None, json_schema_extra=_no_default)) for c in CATEGORIES}
EmailNotificationsPatch = create_model("EmailNotificationsPatch", __base__=_PatchBase, **_PATCH_FIELDS)


class SettingsBrand(_Out):
    id: str
    name: str
    workspace_id: str
    workspace_name: str


class OverrideRecord(_Out):
    id: str
    user_id: str
    workspace_id: str
    brand_id: str
    is_active: bool
    email_notifications: EmailNotifications  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
    created_at: str
    updated_at: str


class NotificationSettings(_Out):
    brand: SettingsBrand
    account_settings: EmailNotifications  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
    effective_settings: EmailNotifications  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
    override_record: OverrideRecord | None = Field(
        description="This user's override for the brand, kept (is_active false) after a revert; null if never set.")
    override_settings: EmailNotifications | None = Field(  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
        description="The override's preferences while it is active; null while the account defaults apply.")
    is_inherited: bool = Field(description="True while the account defaults apply (no active override).")


# -- request models ------------------------------------------------------------------------------------------

BrandId = Annotated[str, PathParam("Brand ID, from get_context or list_brands.")]


class ListNotificationsRequest(RequestModel):
    brand_id: BrandId
    limit: int = QueryParam(LIST_DEFAULT, f"Items per page, 1 to {LIST_MAX}.", ge=1, le=LIST_MAX)
    filter: Literal["all", "unread"] = QueryParam("all", "`unread` lists only notifications not yet read.")
    cursor: Cursor


class BrandPath(RequestModel):
    brand_id: BrandId


class UpdateSettingsRequest(RequestModel):
    brand_id: BrandId
    email_notifications: EmailNotificationsPatch  # pyright: ignore[reportInvalidTypeForm]  # a model built by create_model
