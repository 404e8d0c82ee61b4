"""plans list, workspaces set-plan: the operator's billing actions."""

from __future__ import annotations

import argparse

from schemas.plans import PLAN_IDS, PLANS, plan_out
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from tools.operator import actions as operator
from tools.runtime import Runtime


def _money(cents: int) -> str:
    return f"{cents / 100:.2f} USD"


async def cmd_plans_list(args: argparse.Namespace, rt: Runtime) -> None:
    lines = []
    for p in PLANS:
        prices = ", ".join(f"{_money(x.amount_cents)}/{x.billing_period}" for x in p.prices) or "not sold"
        limits = ", ".join(f"{k} {'unlimited' if v is None else v}" for k, v in p.limits.items())
        feats = ", ".join(k for k, v in p.features.items() if v) or "none"
        lines.append(f"{p.id}: {p.name} — {prices}; {p.monthly_credits} credits/month; {limits}; features: {feats}")
    emit(args, {"plans": [plan_out(p) for p in PLANS]}, "\n".join(lines))


async def cmd_set_plan(args: argparse.Namespace, rt: Runtime) -> None:
    from tools.context import plans  # here: `workspaces list` loads this module too and needs none of it

    await check_current(rt.db)
    if args.plan not in PLAN_IDS:
        raise operator.OperatorError(f"unknown plan {args.plan!r}; plans: {', '.join(PLAN_IDS)}")
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        previous, over = await plans.set_plan(session, rt.clock.now(), ws, args.plan)
    over_out = [{"limit": u.limit, "used": u.used, "max": u.max} for u in over]
    text = f"Workspace {ws.name} ({ws.id}) plan: {previous} -> {ws.plan_id}"
    if over:
        text += ("\nOver the new plan's limits (existing items keep working; new ones are refused): "
                 + ", ".join(f"{u.limit} {u.used}/{u.max}" for u in over))
    emit(args, {"id": ws.id, "name": ws.name, "plan_id": ws.plan_id, "previous_plan_id": previous,
                "over_limits": over_out}, text)


def register(sub: argparse._SubParsersAction) -> None:
    p = subcommands(sub, "plans").add_parser("list", help="list plans, prices and limits")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_plans_list))

    p = subcommands(sub, "workspaces").add_parser(
        "set-plan", help="move a workspace to another plan")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    p.add_argument("--plan", required=True, help=f"one of: {', '.join(PLAN_IDS)}")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_set_plan))
