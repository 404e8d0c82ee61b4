"""webhooks create|list|delete|rotate-secret|test|log|resend|enable: outbound webhook endpoints (docs/events.md).
The secret is printed once, by create and rotate-secret."""

from __future__ import annotations

import argparse

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from tools.events import webhook_delivery, webhooks
from tools.runtime import Runtime
from tools.services.event_log import EVENT_TYPES


def _list(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


async def cmd_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        endpoint, secret = await webhooks.create(session, rt.clock.now(), rt.settings, args.workspace, args.url,
                                                 _list(args.events), _list(args.brands) or None, args.description)
    emit(args, {**webhooks.public(endpoint), "secret": secret},
         f"Webhook endpoint {endpoint.id} -> {endpoint.url}\nSigning secret (shown once, keep it now): {secret}")


async def cmd_list(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as session:
        found = [webhooks.public(e) for e in await webhooks.list_endpoints(session, args.workspace)]
    lines = [f"{e['id']}  {'enabled ' if e['enabled'] else 'disabled'}  {e['url']}  {','.join(e['event_types'])}"
             for e in found]
    emit(args, found, "\n".join(lines) or "No webhook endpoints.")


async def cmd_delete(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        await webhooks.delete(session, args.endpoint)
    emit(args, {"id": args.endpoint, "deleted": True}, f"Deleted webhook endpoint {args.endpoint}")


async def cmd_rotate(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        endpoint, secret = await webhooks.rotate_secret(session, rt.clock.now(), rt.settings, args.endpoint)
    emit(args, {**webhooks.public(endpoint), "secret": secret},
         f"New signing secret of {endpoint.id} (shown once): {secret}\nThe previous secret also signs until "
         f"{endpoint.previous_until:%Y-%m-%d %H:%M} UTC.")


async def cmd_enable(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        await webhooks.enable(session, rt.clock.now(), args.endpoint)
    emit(args, {"id": args.endpoint, "enabled": True}, f"Enabled webhook endpoint {args.endpoint}")


async def cmd_test(args: argparse.Namespace, rt: Runtime) -> int:
    await check_current(rt.db)
    result = await webhook_delivery.send_test(rt, args.endpoint)
    emit(args, result, f"Test message {result['message_id']}: {result['outcome']}"
         + (f" (HTTP {result['status_code']})" if result["status_code"] else "")
         + (f": {result['error']}" if result["error"] else ""))
    return 0 if result["outcome"] == "delivered" else 1


async def cmd_log(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as session:
        await webhooks.get(session, args.endpoint)
        entries = await webhooks.delivery_log(session, args.endpoint, min(args.limit, webhooks.LOG_LIMIT))
    lines = [f"{m['id']}  {m['event_type']}  {m['status']}  attempts {m['attempts']}  "
             f"{m['last_status_code'] or ''} {m['last_error'] or ''}".rstrip() for m in entries]
    emit(args, entries, "\n".join(lines) or "No deliveries yet.")


async def cmd_resend(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        message = await webhooks.resend(session, rt.clock.now(), args.message)
    emit(args, {"id": message.id, "status": message.status}, f"Message {message.id} queued for delivery again")


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "webhooks")
    p = group.add_parser("create", help="add an endpoint; prints its signing secret once")
    p.add_argument("--workspace", required=True)
    p.add_argument("--url", required=True, help="https://... (private addresses are refused)")
    p.add_argument("--events", required=True, help=f"comma-separated, or `all`: {', '.join(EVENT_TYPES)}")
    p.add_argument("--brands", help="comma-separated brand IDs (default: every brand)")
    p.add_argument("--description", default="")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_create))
    p = group.add_parser("list", help="list endpoints (never their secrets)")
    p.add_argument("--workspace")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_list))
    for name, fn, text in (("delete", cmd_delete, "delete an endpoint and its delivery log"),
                           ("rotate-secret", cmd_rotate, "new secret; the old one keeps signing for 24 hours"),
                           ("enable", cmd_enable, "enable an endpoint again after it was disabled"),
                           ("test", cmd_test, "send a webhook.test message now and print the outcome")):
        p = group.add_parser(name, help=text)
        p.add_argument("endpoint", help="endpoint ID (whe_...)")
        add_json_flag(p)
        p.set_defaults(func=run_with_runtime(fn))
    p = group.add_parser("log", help="an endpoint's latest deliveries with response codes")
    p.add_argument("endpoint")
    p.add_argument("--limit", type=int, default=20)
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_log))
    p = group.add_parser("resend", help="deliver a message again (same webhook-id)")
    p.add_argument("message", help="message ID (msg_...)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_resend))
