"""Link in bio: the API reads (page, stats), the operator's page editing (`socialpub bio ...`), and what the
public page at `/@{handle}` records (views, distinct visitors, link clicks).

Pages are edited only by operators (the spec exposes no editing route). A draft is edited; `publish` copies
it to `published`, which is what the public page shows. `takedown` (after a report) makes the page
`offline`: it answers 404 publicly until an operator publishes it again with `restore`.
The brand's `link_in_bio_status/handle/published_at` columns mirror the page (brand context reads them).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy import delete
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas import bio as out
from schemas.bio import BrandPath, StatsRequest
from schemas.ids import new_id
from schemas.time import iso
from storage.tables.bio import BioDailyStats, BioPage, BioSalt, BioVisitor
from storage.tables.brands import Brand
from tools.endpoint import Call, Endpoint
from tools.operator.actions import OperatorError

# -- reads ---------------------------------------------------------------------------------------------------


def public_url(public_base: str, handle: str) -> str:
    return f"{public_base.rstrip('/')}/@{handle}"


def page_out(page: BioPage, public_base: str) -> dict[str, Any]:
    return {
        "id": page.id, "brand_id": page.brand_id, "handle": page.handle, "status": page.status,
        "url": public_url(public_base, page.handle) if page.status == "published" else None,
        "draft": out.PageContent.model_validate(page.draft).model_dump(),
        "published": out.PageContent.model_validate(page.published).model_dump() if page.published else None,
        "published_at": iso(page.published_at), "offline_at": iso(page.offline_at),
        "created_at": iso(page.created_at), "updated_at": iso(page.updated_at),
    }


async def page_of(session: AsyncSession, brand: Brand) -> BioPage | None:
    return (await session.exec(select(BioPage).where(BioPage.brand_id == brand.id,
                                                     BioPage.workspace_id == brand.workspace_id))).first()


async def get_bio_page(call: Call, req: BrandPath) -> out.BioPageRead:
    assert call.brand is not None
    page = await page_of(call.session, call.brand)
    return out.BioPageRead.model_validate(
        {"page": page_out(page, call.rt.settings.public_url) if page else None})


async def get_bio_stats(call: Call, req: StatsRequest) -> out.BioStats:
    assert call.brand is not None
    end = call.now.date()
    start = end - timedelta(days=req.days - 1)
    rows = {r.day: r for r in (await call.session.exec(select(BioDailyStats).where(
        BioDailyStats.brand_id == call.brand_id, BioDailyStats.day >= start, BioDailyStats.day <= end))).all()}
    daily = []
    for i in range(req.days):
        day = start + timedelta(days=i)
        r = rows.get(day)
        daily.append({"date": day.isoformat(), "views": r.views if r else 0, "visitors": r.visitors if r else 0,
                      "link_clicks": r.link_clicks if r else 0})
    return out.BioStats.model_validate({
        "days": req.days, "start_date": start.isoformat(), "end_date": end.isoformat(),
        "status": call.brand.link_in_bio_status,
        "views": sum(d["views"] for d in daily), "visitors": sum(d["visitors"] for d in daily),
        "link_clicks": sum(d["link_clicks"] for d in daily), "daily": daily,
    })


# -- operator editing ------------------------------------------------------------------------------------------


def _content(data: dict[str, Any]) -> dict[str, Any]:
    """Validate page content; refusals name the field."""
    try:
        return out.PageContent.model_validate(data).model_dump()
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "page"
        raise OperatorError(f"{where}: {err['msg'].removeprefix('Value error, ')}") from None


def _handle(value: str) -> str:
    handle = value.strip().lower().removeprefix("@")
    if not out.HANDLE_RE.match(handle):
        raise OperatorError(f"handle must be {out.HANDLE_RULE}")
    return handle


async def _check_handle_free(session: AsyncSession, handle: str, page_id: str | None) -> None:
    taken = (await session.exec(select(BioPage.id).where(BioPage.handle == handle))).first()
    if taken is not None and taken != page_id:
        raise OperatorError(f"handle @{handle} is already taken; choose another")


def _sync_brand(brand: Brand, page: BioPage | None, now: datetime) -> None:
    brand.link_in_bio_status = page.status if page else "not_created"
    brand.link_in_bio_handle = page.handle if page else None
    brand.link_in_bio_published_at = page.published_at if page else None
    brand.updated_at = now


async def _require_page(session: AsyncSession, brand: Brand) -> BioPage:
    page = await page_of(session, brand)
    if page is None:
        raise OperatorError(f"brand {brand.id} has no Link in bio page: run `socialpub bio create` first")
    return page


async def create_page(session: AsyncSession, now: datetime, brand: Brand, handle: str, *, title: str | None = None,
                      bio: str | None = None, theme: str | None = None, accent_color: str | None = None) -> BioPage:
    if await page_of(session, brand) is not None:
        raise OperatorError(f"brand {brand.id} already has a Link in bio page; use `socialpub bio update`")
    handle = _handle(handle)
    await _check_handle_free(session, handle, None)
    content = _content({"title": title if title is not None else brand.name, "bio": bio,
                        "theme": {"mode": theme or "light", "accent_color": accent_color}, "links": []})
    page = BioPage(id=new_id("bio"), workspace_id=brand.workspace_id, brand_id=brand.id, handle=handle,
                   status="draft", draft=content, created_at=now, updated_at=now)
    session.add(page)
    await session.flush()
    _sync_brand(brand, page, now)
    await session.flush()
    return page


_UNSET: Any = object()


async def update_page(session: AsyncSession, now: datetime, brand: Brand, *, handle: str | None = None,
                      title: str | None = _UNSET, bio: str | None = _UNSET, theme: str | None = None,
                      accent_color: str | None = _UNSET) -> BioPage:
    """Edit the draft (and the handle). A published page shows the change only after `publish`; a new handle
    applies at once (the old address stops answering)."""
    page = await _require_page(session, brand)
    draft = dict(page.draft)
    if title is not _UNSET:
        draft["title"] = title
    if bio is not _UNSET:
        draft["bio"] = bio
    theme_data = dict(draft.get("theme") or {})
    if theme is not None:
        theme_data["mode"] = theme
    if accent_color is not _UNSET:
        theme_data["accent_color"] = accent_color
    draft["theme"] = theme_data
    page.draft = _content(draft)
    if handle is not None:
        new_handle = _handle(handle)
        await _check_handle_free(session, new_handle, page.id)
        page.handle = new_handle
    page.updated_at = now
    _sync_brand(brand, page, now)
    await session.flush()
    return page


async def add_link(session: AsyncSession, now: datetime, brand: Brand, title: str, url: str) -> dict[str, Any]:
    page = await _require_page(session, brand)
    links = list(page.draft.get("links") or [])
    if len(links) >= out.MAX_LINKS:
        raise OperatorError(f"a page holds at most {out.MAX_LINKS} links; remove one first")
    link = {"id": new_id("lnk"), "title": title.strip(), "url": url.strip()}
    page.draft = _content({**page.draft, "links": [*links, link]})
    page.updated_at = now
    await session.flush()
    return link


async def remove_link(session: AsyncSession, now: datetime, brand: Brand, link_id: str) -> BioPage:
    page = await _require_page(session, brand)
    links = list(page.draft.get("links") or [])
    kept = [link for link in links if link["id"] != link_id]
    if len(kept) == len(links):
        raise OperatorError(f"the draft has no link {link_id}")
    page.draft = _content({**page.draft, "links": kept})
    page.updated_at = now
    await session.flush()
    return page


async def publish(session: AsyncSession, now: datetime, brand: Brand, *, restore: bool = False) -> BioPage:
    page = await _require_page(session, brand)
    if page.status == "offline" and not restore:
        raise OperatorError("this page was taken down; publish it again only after review, with --restore")
    content = _content(page.draft)
    if not content.get("title") and not content.get("links"):
        raise OperatorError("the draft is empty: give it a title or a link before publishing")
    page.published = content
    page.status = "published"
    page.published_at = now
    page.offline_at = page.offline_reason = None
    page.updated_at = now
    _sync_brand(brand, page, now)
    await session.flush()
    return page


async def unpublish(session: AsyncSession, now: datetime, brand: Brand) -> BioPage:
    page = await _require_page(session, brand)
    if page.status != "published":
        raise OperatorError(f"the page is {page.status}, not published")
    page.status = "draft"
    page.published = None
    page.published_at = None
    page.updated_at = now
    _sync_brand(brand, page, now)
    await session.flush()
    return page


async def takedown(session: AsyncSession, now: datetime, brand: Brand, reason: str | None = None) -> BioPage:
    """Take a page offline after a report: publicly 404 at once; the published content is kept for review."""
    page = await _require_page(session, brand)
    if page.status == "offline":
        raise OperatorError("the page is already offline")
    page.status = "offline"
    page.offline_at = now
    page.offline_reason = (reason or "").strip()[:500] or None
    page.updated_at = now
    _sync_brand(brand, page, now)
    await session.flush()
    return page


# -- the public page -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublicPage:
    handle: str
    brand_name: str
    content: dict[str, Any]


def _insert(session: AsyncSession, table: Any) -> Any:
    dialect = session.bind.dialect.name  # pyright: ignore[reportOptionalMemberAccess]  # the session is bound to the engine at start-up
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)


async def _daily_salt(session: AsyncSession, now: datetime, day: date) -> str:
    salt = (await session.exec(select(BioSalt.salt).where(BioSalt.day == day))).first()
    if salt is not None:
        return salt
    # First request of the day: make its salt and forget older ones (and the visitor hashes made with them),
    # so no stored hash can be linked to an address once its day is over.
    await session.exec(_insert(session, BioSalt).values(day=day, salt=secrets.token_hex(32), created_at=now)
                          .on_conflict_do_nothing(index_elements=["day"]))
    await session.exec(delete(BioSalt).where(col(BioSalt.day) < day))
    await session.exec(delete(BioVisitor).where(col(BioVisitor.day) < day))
    return (await session.exec(select(BioSalt.salt).where(BioSalt.day == day))).one()


def visitor_hash(salt: str, page_id: str, client_ip: str, user_agent: str) -> str:
    material = "\x1f".join((salt, page_id, client_ip, user_agent[:500]))
    return hashlib.sha256(material.encode("utf-8", "replace")).hexdigest()


async def _published(session: AsyncSession, handle: str) -> tuple[BioPage, Brand] | None:
    handle = handle.lower()
    if not out.HANDLE_RE.match(handle):
        return None
    row = (await session.exec(select(BioPage, Brand).join(Brand, col(Brand.id) == BioPage.brand_id)
                              .where(BioPage.handle == handle, BioPage.status == "published"))).first()
    if row is None or not row[0].published:
        return None
    return row[0], row[1]


async def _bump(session: AsyncSession, brand_id: str, day: date, *, views: int = 0, visitors: int = 0,
                clicks: int = 0) -> None:
    stmt = _insert(session, BioDailyStats).values(brand_id=brand_id, day=day, views=views, visitors=visitors,
                                                  link_clicks=clicks)
    cols = stmt.excluded
    await session.exec(stmt.on_conflict_do_update(
        index_elements=["brand_id", "day"],
        set_={"views": BioDailyStats.views + cols.views, "visitors": BioDailyStats.visitors + cols.visitors,
              "link_clicks": BioDailyStats.link_clicks + cols.link_clicks}))


async def view_page(session: AsyncSession, now: datetime, handle: str, client_ip: str, user_agent: str,
                    *, count: bool = True) -> PublicPage | None:
    """The published page for `handle`, recording one view (and a visitor the first time today); None when
    there is no published page (draft, offline, unknown: the caller answers 404)."""
    found = await _published(session, handle)
    if found is None:
        return None
    page, brand = found
    if count:
        day = now.date()
        digest = visitor_hash(await _daily_salt(session, now, day), page.id, client_ip, user_agent)
        first = (await session.exec(
            _insert(session, BioVisitor).values(brand_id=brand.id, day=day, visitor_hash=digest)
            .on_conflict_do_nothing(index_elements=["brand_id", "day", "visitor_hash"])
            .returning(BioVisitor.visitor_hash))).first() is not None
        await _bump(session, brand.id, day, views=1, visitors=int(first))
    return PublicPage(page.handle, brand.name, out.PageContent.model_validate(page.published).model_dump())


async def click_link(session: AsyncSession, now: datetime, handle: str, link_id: str) -> str | None:
    """The stored URL of a link on a published page, recording the click; None when there is no such link."""
    found = await _published(session, handle)
    if found is None:
        return None
    page, brand = found
    url = next((link["url"] for link in (page.published or {}).get("links", []) if link.get("id") == link_id), None)
    if url is None:
        return None
    await _bump(session, brand.id, now.date(), clicks=1)
    return out.check_url(url)  # stored URLs were validated; check again before redirecting anyone


# -- demo ------------------------------------------------------------------------------------------------------


async def seed_demo(session: AsyncSession, now: datetime, workspace: Any, brands: list[Brand]) -> dict:
    brand = brands[0]
    base = f"{brand.name.lower().replace(' ', '')[:20]}"
    handle = base if (await session.exec(select(BioPage.id).where(BioPage.handle == base))).first() is None \
        else f"{base[:20]}-{secrets.token_hex(3)}"
    page = await create_page(session, now, brand, handle, bio=brand.description)
    for title, url in (("Shop this week's roast", brand.default_cta_url or brand.website),
                       ("Our website", brand.website)):
        if url:
            await add_link(session, now, brand, title, url)
    await publish(session, now, brand)
    return {"bio_page": page}


ENDPOINTS = [
    Endpoint(
        name="get_bio_page", method="GET", path="/v1/brands/{brand_id}/bio", toolset="bio", handler=get_bio_page,
        scopes=("posts:read",), request=BrandPath, response=out.BioPageRead, title="Get Link in bio page",
        summary="Read the brand's Link in bio page: handle, status, public URL, draft and published content "
                "(title, bio, theme, links), or null when the brand has none.",
        guidance="Read-only; pages are edited by the operator (`socialpub bio`), not through the API. For traffic "
                 "call get_bio_stats.",
    ),
    Endpoint(
        name="get_bio_stats", method="GET", path="/v1/brands/{brand_id}/bio/stats", toolset="bio",
        handler=get_bio_stats, scopes=("posts:read",), request=StatsRequest, response=out.BioStats,
        title="Get Link in bio stats",
        summary="Read the Link in bio page's views, distinct visitors and link clicks for the last 7 (default) "
                "or 28 UTC days, with a per-day breakdown.",
        guidance="Read-only. Counts come from the public page's real traffic; a brand without a page reports "
                 "zeros with status not_created.",
    ),
]
