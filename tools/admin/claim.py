"""Claim links: a single-use, optionally expiring link an admin sends to a prospect, who claims the brand.

The token is 256 random bits (43 URL-safe characters), shown once in `claim_url`; only its SHA-256 is stored
(with a 4-character hint), so neither the database nor an idempotency record can give it back. A new link
revokes the brand's earlier unused links. The public page `GET /claim/{token}` shows the offer (it changes
nothing, so link previews and prefetchers cannot use it up); `POST /claim/{token}` claims: one conditional
update consumes the link (unused, unrevoked, unexpired), so two racing claims cannot both succeed. Claiming
sets the prospect's `claimed_at` and its onboarding step to `claimed`; admin marketing writes then answer
409. Unknown and revoked tokens answer 404, used and expired ones 410.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import and_, or_, update
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.ids import new_id
from schemas.time import truncate_ms
from storage.tables.admin import AdminClaimLink, AdminProspect
from storage.tables.brands import Brand

CLAIM_ROUTE = "/claim/{token}"
TOKEN_BYTES = 32
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")

State = Literal["active", "expired", "used", "revoked", "missing"]


def token_hash(token: str) -> str:
    # 256 random bits: one fast hash is enough (nothing to guess from a dictionary).
    return hashlib.sha256(token.encode()).hexdigest()


def token_hint(token: str) -> str:
    return f"…{token[-4:]}"


def claim_url(public_url: str, token: str) -> str:
    return public_url.rstrip("/") + CLAIM_ROUTE.format(token=token)


def link_state(row: AdminClaimLink, now: datetime) -> State:
    if row.used_at is not None:
        return "used"
    if row.revoked_at is not None:
        return "revoked"
    if row.expires_at is not None and now >= row.expires_at:
        return "expired"
    return "active"


async def latest_link(session: AsyncSession, brand: Brand) -> AdminClaimLink | None:
    return (await session.exec(select(AdminClaimLink).where(
        AdminClaimLink.brand_id == brand.id, AdminClaimLink.workspace_id == brand.workspace_id)
        .order_by(col(AdminClaimLink.created_at).desc(), col(AdminClaimLink.id).desc()).limit(1))).first()


async def create_link(session: AsyncSession, now: datetime, brand: Brand, user_id: str,
                      ttl_hours: float | None) -> tuple[AdminClaimLink, str]:
    """A new link (revoking the brand's earlier unused ones) and its token, which is never stored."""
    await session.exec(update(AdminClaimLink).where(
        col(AdminClaimLink.brand_id) == brand.id, col(AdminClaimLink.used_at).is_(None),
        col(AdminClaimLink.revoked_at).is_(None)).values(revoked_at=now, updated_at=now))
    token = secrets.token_urlsafe(TOKEN_BYTES)
    expires = truncate_ms(now + timedelta(hours=ttl_hours)) if ttl_hours is not None else None
    row = AdminClaimLink(id=new_id("clm"), workspace_id=brand.workspace_id, brand_id=brand.id,
                         token_hash=token_hash(token), token_hint=token_hint(token), created_by=user_id,
                         expires_at=expires, created_at=now, updated_at=now)
    session.add(row)
    await session.flush()
    return row, token


@dataclass(frozen=True)
class ClaimView:
    state: State
    brand_name: str = ""
    expires_at: datetime | None = None
    claimed_now: bool = False


async def _find(session: AsyncSession, token: str) -> AdminClaimLink | None:
    if not _TOKEN_RE.match(token):
        return None
    return (await session.exec(select(AdminClaimLink).where(AdminClaimLink.token_hash == token_hash(token)))).first()


async def view(session: AsyncSession, now: datetime, token: str) -> ClaimView:
    """What the public page shows; changes nothing."""
    row = await _find(session, token)
    if row is None:
        return ClaimView("missing")
    brand = await session.get(Brand, row.brand_id)
    return ClaimView(link_state(row, now), brand.name if brand else "", row.expires_at)


async def claim(session: AsyncSession, now: datetime, token: str) -> ClaimView:
    """Use the link once: the brand's prospect is marked claimed. Any other state is reported, not changed."""
    row = await _find(session, token)
    if row is None:
        return ClaimView("missing")
    result = await session.exec(update(AdminClaimLink).where(
        col(AdminClaimLink.id) == row.id, col(AdminClaimLink.used_at).is_(None), col(AdminClaimLink.revoked_at).is_(None),
        or_(col(AdminClaimLink.expires_at).is_(None), and_(col(AdminClaimLink.expires_at) > now))
    ).values(used_at=now, updated_at=now))
    brand = await session.get(Brand, row.brand_id)
    name = brand.name if brand else ""
    if result.rowcount != 1:
        await session.refresh(row)
        return ClaimView(link_state(row, now), name, row.expires_at)
    prospect = await session.get(AdminProspect, row.brand_id)
    if prospect is not None:
        prospect.claimed_at = now
        prospect.onboarding_step = "claimed"
        prospect.updated_at = now
    return ClaimView("used", name, row.expires_at, claimed_now=True)
