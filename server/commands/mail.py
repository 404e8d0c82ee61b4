"""mail test: send one message over the configured SMTP server (SOCIALPUB_SMTP_URL, SOCIALPUB_MAIL_FROM)."""

from __future__ import annotations

import argparse
from email.utils import make_msgid

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from tools.events import mail
from tools.operator.actions import OperatorError
from tools.runtime import Runtime


async def cmd_test(args: argparse.Namespace, rt: Runtime) -> None:
    try:
        config = mail.smtp_config(rt.settings)
    except mail.MailConfigError as exc:
        raise OperatorError(str(exc)) from None
    if config is None:
        raise OperatorError("email is off: set SOCIALPUB_SMTP_URL and SOCIALPUB_MAIL_FROM (docs/events.md)")
    base = rt.settings.public_url.rstrip("/")
    letter = mail.Letter(to=args.to, subject="socialpub test message", title="socialpub test message",
                         body="This message was sent by `socialpub mail test`: email delivery works.",
                         link=f"{base}/console/workspace", preferences=f"{base}/console/workspace",
                         brand="this service", category="test")
    try:
        await mail.send(config, mail.build(letter, config.mail_from, make_msgid(domain="socialpub")))
    except (mail.Transient, mail.Permanent) as exc:
        raise OperatorError(f"not sent via {config.describe()}: {exc}") from None
    emit(args, {"sent": True, "to": args.to, "server": config.describe()},
         f"Sent a test message to {args.to} via {config.describe()}")


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "mail")
    p = group.add_parser("test", help="send one test message over the configured SMTP server")
    p.add_argument("--to", required=True, help="recipient address")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_test))
