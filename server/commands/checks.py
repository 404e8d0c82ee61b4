"""`socialpub integrations check INTEGRATION_ID`: a read-only check of one account with its network (token,
granted scopes against the scopes each post kind needs, reachability; tools/networks/checks.py). Exit status:
0 ok, 1 a problem found, 3 inconclusive (the network could not be asked), 2 refused (no such integration)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from server.cli import add_json_flag, run_with_runtime, subcommands
from storage.migrate import check_current
from tools.operator.actions import OperatorError
from tools.runtime import Runtime


def _yes(value: Any) -> str:
    return "unknown" if value is None else "yes" if value else "no"


def _scopes(items: list[str] | None) -> str:
    return " ".join(items) if items else "-"


def render(report: dict[str, Any]) -> str:
    """The human table; the same facts as the JSON object, never a credential."""
    token, account, scopes = report["token"], report["account"], report["scopes"]
    expiry = token["expires_at"] or "does not expire / not known"
    lines = [
        f"{report['integration_id']} ({report['platform']}, provider {report['provider']}): {report['status'].upper()}",
        f"  account   {account['name'] or account['id'] or '-'}   reachable: {_yes(account['reachable'])}",
        f"  token     valid: {_yes(token['valid'])}   expires: {expiry}   refreshable: {_yes(token['refreshable'])}",
        f"  scopes    granted ({scopes['source']}): {_scopes(scopes['granted'])}",
    ]
    rows = [(r["post_type"], r) for r in report["post_kinds"]] + [(r["operation"], r) for r in report["operations"]]
    if rows:
        width = max(len(name) for name, _ in rows) + 2
        lines.append(f"  {'post kind / operation':<{max(width, 23)}} {'ok':<8} missing / needed")
        for name, r in rows:
            missing = "unknown" if r["missing"] is None else _scopes(r["missing"])
            lines.append(f"  {name:<{max(width, 23)}} {_yes(r['ok']):<8} {missing} / {_scopes(r['needed'])}")
    for title, items in (("problems", [f"{p['code']}: {p['message']}" for p in report["problems"]]),
                         ("warnings", report["warnings"]), ("notes", report["notes"])):
        if items:
            lines.append(f"  {title}:")
            lines.extend(f"    - {item}" for item in items)
    return "\n".join(lines)


async def cmd_check(args: argparse.Namespace, rt: Runtime) -> int:
    from tools.networks.checks import CheckError, check_integration, exit_code

    await check_current(rt.db)
    try:
        report = await check_integration(rt, args.integration_id, workspace_id=args.workspace)
    except CheckError as exc:
        raise OperatorError(str(exc)) from None
    print(json.dumps(report, indent=2) if args.json else render(report))
    return exit_code(report)


def register(sub: argparse._SubParsersAction) -> None:
    integrations = subcommands(sub, "integrations")
    p = integrations.add_parser(
        "check", help="check an account read-only with its network: token, scopes per post kind, reachability "
                      "(exit 0 ok, 1 problem, 3 inconclusive, 2 refused)")
    p.add_argument("integration_id")
    p.add_argument("--workspace", help="refuse unless the account belongs to this workspace")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_check))
