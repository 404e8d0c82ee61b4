"""brands update: a brand's name, time zone, website, identity and voice (tools/operator/brand_settings.py, the
same action as the console's brand settings page). Long text (`--voice-profile -`) can be read from stdin."""

from __future__ import annotations

import argparse
import sys

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from tools.brands import brand_context
from tools.operator import actions as operator
from tools.operator import brand_settings
from tools.runtime import Runtime

HELP = {
    "name": "the brand's name", "timezone": "IANA time zone", "website": "http(s) URL", "description": "",
    "category": "", "logo_url": "http(s) URL", "colors": "comma-separated hex colours (#1a2b3c,...)",
    "title_font": "", "body_font": "", "voice_instructions": "custom instructions for writers",
    "voice_profile": "tone and audience", "voice_strategy": "words to use and avoid, examples",
    "default_cta_text": "default call to action", "default_cta_url": "its URL",
}


async def cmd_brands_update(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    changes = {}
    for field in HELP:
        value = getattr(args, field)
        if value == "-":  # one field from stdin, whole (voice texts span lines)
            value = sys.stdin.read()
        changes[field] = value
    if all(v is None for v in changes.values()):
        raise operator.OperatorError("nothing to change: give at least one field (`socialpub brands update -h`)")
    async with rt.db.session(write=True) as session:
        ws = await operator.default_workspace(session, args.workspace)
        brand, changed = await brand_settings.update_brand(session, rt.clock.now(), ws.id, args.brand_id, changes)
    emit(args, {"changed": changed, **brand_context(brand, rt.settings.public_url)},
         f"Brand {brand.name} ({brand.id}): " + (f"changed {', '.join(changed)}" if changed else "nothing changed"))


def register(sub: argparse._SubParsersAction) -> None:
    brands = subcommands(sub, "brands")
    p = brands.add_parser("update", help="edit a brand's name, time zone, website, identity and voice "
                                         "(what get_brand_context serves); an empty value clears a field")
    p.add_argument("brand_id")
    for field, text in HELP.items():
        p.add_argument(f"--{field.replace('_', '-')}", help=(text + "; " if text else "") + "`-` reads stdin")
    p.add_argument("--workspace", help="workspace ID (needed when there are several)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_brands_update))
