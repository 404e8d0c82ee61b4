"""init, workspaces, brands, keys, integrations: the operator's dashboard."""

from __future__ import annotations

import argparse
import secrets

from sqlmodel import col, select

from schemas.plans import PLAN_IDS, SELF_HOSTED_PLAN_ID
from schemas.scopes import parse_scopes
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from server.console import identity
from storage.migrate import check_current, display_url, upgrade
from storage.tables.accounts import ApiKey, User, Workspace
from storage.tables.brands import Brand
from storage.tables.console import ConsoleLogin
from storage.tables.integrations import Integration
from tools.operator import actions as operator
from tools.runtime import Runtime

DEMO_WORKSPACE = "Demo workspace"
WORKSPACES_LISTED = 1000  # an operator's listing, bounded like every list
DEMO_USER = "admin@demo.example"


def key_out(key, secret: str | None, role: str) -> dict:
    out = {"id": key.id, "name": key.name, "workspace_id": key.workspace_id, "user_id": key.user_id, "role": role,
           "scopes": key.scopes, "brand_ids": key.brand_ids}
    if secret:
        out["secret"] = secret
    return out


def integration_out(i) -> dict:
    return {"id": i.id, "brand_id": i.brand_id, "platform": i.platform, "status": i.status,
            "display_name": i.display_name, "username": i.username}


def console_address(rt: Runtime) -> str:
    """Where the console will answer: SOCIALPUB_PUBLIC_URL, else `serve`'s default address (a `serve --port`
    of another port uses its own, issue 33)."""
    return f"{rt.settings.public_url.rstrip('/')}/console/"


SERVE_NOTE = "once `socialpub serve` runs (at serve's --host/--port unless SOCIALPUB_PUBLIC_URL is set)"


async def next_step(session, ws: Workspace) -> tuple[str, str]:
    """The step that fits this workspace's state, as (code, one line): a first console user, a brand, an
    account, an API key, then serving."""
    has_login = (await session.exec(select(ConsoleLogin.user_id).join(User, col(User.id) == ConsoleLogin.user_id)
                                    .where(User.workspace_id == ws.id).limit(1))).first()
    if has_login is None:
        return "create_user", ("make a first console user: "
                               "`socialpub users create --email you@example.com --role admin`")
    if (await session.exec(select(Brand.id).where(Brand.workspace_id == ws.id).limit(1))).first() is None:
        return "create_brand", "create a brand: `socialpub brands create --name \"My brand\"`"
    if (await session.exec(select(Integration.id).where(Integration.workspace_id == ws.id).limit(1))).first() \
            is None:
        return "connect_account", ("connect an account to a brand (docs/networks.md), or try one with "
                                   "`socialpub integrations connect --brand BRAND_ID --platform x --sandbox`")
    console_keys = await identity.console_key_ids(session, ws.id)  # a console user's own key is no agent's
    keys = (await session.exec(select(ApiKey.id).where(ApiKey.workspace_id == ws.id, col(ApiKey.revoked_at).is_(None))
                               .limit(len(console_keys) + 1))).all()
    if not set(keys) - console_keys:
        return "create_key", "make an API key for your agent: `socialpub keys create --name agent --scopes all`"
    return "serve", "start it: `socialpub serve`"


async def cmd_init(args: argparse.Namespace, rt: Runtime) -> None:
    """Idempotent: a second run creates nothing the first made (no second workspace, demo or key) and says
    the step that fits the database's state (issue 33, item 4)."""
    await upgrade(rt.db)
    now = rt.clock.now()
    console_url = console_address(rt)
    async with rt.db.session(write=True) as session:
        if args.demo:
            existing = (await session.exec(select(Workspace).where(Workspace.name == DEMO_WORKSPACE))).first()
            if existing is None:
                from tools.operator import demo  # reads every area: loaded only to seed one

                seeded = await demo.seed_demo(session, now)
                ws, key, secret = seeded["workspace"], seeded["key"], seeded["secret"]
                brands = seeded["brands"]
                # A first console sign-in, password shown once (docs/console.md)
                password = secrets.token_urlsafe(12)
                await identity.create_user(session, now, ws, DEMO_USER, password, role="admin")
            else:
                # Already seeded: nothing new, not even a key (a lost one is replaced with `keys create`).
                ws, key, secret = existing, None, None
                brands = (await session.exec(select(Brand).where(Brand.workspace_id == ws.id)
                                             .order_by(col(Brand.created_at), Brand.id))).all()
                password = None
                if not await identity.login_exists(session, DEMO_USER):  # a demo made before the console existed
                    password = secrets.token_urlsafe(12)
                    await identity.create_user(session, now, ws, DEMO_USER, password, role="admin")
            sign_in = {"url": console_url, "email": DEMO_USER, "password": password}
            new_key = (f"socialpub keys create --name \"Demo key\" --scopes all --role admin "
                       f"--workspace {ws.id}")
            obj = {"database": display_url(rt.db.url), "created": existing is None,
                   "workspace": {"id": ws.id, "name": ws.name},
                   "brands": [{"id": b.id, "name": b.name} for b in brands],
                   "api_key": key_out(key, secret, "admin") if key else None, "console": sign_in,
                   "next": None if key else new_key}
            shown = (f"password {sign_in['password']} (shown once)" if sign_in["password"] else
                     f"password shown at the first init; reset: socialpub users set-password --email {DEMO_USER}")
            if key:
                key_text = (f"API key (shown once, all scopes):\n  {secret}\n"
                            f"Try: curl -H 'Authorization: Bearer {secret}' "
                            f"{rt.settings.public_url.rstrip('/')}/v1/context\n")
            else:
                key_text = ("The demo exists already: nothing was created. Its API key was shown once, at the "
                            f"first init; make another with `{new_key}`\n")
            text = (f"Database ready: {display_url(rt.db.url)}\nWorkspace {ws.name} ({ws.id})\n"
                    + "".join(f"  brand {b.name} ({b.id})\n" for b in brands)
                    + key_text + f"Console: {console_url} {SERVE_NOTE}: sign in as {DEMO_USER}, {shown}")
        else:
            ws = (await session.exec(select(Workspace).order_by(col(Workspace.created_at), Workspace.id).limit(1))).first()
            created = ws is None
            if ws is None:
                # Self-hosted default: the operator's own first workspace is not metered (docs/decisions.md).
                ws = await operator.create_workspace(session, now, args.workspace_name, plan_id=args.plan)
            code, step = await next_step(session, ws)
            obj = {"database": display_url(rt.db.url), "created": created,
                   "workspace": {"id": ws.id, "name": ws.name, "plan_id": ws.plan_id},
                   "console": {"url": console_url}, "next": {"step": code, "text": step}}
            text = (f"Database ready: {display_url(rt.db.url)}\n"
                    f"Workspace {ws.name} ({ws.id}), plan {ws.plan_id}{'' if created else ' (already there)'}\n"
                    f"Console: {console_url} {SERVE_NOTE}\nNext: {step}")
    # Credentials stored in plaintext (by versions before the vault, or just seeded) are sealed now.
    from tools.networks import secrets as networks_secrets  # here: the other commands of this module need none of it

    await networks_secrets.rotate(rt, legacy_only=True)
    emit(args, obj, text)


async def cmd_workspaces_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        ws = await operator.create_workspace(session, rt.clock.now(), args.name)
    emit(args, {"id": ws.id, "name": ws.name, "plan_id": ws.plan_id}, f"Workspace {ws.name} ({ws.id})")


async def cmd_workspaces_list(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as session:
        rows = (await session.exec(select(Workspace).order_by(col(Workspace.created_at), Workspace.id)
                                   .limit(WORKSPACES_LISTED))).all()
    out = [{"id": ws.id, "name": ws.name, "plan_id": ws.plan_id} for ws in rows]
    emit(args, {"workspaces": out},
         "\n".join(f"{w['id']}  {w['name']}  (plan {w['plan_id']})" for w in out) or "no workspace yet")


async def cmd_brands_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        brand = await operator.create_brand(session, rt.clock.now(), ws, args.name, timezone=args.timezone,
                                            website=args.website, category=args.category,
                                            description=args.description)
    from tools.brands import older_brand  # here: the brand schemas are for this command alone

    emit(args, older_brand(brand), f"Brand {brand.name} ({brand.id})")


async def cmd_keys_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    try:  # `all`: every scope the owner's role allows (a key never holds more than its role)
        scopes = None if args.scopes.strip() == "all" else parse_scopes(args.scopes)
    except ValueError as exc:
        raise operator.OperatorError(str(exc)) from exc
    brand_ids = [b.strip() for b in args.brands.split(",") if b.strip()] if args.brands else None
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        key, secret = await operator.create_key(session, rt.clock.now(), ws, args.name, scopes, brand_ids=brand_ids,
                                                role=args.role, user_id=args.user)
        owner = await session.get(User, key.user_id)
        assert owner is not None
        role = owner.role
    emit(args, key_out(key, secret, role),
         f"API key {key.name} ({key.id}), role {role}, scopes: {', '.join(key.scopes)}\n"
         f"Secret (shown once, store it now):\n  {secret}")


async def cmd_keys_revoke(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        key = await operator.revoke_key(session, rt.clock.now(), args.key_id)
    emit(args, {"id": key.id, "name": key.name, "revoked": True}, f"Revoked API key {key.name} ({key.id})")


async def cmd_integrations_connect(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        brand = await session.get(Brand, args.brand)
        if brand is None:
            raise operator.OperatorError(f"no brand {args.brand}")
        # An operator-made sandbox account says so in its name, so targets, context, the console and history
        # never pass it off as the real network (docs/decisions.md, "Sandbox accounts only on request").
        label = operator.PLATFORMS_BY_KEY.get(args.platform)
        name = args.display_name or (label and f"{brand.name} on {label.display_name} (sandbox)")
        integration = await operator.connect_integration(
            session, rt.clock.now(), brand, args.platform, display_name=name, username=args.username,
            status=args.status, settings=rt.settings)
    emit(args, {**integration_out(integration), "provider": integration.provider},
         f"Connected sandbox {integration.platform} account {integration.display_name} ({integration.id}), "
         f"status {integration.status}")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init")  # help line: server.commands.COMMANDS
    p.add_argument("--demo", action="store_true", help="seed two brands, sandbox accounts and a full-scope key")
    p.add_argument("--workspace-name", default="Default workspace", help="name of the first workspace")
    p.add_argument("--plan", default=SELF_HOSTED_PLAN_ID, choices=PLAN_IDS,
                   help=f"plan of the first workspace (default {SELF_HOSTED_PLAN_ID}: no limits)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_init))

    ws = subcommands(sub, "workspaces")
    p = ws.add_parser("create", help="create a workspace")
    p.add_argument("--name", required=True)
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_workspaces_create))
    p = ws.add_parser("list", help="list workspaces (their IDs are what --workspace takes)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_workspaces_list))

    brands = subcommands(sub, "brands")
    p = brands.add_parser("create", help="create a brand")
    p.add_argument("--name", required=True)
    p.add_argument("--timezone", default="UTC", help="IANA timezone (default UTC)")
    p.add_argument("--website")
    p.add_argument("--category")
    p.add_argument("--description")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_brands_create))

    keys = subcommands(sub, "keys")
    p = keys.add_parser("create", help="create an API key; the secret is printed once")
    p.add_argument("--name", required=True)
    p.add_argument("--scopes", required=True,
                   help="comma-separated scopes, or `all` (every scope the owner's role allows)")
    p.add_argument("--brands", help="comma-separated brand IDs to restrict the key to")
    p.add_argument("--role", choices=["member", "admin", "super_admin"],
                   help="role of the new owner (default member); with --user it must be that user's role, "
                        "which a key never changes")
    p.add_argument("--user", help="existing user ID to own the key (default: a new user)")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_keys_create))
    p = keys.add_parser("revoke", help="revoke an API key")
    p.add_argument("key_id")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_keys_revoke))

    integrations = subcommands(sub, "integrations")
    p = integrations.add_parser("connect", help="connect an account to a brand (a sandbox one with --sandbox)")
    p.add_argument("--brand", required=True)
    p.add_argument("--platform", required=True)
    p.add_argument("--sandbox", action="store_true",
                   help="connect a local sandbox account (nothing reaches the network)")
    p.add_argument("--display-name")
    p.add_argument("--username", help="sandbox: the account's handle")
    p.add_argument("--status", default="connected", choices=list(operator.INTEGRATION_STATUSES),
                   help="sandbox: the account's status (default connected)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_integrations_connect))
