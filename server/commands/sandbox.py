"""`socialpub sandbox set`: inject faults and account facts into a sandbox account, so an operator can try an
agent against every failure path (format: docs/targets.md, "Sandbox faults")."""

from __future__ import annotations

import argparse
import json
from typing import Any

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from providers.sandbox import FAULT_KINDS, FAULT_OPERATIONS, STATE_KEYS
from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from storage.tables.integrations import Integration
from tools.operator.actions import OperatorError
from tools.runtime import Runtime


def parse_fault(text: str) -> tuple[str, str]:
    operation, sep, spec = text.partition("=")
    kind, _, times = spec.partition(":")
    if not sep or operation not in FAULT_OPERATIONS:
        raise OperatorError(f"--fault takes OPERATION=KIND[:TIMES] with OPERATION one of {', '.join(FAULT_OPERATIONS)}")
    if kind not in FAULT_KINDS:
        raise OperatorError(f"fault kind must be one of {', '.join(FAULT_KINDS)}")
    if times and (not times.isdigit() or int(times) < 1):
        raise OperatorError("fault TIMES must be a whole number from 1")
    return operation, spec


def parse_state(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or key not in STATE_KEYS:
        raise OperatorError(f"--state takes KEY=JSON with KEY one of {', '.join(STATE_KEYS)}")
    try:
        return key, json.loads(raw)
    except ValueError as exc:
        raise OperatorError(f"--state {key}: the value must be JSON (e.g. true, [\"SELF_ONLY\"])") from exc


async def set_sandbox_state(session: AsyncSession, integration_id: str, *, faults: dict[str, str],
                            facts: dict[str, Any], clear: bool = False,
                            workspace_id: str | None = None) -> tuple[Integration, dict[str, Any]]:
    """Set faults and facts of one sandbox account (the CLI and the console); returns the row and what is now
    injected. `workspace_id` confines the lookup to one workspace (the console)."""
    query = select(Integration).where(Integration.id == integration_id)
    if workspace_id is not None:
        query = query.where(Integration.workspace_id == workspace_id)
    row = (await session.exec(query)).first()
    if row is None:
        raise OperatorError(f"no integration {integration_id}")
    if row.provider != "sandbox":
        raise OperatorError(f"integration {row.id} is not a sandbox account (provider {row.provider})")
    state = dict(row.provider_state or {})
    if clear:
        state = {k: v for k, v in state.items() if k not in ("faults", *STATE_KEYS)}
    if faults:
        state["faults"] = {**(state.get("faults") or {}), **faults}
    state.update(facts)
    row.provider_state = state  # provider-private: the Integration resource (and updated_at) is unchanged
    session.add(row)
    return row, {k: v for k, v in state.items() if k in ("faults", *STATE_KEYS)}


async def cmd_sandbox_set(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    faults = dict(parse_fault(f) for f in args.fault or [])
    facts = dict(parse_state(s) for s in args.state or [])
    async with rt.db.session(write=True) as session:
        row, shown = await set_sandbox_state(session, args.integration_id, faults=faults, facts=facts,
                                             clear=args.clear)
    emit(args, {"id": row.id, "platform": row.platform, "sandbox": shown},
         f"Sandbox {row.platform} account {row.id}: {json.dumps(shown) if shown else 'no faults, default facts'}")


def register(sub: argparse._SubParsersAction) -> None:
    sandbox = subcommands(sub, "sandbox")
    p = sandbox.add_parser("set", help="set faults and account facts of a sandbox account")
    p.add_argument("integration_id")
    p.add_argument("--fault", action="append", metavar="OPERATION=KIND[:TIMES]",
                   help=f"operation: {', '.join(FAULT_OPERATIONS)}; kind: {', '.join(FAULT_KINDS)} (repeatable)")
    p.add_argument("--state", action="append", metavar="KEY=JSON",
                   help=f"account fact: {', '.join(STATE_KEYS)} (repeatable)")
    p.add_argument("--clear", action="store_true", help="remove every fault and fact first")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_sandbox_set))
