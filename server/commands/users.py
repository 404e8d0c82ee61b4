"""users create|set-password|list|invite|set-role|deactivate: the people who sign in to the console (`/console`);
the team actions are tools/operator/team.py's, the same the console's team page calls."""

from __future__ import annotations

import argparse
import getpass
import sys

from schemas.scopes import ROLES
from schemas.time import iso
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from server.console import identity
from storage.migrate import check_current
from tools.operator import actions as operator
from tools.operator import team
from tools.runtime import Runtime


def read_password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise operator.OperatorError("no terminal to prompt for a password: pass --password-stdin")
    first = getpass.getpass("Password: ")
    if first != getpass.getpass("Repeat password: "):
        raise operator.OperatorError("the passwords differ")
    return first


async def cmd_users_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    password = read_password(args)
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        user, login = await identity.create_user(session, rt.clock.now(), ws, args.email, password, role=args.role,
                                                 name=args.name)
    url = f"{rt.settings.public_url.rstrip('/')}/console/"
    emit(args, {"id": user.id, "email": login.email, "role": user.role, "workspace_id": ws.id, "console_url": url},
         f"User {login.email} ({user.id}), role {user.role}, workspace {ws.name}\nSign in at {url}")


async def cmd_users_set_password(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    password = read_password(args)
    async with rt.db.session(write=True) as session:
        login = await identity.set_password(session, rt.clock.now(), args.email, password)
    emit(args, {"id": login.user_id, "email": login.email, "sessions_ended": True},
         f"New password for {login.email}; its console sessions ended")


async def cmd_users_list(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as session:
        ws = await operator.default_workspace(session, args.workspace)
        users = await team.list_users(session, ws.id)
        invitations = await team.list_invitations(session, rt.clock.now(), ws.id)
    pending = [{"id": i.id, "email": i.email, "role": i.role, "brand_ids": i.brand_ids,
                "expires_at": iso(i.expires_at)} for i in invitations]
    lines = [f"{u['id']}  {u['email']:<32} {u['role']:<12} "
             f"{'deactivated' if not u['active'] else 'last sign-in ' + (u['last_sign_in_at'] or 'never')}"
             + (f"  brands {','.join(u['brand_ids'])}" if u["brand_ids"] is not None else "") for u in users]
    lines += [f"{i['id']}  {i['email']:<32} {i['role']:<12} invited, until {i['expires_at']}" for i in pending]
    emit(args, {"users": users, "invitations": pending}, "\n".join(lines) or "no console users yet")


async def cmd_users_invite(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    brand_ids = [b for b in args.brands.split(",") if b.strip()] if args.brands else None
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        invitation, link = await team.invite(session, rt.clock.now(), ws, args.email, args.role, brand_ids=brand_ids,
                                             public_url=rt.settings.public_url)
    sent = await team.send_invitation(invitation, ws.name, link)
    emit(args, {"id": invitation.id, "email": invitation.email, "role": invitation.role,
                "brand_ids": invitation.brand_ids, "expires_at": iso(invitation.expires_at), "sent": sent,
                "link": None if sent else link},
         f"Invited {invitation.email} as {invitation.role} (until {iso(invitation.expires_at)})"
         + ("; the link was emailed" if sent else f"\nSend them this link (shown once, single use):\n  {link}"))


async def cmd_users_set_role(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        user = await team.set_role(session, rt.clock.now(), ws.id, args.user, args.role)
        if args.brands is not None:
            brand_ids = [b for b in args.brands.split(",") if b.strip()] if args.brands != "all" else None
            await team.restrict_brands(session, rt.clock.now(), ws.id, user.id, brand_ids)
    emit(args, {"id": user.id, "email": user.email, "role": user.role},
         f"{user.email or user.id} is now {user.role}")


async def cmd_users_deactivate(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        user, revoked = await team.deactivate(session, rt.clock.now(), ws.id, args.user)
    emit(args, {"id": user.id, "email": user.email, "deactivated_at": iso(user.deactivated_at),
                "keys_revoked": revoked},
         f"Deactivated {user.email or user.id}: {revoked} key(s) revoked, console sessions ended")


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "users")
    p = group.add_parser("list", help="the workspace's console users (role, last sign-in) and open invitations")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_users_list))

    p = group.add_parser("invite", help="invite someone by email: prints a single-use link (valid 7 days) unless "
                                        "email delivery sent it")
    p.add_argument("--email", required=True)
    p.add_argument("--role", default="member", choices=ROLES)
    p.add_argument("--brands", help="comma-separated brand IDs to restrict a member to")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_users_invite))

    p = group.add_parser("set-role", help="change a user's role (the last admin cannot lose it)")
    p.add_argument("user", help="user ID or console email")
    p.add_argument("--role", required=True, choices=ROLES)
    p.add_argument("--brands", help="members: comma-separated brand IDs to restrict to, or `all`")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_users_set_role))

    p = group.add_parser("deactivate", help="revoke a user's keys and end its console sessions, at once")
    p.add_argument("user", help="user ID or console email")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_users_deactivate))

    p = group.add_parser("set-password", help="set a console user's password (prompts); ends its sessions")
    p.add_argument("--email", required=True)
    p.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_users_set_password))

    p = group.add_parser(
        "create", help="create a user who signs in to the console; prompts for the password")
    p.add_argument("--email", required=True)
    p.add_argument("--role", default="member", choices=ROLES,
                   help="member: prepares and holds work, cannot publish; admin / super_admin: everything")
    p.add_argument("--name", help="display name (default: the email)")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    p.add_argument("--password-stdin", action="store_true", help="read the password from the first line of stdin")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_users_create))
