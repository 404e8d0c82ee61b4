"""bio create|update|add-link|remove-link|publish|unpublish|takedown|show: Link in bio pages (operators only;
the API reads them)."""

from __future__ import annotations

import argparse

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from storage.migrate import check_current
from storage.tables.brands import Brand
from tools import bio
from tools.operator import actions as operator
from tools.runtime import Runtime


async def _brand(session, brand_id: str) -> Brand:
    brand = await session.get(Brand, brand_id)
    if brand is None:
        raise operator.OperatorError(f"no brand {brand_id}")
    return brand


def _emit_page(args: argparse.Namespace, rt: Runtime, page, what: str) -> None:
    data = bio.page_out(page, rt.settings.public_url)
    where = f" at {data['url']}" if data["url"] else ""
    emit(args, data, f"Link in bio page @{page.handle} ({page.id}) {what}; status {page.status}{where}")


def _optional(value: str | None):
    """An omitted option leaves a field unchanged; an empty string clears it."""
    if value is None:
        return bio._UNSET
    return value or None


async def cmd_create(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        page = await bio.create_page(session, rt.clock.now(), await _brand(session, args.brand), args.handle,
                                     title=args.title, bio=args.bio, theme=args.theme, accent_color=args.accent)
    _emit_page(args, rt, page, "created as a draft")


async def cmd_update(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        page = await bio.update_page(session, rt.clock.now(), await _brand(session, args.brand), handle=args.handle,
                                     title=_optional(args.title), bio=_optional(args.bio), theme=args.theme,
                                     accent_color=_optional(args.accent))
    _emit_page(args, rt, page, "draft updated (publish to show it)")


async def cmd_add_link(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        link = await bio.add_link(session, rt.clock.now(), await _brand(session, args.brand), args.title, args.url)
    emit(args, link, f"Added link {link['title']} ({link['id']}) to the draft; publish to show it")


async def cmd_remove_link(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        page = await bio.remove_link(session, rt.clock.now(), await _brand(session, args.brand), args.link)
    _emit_page(args, rt, page, f"link {args.link} removed from the draft")


async def cmd_publish(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        page = await bio.publish(session, rt.clock.now(), await _brand(session, args.brand), restore=args.restore)
    _emit_page(args, rt, page, "published")


async def cmd_unpublish(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        page = await bio.unpublish(session, rt.clock.now(), await _brand(session, args.brand))
    _emit_page(args, rt, page, "unpublished")


async def cmd_takedown(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=True) as session:
        page = await bio.takedown(session, rt.clock.now(), await _brand(session, args.brand), args.reason)
    _emit_page(args, rt, page, "taken down (publicly 404)")


async def cmd_show(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as session:
        brand = await _brand(session, args.brand)
        page = await bio.page_of(session, brand)
    if page is None:
        emit(args, {"page": None}, f"Brand {brand.id} has no Link in bio page")
        return
    _emit_page(args, rt, page, "")


def register(sub: argparse._SubParsersAction) -> None:
    group = subcommands(sub, "bio")

    def command(name: str, help: str, fn) -> argparse.ArgumentParser:
        p = group.add_parser(name, help=help)
        p.add_argument("--brand", required=True, help="brand ID")
        add_json_flag(p)
        p.set_defaults(func=run_with_runtime(fn))
        return p

    p = command("create", "create a brand's page as a draft", cmd_create)
    p.add_argument("--handle", required=True, help="public handle: the page is served at /@HANDLE")
    p.add_argument("--title", help="page title (default: the brand name)")
    p.add_argument("--bio", help="short text under the title (up to 500 characters)")
    p.add_argument("--theme", choices=["light", "dark"])
    p.add_argument("--accent", help="accent colour, #RRGGBB")

    p = command("update", "edit the draft (or the handle); '' clears a text field", cmd_update)
    p.add_argument("--handle")
    p.add_argument("--title")
    p.add_argument("--bio")
    p.add_argument("--theme", choices=["light", "dark"])
    p.add_argument("--accent")

    p = command("add-link", "append a link to the draft", cmd_add_link)
    p.add_argument("--title", required=True)
    p.add_argument("--url", required=True, help="absolute http(s) URL")

    p = command("remove-link", "remove a link from the draft", cmd_remove_link)
    p.add_argument("--link", required=True, help="link ID")

    p = command("publish", "publish the draft (the public page shows it)", cmd_publish)
    p.add_argument("--restore", action="store_true", help="publish a page that was taken down, after review")

    command("unpublish", "take the page back to draft (publicly 404)", cmd_unpublish)

    p = command("takedown", "take the page offline after a report (publicly 404)", cmd_takedown)
    p.add_argument("--reason", help="why (kept for the operator; never shown publicly)")

    command("show", "print the page", cmd_show)
