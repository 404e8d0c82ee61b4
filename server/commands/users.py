"""users create: operator users who sign in to the console (`/console`)."""

from __future__ import annotations

import argparse
import getpass
import sys

from schemas.scopes import ROLES
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from server.console import identity
from storage.migrate import check_current
from tools.operator import actions as operator
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


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "users")
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
