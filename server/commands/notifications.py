"""notifications defaults|mark-read, integrations set-status: the dashboard's notification actions."""

from __future__ import annotations

import argparse

from schemas.notifications import CATEGORIES
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from storage.tables.accounts import User
from tools.notifications import notify
from tools.operator import actions as operator
from tools.runtime import Runtime


def _categories(text: str | None) -> list[str]:
    names = [c.strip() for c in (text or "").split(",") if c.strip()]
    if names == ["all"]:
        return list(CATEGORIES)
    unknown = sorted(set(names) - set(CATEGORIES))
    if unknown:
        raise operator.OperatorError(f"unknown categories: {', '.join(unknown)}; known: {', '.join(CATEGORIES)}")
    return names


async def cmd_defaults(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    on, off = _categories(args.on), _categories(args.off)
    if set(on) & set(off):
        raise operator.OperatorError("a category cannot be both --on and --off")
    async with rt.db.session(write=True) as session:
        user = await session.get(User, args.user)
        if user is None:
            raise operator.OperatorError(f"no user {args.user}")
        values = await notify.set_account_defaults(
            session, rt.clock.now(), user, {**dict.fromkeys(on, True), **dict.fromkeys(off, False)})
    emit(args, {"user_id": user.id, "email_notifications": values},
         f"Email defaults of {user.id}: " + ", ".join(f"{k} {'on' if v else 'off'}" for k, v in values.items()))


async def cmd_mark_read(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        if await session.get(User, args.user) is None:
            raise operator.OperatorError(f"no user {args.user}")
        count = await notify.mark_read(session, rt.clock.now(), args.user, brand_id=args.brand)
    emit(args, {"user_id": args.user, "brand_id": args.brand, "marked_read": count},
         f"Marked {count} notification(s) read")


async def cmd_set_status(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        integration = await operator.set_integration_status(session, rt.clock.now(), args.integration, args.status)
    emit(args, {"id": integration.id, "brand_id": integration.brand_id, "platform": integration.platform,
                "status": integration.status},
         f"Integration {integration.id} ({integration.platform}) is now {integration.status}")


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "notifications")
    p = group.add_parser("defaults", help="set a user's account-wide email defaults")
    p.add_argument("--user", required=True, help="user ID (the owner of an API key)")
    p.add_argument("--on", help="comma-separated categories to turn on, or `all`")
    p.add_argument("--off", help="comma-separated categories to turn off, or `all`")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_defaults))

    p = group.add_parser("mark-read", help="mark a user's notifications read")
    p.add_argument("--user", required=True)
    p.add_argument("--brand", help="only this brand's notifications")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_mark_read))

    p = subcommands(sub, "integrations").add_parser(
        "set-status", help="change an account's status; expired/needs_reauth notifies the workspace")
    p.add_argument("--integration", required=True, help="integration ID")
    p.add_argument("--status", required=True, choices=list(operator.INTEGRATION_STATUSES))
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_set_status))
