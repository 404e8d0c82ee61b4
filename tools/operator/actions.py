"""Operator actions (the spec's "dashboard"): workspaces, brands, keys, sandbox accounts.

The CLI calls these; tests use them to build fixtures; areas call them as services (the admin area creates
prospect brands, the networks area connects accounts), so this module imports no area that imports it. The demo
seed, which reads every area's seeders, is tools/operator/demo.py. Each takes an open session and the current time.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.errors import ApiError
from schemas.ids import new_id
from schemas.plans import DEFAULT_PLAN_ID, PLAN_IDS
from schemas.platforms import BY_KEY as PLATFORMS_BY_KEY
from schemas.scopes import ALL_SCOPES, ROLE_SCOPES, ROLES
from schemas.scopes import BY_NAME as SCOPES_BY_NAME
from storage import vault
from storage.tables.accounts import ApiKey, User, Workspace
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from tools.services.auth import hash_key, key_hint, new_secret
from tools.services.errors import OperatorError

INTEGRATION_STATUSES = ("connected", "expired", "needs_reauth")


class PlanLimitExceeded(OperatorError):
    """An operator action refused by the workspace plan; `details` as the API's PLAN_LIMIT_REACHED error."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


async def create_workspace(session: AsyncSession, now: datetime, name: str,
                           plan_id: str = DEFAULT_PLAN_ID) -> Workspace:
    if plan_id not in PLAN_IDS:
        raise OperatorError(f"plan must be one of {', '.join(PLAN_IDS)}")
    ws = Workspace(id=new_id("wsp"), name=name, plan_id=plan_id, created_at=now, updated_at=now)
    session.add(ws)
    await session.flush()
    return ws


async def default_workspace(session: AsyncSession, workspace_id: str | None = None) -> Workspace:
    if workspace_id:
        ws = await session.get(Workspace, workspace_id)
        if ws is None:
            raise OperatorError(f"no workspace {workspace_id}")
        return ws
    rows = (await session.exec(select(Workspace).order_by(col(Workspace.created_at), Workspace.id).limit(2))).all()
    if not rows:
        raise OperatorError("no workspace yet: run `socialpub init`")
    if len(rows) > 1:
        raise OperatorError("several workspaces exist: pass --workspace ID (`socialpub workspaces list` shows them)")
    return rows[0]


def check_timezone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise OperatorError(f"unknown IANA timezone {name!r}") from exc
    return name


async def create_brand(session: AsyncSession, now: datetime, workspace: Workspace, name: str, **fields: Any) -> Brand:
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise OperatorError("brand name must be 1 to 200 characters")
    if fields.get("timezone"):
        check_timezone(fields["timezone"])
    clean = {k: v for k, v in fields.items() if v is not None}
    brand = Brand(id=new_id("brd"), workspace_id=workspace.id, name=name, created_at=now, updated_at=now, **clean)
    session.add(brand)
    await session.flush()
    return brand


async def create_key(
    session: AsyncSession, now: datetime, workspace: Workspace, name: str, scopes: tuple[str, ...] | None,
    brand_ids: list[str] | None = None, role: str | None = None, user_id: str | None = None,
) -> tuple[ApiKey, str]:
    """Returns the stored key and its secret, which is never retrievable again.

    The owner is `user_id` (its role is never changed here: a `role` that differs is refused) or a new user with
    `role` (default member). A key never holds more than its owner's role allows (`ROLE_SCOPES`): a scope beyond
    it is refused; `scopes=None` means every scope the role allows. Every path that makes keys (the CLI, the
    console, MCP sign-in) comes through here."""
    if role is not None and role not in ROLES:
        raise OperatorError(f"role must be one of {', '.join(ROLES)}")
    unknown = [s for s in scopes or () if s not in SCOPES_BY_NAME]
    if unknown:
        raise OperatorError(f"unknown scopes: {', '.join(unknown)}")
    if brand_ids is not None:
        if not brand_ids:
            raise OperatorError("--brands needs at least one brand ID")
        found = set((await session.exec(
            select(Brand.id).where(Brand.workspace_id == workspace.id, col(Brand.id).in_(brand_ids)))).all())
        missing = sorted(set(brand_ids) - found)
        if missing:
            raise OperatorError(f"no brand {', '.join(missing)} in workspace {workspace.id}")
    user = None
    if user_id:
        user = await session.get(User, user_id)
        if user is None or user.workspace_id != workspace.id:
            raise OperatorError(f"no user {user_id} in workspace {workspace.id}")
        if role is not None and role != user.role:
            raise OperatorError(f"user {user_id} has role {user.role}, not {role}: creating a key never changes a "
                                f"role (omit --role to use {user.role})")
    owner_role = user.role if user is not None else role or "member"
    allowed = ROLE_SCOPES.get(owner_role, ())
    beyond = [s for s in ALL_SCOPES if s in (scopes or ()) and s not in allowed]
    if beyond:
        raise OperatorError(f"role {owner_role} cannot hold scope {', '.join(beyond)}: drop it, or give the key an "
                            "admin owner (--role admin for a new owner, or --user ID of an admin)")
    if user is None:
        user = User(id=new_id("usr"), workspace_id=workspace.id, name=f"{name} owner", role=owner_role,
                    created_at=now, updated_at=now)
        session.add(user)
        await session.flush()  # no ORM relationships order the inserts, so the owner goes first
    granted = allowed if scopes is None else scopes
    secret = new_secret()
    key = ApiKey(id=new_id("key"), workspace_id=workspace.id, user_id=user.id, name=name, key_hash=hash_key(secret),
                 key_hint=key_hint(secret), scopes=[s for s in ALL_SCOPES if s in granted],
                 brand_ids=sorted(brand_ids) if brand_ids is not None else None, created_at=now, updated_at=now)
    session.add(key)
    await session.flush()
    return key, secret


async def revoke_key(session: AsyncSession, now: datetime, key_id: str) -> ApiKey:
    key = await session.get(ApiKey, key_id)
    if key is None:
        raise OperatorError(f"no API key {key_id}")
    key.revoked_at = key.revoked_at or now
    key.updated_at = now
    await session.flush()
    return key


async def connect_integration(
    session: AsyncSession, now: datetime, brand: Brand, platform: str, *, display_name: str | None = None,
    username: str | None = None, status: str = "connected", provider_state: dict[str, Any] | None = None,
    provider: str = "sandbox", connection: Any = None, settings: Any = None,
) -> Integration:
    """Connect an account: a sandbox one, or (with `connection`, a verified providers.base.Connection) a real
    one of `provider` (tools/networks). With `settings` the credentials are stored sealed (storage/vault.py)."""
    # Imported here, as in `set_integration_status`: every operator command imports this module, few connect an
    # account, and these pull the plan, media, notification, event and analytics tables.
    from tools.context import plans
    from tools.services import metrics

    if platform not in PLATFORMS_BY_KEY:
        raise OperatorError(f"platform must be one of {', '.join(PLATFORMS_BY_KEY)}")
    if status not in INTEGRATION_STATUSES:
        raise OperatorError(f"status must be one of {', '.join(INTEGRATION_STATUSES)}")
    try:
        await plans.check_limit(session, brand, "social_accounts")
        same_network = (await session.exec(select(Integration.id).where(
            Integration.brand_id == brand.id, Integration.platform == platform).limit(1))).first()
        if same_network is None:
            await plans.check_limit(session, brand, "networks_per_brand")
    except ApiError as exc:
        upgrades = exc.details.get("upgrade_plans") or []
        hint = (f" Upgrade: `socialpub workspaces set-plan --workspace {brand.workspace_id} --plan {upgrades[0]}`."
                if upgrades else "")
        raise PlanLimitExceeded(f"plan limit reached: {exc.message}{hint}", exc.details) from None
    label = PLATFORMS_BY_KEY[platform].display_name
    if connection is not None:
        integration = Integration(
            id=new_id("int"), workspace_id=brand.workspace_id, brand_id=brand.id, platform=platform,
            status="connected", display_name=(display_name or connection.display_name or connection.username
                                              or f"{brand.name} on {label}")[:200],
            username=(username or connection.username or "")[:200] or None,
            avatar_url=(connection.avatar_url or None) and connection.avatar_url[:2000],
            permissions=metrics.permissions(platform), provider=provider,
            provider_account_id=connection.provider_account_id[:200],
            credentials=vault.seal(settings, connection.credentials) if settings is not None
            else connection.credentials,
            provider_state=dict(connection.state), created_at=now, updated_at=now)
        session.add(integration)
        await session.flush()
        return integration
    handle = username or f"{brand.name.lower().replace(' ', '')[:20]}_{platform}"
    credentials = {"access_token": new_secret().replace("socialpub_live_", "sbx_token_"), "generation": 0}
    if settings is not None:
        credentials = vault.seal(settings, credentials)
    integration = Integration(
        id=new_id("int"), workspace_id=brand.workspace_id, brand_id=brand.id, platform=platform, status=status,
        display_name=display_name or f"{brand.name} on {label}", username=handle,
        avatar_url=f"https://sandbox.socialpub.invalid/avatars/{handle}.png",
        permissions=metrics.permissions(platform), provider="sandbox",
        provider_account_id=f"sbx-acct-{new_id('acc')}",
        credentials=credentials,
        provider_state=provider_state or {}, created_at=now, updated_at=now,
    )
    session.add(integration)
    await session.flush()
    return integration


async def set_integration_status(session: AsyncSession, now: datetime, integration_id: str,
                                 status: str) -> Integration:
    """Change an account's connection status (the dashboard's reconnect / the provider's expiry); a change
    into expired or needs_reauth notifies the workspace (category integration_refresh)."""
    from tools.notifications import notify  # here: see `connect_integration`
    from tools.services import metrics

    if status not in INTEGRATION_STATUSES:
        raise OperatorError(f"status must be one of {', '.join(INTEGRATION_STATUSES)}")
    integration = await session.get(Integration, integration_id)
    if integration is None:
        raise OperatorError(f"no integration {integration_id}")
    previous = integration.status
    if previous != status:
        integration.status = status
        integration.updated_at = now
        await session.flush()
        await notify.integration_status_changed(session, now, integration, previous)
    if status == "connected":  # a reconnect (a sandbox account's, or the dashboard's): stopped readings resume
        await metrics.resume_after_reconnect(session, now, integration_id)
    return integration


async def disconnect_integration(session: AsyncSession, now: datetime, integration_id: str,
                                 workspace_id: str | None = None) -> Integration:
    """The one disconnect (CLI and console): forget the account's credentials. The row stays, so History,
    receipts and Schedules keep its name; it cannot publish until reconnected, and targets and preflight show
    the reconnect action. `workspace_id` confines the lookup to one workspace (the console's caller)."""
    integration = await session.get(Integration, integration_id)
    if integration is None or (workspace_id is not None and integration.workspace_id != workspace_id):
        raise OperatorError(f"no integration {integration_id}")
    integration.credentials = None
    integration.status, integration.updated_at = "needs_reauth", now
    session.add(integration)
    await session.flush()
    return integration
