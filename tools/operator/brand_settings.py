"""Edit a brand's settings: name, time zone, website, identity and voice, the fields `get_brand_context` serves.

An operator action (the console's brand settings page and `socialpub brands update`), not an API route: the
spec has no public brand update (docs/decisions.md, "Brand settings are an operator action"). The brand
context is read from the row on every call, so a change shows there at once.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from storage.tables.brands import Brand
from tools.operator.actions import OperatorError, check_timezone

# field -> (what it is called, longest). Text fields; "" clears an optional one.
TEXT_FIELDS: dict[str, tuple[str, int]] = {
    "name": ("name", 200), "description": ("description", 5000), "category": ("category", 200),
    "timezone": ("time zone", 64), "title_font": ("title font", 200), "body_font": ("body font", 200),
    "voice_instructions": ("voice instructions", 10000), "voice_profile": ("voice profile", 20000),
    "voice_strategy": ("voice strategy", 20000), "default_cta_text": ("call to action text", 500),
}
URL_FIELDS: dict[str, str] = {"website": "website", "logo_url": "logo URL", "logo_light_url": "light logo URL",
                              "logo_dark_url": "dark logo URL", "default_cta_url": "call to action URL"}
FIELDS = (*TEXT_FIELDS, *URL_FIELDS, "colors")
COLOR = re.compile(r"#[0-9a-fA-F]{6}")
MAX_COLORS = 12


def _text(field: str, value: str) -> str | None:
    label, longest = TEXT_FIELDS[field]
    value = value.strip()
    if len(value) > longest:
        raise OperatorError(f"the {label} is longer than {longest} characters")
    if field in ("name", "timezone") and not value:
        raise OperatorError(f"the {label} cannot be empty")
    return value or None


def _url(field: str, value: str) -> str | None:
    value = value.strip()
    if value and (len(value) > 2000 or not value.startswith(("https://", "http://")) or any(
            c.isspace() for c in value)):
        raise OperatorError(f"the {URL_FIELDS[field]} must be an http(s) URL of at most 2000 characters")
    return value or None


def _colors(value: Any) -> list[str]:
    items = [c.strip() for c in (value.split(",") if isinstance(value, str) else value or []) if c.strip()]
    if len(items) > MAX_COLORS or not all(COLOR.fullmatch(c) for c in items):
        raise OperatorError(f"colours are up to {MAX_COLORS} hex values like #1a2b3c, separated by commas")
    return [c.lower() for c in items]


def clean(changes: dict[str, Any]) -> dict[str, Any]:
    """The validated values of the fields given (None: not given). Unknown fields are refused."""
    unknown = sorted(set(changes) - set(FIELDS))
    if unknown:
        raise OperatorError(f"unknown brand fields: {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for field, value in changes.items():
        if value is None:
            continue
        if field == "colors":
            out[field] = _colors(value)
        elif not isinstance(value, str):
            raise OperatorError(f"{field} must be text")
        elif field in URL_FIELDS:
            out[field] = _url(field, value)
        else:
            out[field] = _text(field, value)
            if field == "timezone":
                check_timezone(out[field])
    return out


async def update_brand(session: AsyncSession, now: datetime, workspace_id: str, brand_id: str,
                       changes: dict[str, Any]) -> tuple[Brand, list[str]]:
    """Apply `changes` to a brand of the workspace; returns the brand and the fields that changed."""
    values = clean(changes)
    brand = await session.get(Brand, brand_id[:40])
    if brand is None or brand.workspace_id != workspace_id:
        raise OperatorError(f"no brand {brand_id[:40]} in this workspace")
    changed = [f for f, v in values.items() if getattr(brand, f) != v]
    for field in changed:
        setattr(brand, field, values[field])
    if changed:
        brand.updated_at = now
        session.add(brand)
        await session.flush()
    return brand, changed
