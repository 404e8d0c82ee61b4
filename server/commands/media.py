"""media-folders: the operator's media folders (the API files media into existing folders only)."""

from __future__ import annotations

import argparse

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from storage.tables.brands import Brand
from tools.media.items import create_media_folder, list_media_folders
from tools.operator import actions as operator
from tools.runtime import Runtime


def folder_out(folder) -> dict:
    return {"id": folder.id, "brand_id": folder.brand_id, "name": folder.name}


async def _brand(session, brand_id: str) -> Brand:
    brand = await session.get(Brand, brand_id)
    if brand is None:
        raise operator.OperatorError(f"no brand {brand_id}")
    return brand


async def cmd_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        folder = await create_media_folder(session, rt.clock.now(), await _brand(session, args.brand), args.name)
    emit(args, folder_out(folder), f"Media folder {folder.name} ({folder.id})")


async def cmd_list(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as session:
        folders = await list_media_folders(session, await _brand(session, args.brand))
    emit(args, {"folders": [folder_out(f) for f in folders]},
         "\n".join(f"{f.id}  {f.name}" for f in folders) or "No media folders.")


def register(sub: argparse._SubParsersAction) -> None:
    folders = subcommands(sub, "media-folders")
    p = folders.add_parser("create", help="create a media folder (use its ID as folder_id in uploads and imports)")
    p.add_argument("--brand", required=True)
    p.add_argument("--name", required=True)
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_create))
    p = folders.add_parser("list", help="list a brand's media folders")
    p.add_argument("--brand", required=True)
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_list))
