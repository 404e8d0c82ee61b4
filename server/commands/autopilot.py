"""autopilot plan|schedule-item: operators make Autopilot plans and record generated Schedules (always held)."""

from __future__ import annotations

import argparse
from datetime import date

from sqlmodel import col, select

from schemas.time import iso, parse_timestamp
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from storage.tables.accounts import User
from storage.tables.autopilot import AutopilotItem
from storage.tables.brands import Brand
from tools.autopilot import routes as autopilot
from tools.operator import actions as operator
from tools.runtime import Runtime


def _fail(exc: Exception) -> operator.OperatorError:
    return operator.OperatorError(str(exc))


async def cmd_plan(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    starts_on = None
    if args.start:
        try:
            starts_on = date.fromisoformat(args.start)
        except ValueError:
            raise operator.OperatorError("--start must be a date YYYY-MM-DD (a Monday)") from None
    async with rt.db.session(write=True) as session:
        brand = await session.get(Brand, args.brand_id)
        if brand is None:
            raise operator.OperatorError(f"no brand {args.brand_id}")
        try:
            plan, weeks = await autopilot.create_plan(session, rt.clock.now(), brand, weeks=args.weeks,
                                                      items_per_week=args.items, auto_approval=args.auto_approval,
                                                      generator=rt.topic_generator, starts_on=starts_on)
        except autopilot.AutopilotError as exc:
            raise _fail(exc) from None
        out_weeks = []
        for week in weeks:
            items = (await session.exec(select(AutopilotItem).where(AutopilotItem.week_id == week.id)
                                        .order_by(col(AutopilotItem.position)))).all()
            out_weeks.append({"week_number": week.week_number, "starts_on": week.starts_on, "theme": week.theme,
                              "items": [{"id": i.id, "topic": i.topic} for i in items]})
    lines = [f"Autopilot plan {plan.id} for brand {brand.name}: added weeks "
             f"{weeks[0].week_number}-{weeks[-1].week_number}"]
    for w in out_weeks:
        lines.append(f"  week {w['week_number']} ({w['starts_on']}): {w['theme']}")
        lines.extend(f"    {i['id']}  {i['topic']}" for i in w["items"])
    emit(args, {"plan_id": plan.id, "brand_id": brand.id, "weeks": out_weeks}, "\n".join(lines))


async def cmd_schedule_item(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    try:
        at = parse_timestamp(args.at)
    except ValueError as exc:
        raise operator.OperatorError(f"--at: {exc}") from None
    async with rt.db.session(write=True) as session:
        item = await session.get(AutopilotItem, args.item_id)
        if item is None:
            raise operator.OperatorError(f"no Autopilot item {args.item_id}")
        brand = await session.get(Brand, item.brand_id)
        assert brand is not None
        user_id = args.user
        if user_id is None:
            owner = (await session.exec(select(User).where(User.workspace_id == brand.workspace_id)
                                        .order_by(col(User.created_at), User.id).limit(1))).first()
            if owner is None:
                raise operator.OperatorError("the workspace has no user; pass --user")
            user_id = owner.id
        try:
            schedule = await autopilot.schedule_generated_item(
                session, rt.clock.now(), item, args.content_item, at, sorted(args.integration), user_id)
        except autopilot.AutopilotError as exc:
            raise _fail(exc) from None
    emit(args, {"schedule_id": schedule.id, "item_id": item.id, "approval_status": schedule.approval_status,
                "status": schedule.status, "scheduled_at": iso(schedule.scheduled_at)},
         f"Schedule {schedule.id} for Autopilot item {item.id} at {iso(schedule.scheduled_at)}: held "
         f"({schedule.approval_status}, {schedule.status}); approve it with approve_schedule")


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "autopilot")
    p = group.add_parser("plan", help="create the brand's Autopilot plan, or add weeks to its active plan")
    p.add_argument("brand_id")
    p.add_argument("--weeks", type=int, default=4, help=f"weeks to add (1 to {autopilot.PLAN_WEEKS_MAX}, default 4)")
    p.add_argument("--items", type=int, default=3, help="topics per week of a new plan (default 3)")
    p.add_argument("--start", help="first Monday of a new plan (YYYY-MM-DD; default: next Monday)")
    p.add_argument("--auto-approval", action="store_true",
                   help="record auto-approval on a new plan (Autopilot Schedules are held regardless)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_plan))

    p = group.add_parser("schedule-item", help="record the held Schedule of content generated from an item")
    p.add_argument("item_id")
    p.add_argument("--content-item", required=True, help="the content item generated from the topic")
    p.add_argument("--at", required=True, help="scheduled time, ISO 8601 with offset or Z")
    p.add_argument("--integration", action="extend", nargs="+", required=True, metavar="INTEGRATION_ID",
                   help="integration IDs: `--integration I1 I2` or `--integration I1 --integration I2`")
    p.add_argument("--user", help="user recorded as creator (default: the workspace's first user)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_schedule_item))
