"""In-app notifications (read) and the key owner's email notification settings for a brand.

Everything here is per user: a key acts for its owner, and sees only that user's notifications and
settings. Producing notifications is `tools/notifications/notify.py`.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from schemas import notifications as out
from schemas.ids import new_id
from schemas.notifications import BrandPath, ListNotificationsRequest, UpdateSettingsRequest
from schemas.time import iso
from storage import keyset
from storage.tables.notifications import Notification, NotificationBrandOverride
from tools.endpoint import Call, Endpoint
from tools.notifications.notify import account_settings, merged


def item(n: Notification) -> dict:
    return {"id": n.id, "brand_id": n.brand_id, "type": n.type, "category": n.category, "title": n.title,
            "message": n.message, "is_read": n.is_read, "read_at": iso(n.read_at), "created_at": iso(n.created_at)}


async def list_notifications(call: Call, req: ListNotificationsRequest) -> out.NotificationPage:
    caller = call.caller
    assert caller is not None
    mine = (Notification.user_id == caller.user_id, Notification.brand_id == call.brand_id,
            Notification.workspace_id == caller.workspace_id)
    query = select(Notification).where(*mine)
    if req.filter == "unread":
        query = query.where(col(Notification.is_read).is_(False))
    position = None
    if req.cursor is not None:  # the last item's ID, ordered by ID (new IDs sort last)
        position = await keyset.position_of_id(call.session, Notification.id, Notification.id, req.cursor, *mine,
                                               id_prefix="ntf")
        if position is None:
            raise keyset.invalid_cursor("The cursor is not a next_cursor of this brand's notifications.",
                                        "Use next_cursor from the previous page.")
    page, has_more = await keyset.page(call.session, query, Notification.id, Notification.id, desc=True,
                                       limit=req.limit, position=position)
    return out.NotificationPage.model_validate({"items": [item(n) for n in page], "has_more": has_more,
                                                "next_cursor": page[-1].id if has_more else None})


async def _override(call: Call, *, for_update: bool = False) -> NotificationBrandOverride | None:
    caller = call.caller
    assert caller is not None
    query = select(NotificationBrandOverride).where(NotificationBrandOverride.user_id == caller.user_id,
                                                    NotificationBrandOverride.brand_id == call.brand_id)
    if for_update:  # concurrent PATCHes merge one after the other instead of losing each other's keys
        query = query.with_for_update()
    return (await call.session.exec(query)).first()


async def _state(call: Call, override: NotificationBrandOverride | None) -> out.NotificationSettings:
    caller, brand = call.caller, call.brand
    assert caller is not None and brand is not None
    _, account = await account_settings(call.session, caller.user_id)
    active = override is not None and override.is_active
    override_settings = merged(override.email_notifications) if override is not None else None
    record = None
    if override is not None:
        record = {"id": override.id, "user_id": override.user_id, "workspace_id": override.workspace_id,
                  "brand_id": override.brand_id, "is_active": override.is_active,
                  "email_notifications": override_settings, "created_at": iso(override.created_at),
                  "updated_at": iso(override.updated_at)}
    return out.NotificationSettings.model_validate({
        "brand": {"id": brand.id, "name": brand.name, "workspace_id": caller.workspace_id,
                  "workspace_name": caller.workspace_name},
        "account_settings": account,
        "effective_settings": override_settings if active else account,
        "override_record": record,
        "override_settings": override_settings if active else None,
        "is_inherited": not active,
    })


async def get_notification_settings(call: Call, req: BrandPath) -> out.NotificationSettings:
    return await _state(call, await _override(call))


async def update_notification_settings(call: Call, req: UpdateSettingsRequest) -> out.NotificationSettings:
    caller = call.caller
    assert caller is not None
    given = req.email_notifications.given()
    override = await _override(call, for_update=True)
    if override is None or not override.is_active:
        # A new (or re-enabled) override starts from what applies now, the account defaults, so values from
        # an override the user reverted earlier never come back unasked.
        _, account = await account_settings(call.session, caller.user_id)
        base = account
    else:
        base = merged(override.email_notifications)
    if override is None:
        created = NotificationBrandOverride(
            id=new_id("nov"), workspace_id=caller.workspace_id, brand_id=call.brand_id, user_id=caller.user_id,
            is_active=True, email_notifications=merged(base, given), created_at=call.now, updated_at=call.now)
        try:
            async with call.session.begin_nested():  # a savepoint: a concurrent first PATCH may win the insert
                call.session.add(created)
            return await _state(call, created)
        except IntegrityError:
            override = await _override(call, for_update=True)
            assert override is not None
            base = merged(override.email_notifications) if override.is_active else base
    override.email_notifications = merged(base, given)  # a new dict, so the JSON column is written
    override.is_active = True
    override.updated_at = call.now
    await call.session.flush()
    return await _state(call, override)


async def revert_notification_settings(call: Call, req: BrandPath) -> out.NotificationSettings:
    override = await _override(call, for_update=True)
    if override is not None and override.is_active:
        override.is_active = False
        override.updated_at = call.now
        await call.session.flush()
    return await _state(call, override)


ENDPOINTS = [
    Endpoint(
        name="list_notifications", method="GET", path="/v1/brands/{brand_id}/notifications",
        toolset="notifications", handler=list_notifications, scopes=("notifications:read",),
        request=ListNotificationsRequest, response=out.NotificationPage, title="List notifications",
        summary="List this key owner's in-app notifications for a brand, newest first: type, category, title, "
                "message, read state and date.",
        guidance="Read-only: never marks anything read. Page with `cursor` = next_cursor; `filter=unread` for "
                 "unread only. Other users' notifications are never shown.",
    ),
    Endpoint(
        name="get_notification_settings", method="GET", path="/v1/brands/{brand_id}/notification-settings",
        toolset="notifications", handler=get_notification_settings, scopes=("notifications:read",),
        request=BrandPath, response=out.NotificationSettings, title="Get notification settings",
        summary="Read the key owner's email notification preferences for a brand: account defaults, the brand "
                "override if any, and the effective settings.",
        guidance="Read-only. Change with update_notification_settings; go back to the account defaults with "
                 "revert_notification_settings.",
    ),
    Endpoint(
        name="update_notification_settings", method="PATCH", path="/v1/brands/{brand_id}/notification-settings",
        toolset="notifications", handler=update_notification_settings, scopes=("notifications:write",),
        request=UpdateSettingsRequest, response=out.NotificationSettings, title="Update notification settings",
        summary="Create or update the key owner's brand override of the eight email notification preferences; "
                "only the booleans sent change.",
        guidance="Affects only this user and brand; other users and brands are untouched. Returns the refreshed "
                 "settings; sends no email.",
    ),
    Endpoint(
        name="revert_notification_settings", method="DELETE", path="/v1/brands/{brand_id}/notification-settings",
        toolset="notifications", handler=revert_notification_settings, scopes=("notifications:write",),
        request=BrandPath, response=out.NotificationSettings, title="Revert notification settings",
        destructive=True,
        summary="Disable the key owner's brand override at once, so the account defaults apply again; the record "
                "is kept inactive.",
        guidance="Returns the inherited effective settings. Reverting with no active override changes nothing.",
    ),
]
