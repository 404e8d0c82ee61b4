"""The demo seed (`socialpub demo`, test fixtures, benchmarks): a workspace, brands, sandbox accounts and a
key, plus each area's demo data. It reads the list of areas (tools/areas.py), so it sits above every area:
no area imports it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from schemas.platforms import PLATFORMS
from schemas.scopes import ALL_SCOPES
from tools import areas
from tools.operator.actions import connect_integration, create_brand, create_key, create_workspace

# The demo workspace's plan: room for its accounts on every network, and paid features such as Autopilot.
DEMO_PLAN_ID = "agency"

DEMO_BRANDS = (
    {
        "name": "Acme Coffee Roasters", "timezone": "America/New_York", "website": "https://acme-coffee.example",
        "category": "Food & Beverage", "description": "Small-batch roastery shipping fresh beans weekly.",
        "colors": ["#3B2F2F", "#C8A27A", "#F5EFE6"], "title_font": "Playfair Display", "body_font": "Inter",
        "voice_instructions": "Warm, knowledgeable, never pushy. Short sentences.",
        "voice_profile": "## Voice\nFriendly coffee nerds who love sharing brewing tips.",
        "voice_strategy": "## Strategy\nThree posts a week: brewing tips, new origins, behind the scenes.",
        "default_cta_text": "Shop this week's roast", "default_cta_url": "https://acme-coffee.example/shop",
        "content_preferences": {"default_cta": "Shop this week's roast", "logo_frequency": "sometimes",
                                "cta_frequency": "often"},
        "brand_kit": {"colors": ["#3B2F2F", "#C8A27A", "#F5EFE6"], "fonts": {"title": "Playfair Display",
                                                                             "body": "Inter"},
                      "style_guidelines": "Natural light, earthy tones, no stock photos."},
        "image_posting": "daily", "video_posting": "weekly",
    },
    {
        "name": "Northwind Outdoors", "timezone": "Europe/Berlin", "website": "https://northwind.example",
        "category": "Outdoor & Sports", "description": "Gear and guides for alpine hiking.",
        "colors": ["#1F4E5F", "#F2A541"], "voice_instructions": "Adventurous and practical; safety first.",
    },
)


async def seed_demo(session: AsyncSession, now: datetime) -> dict[str, Any]:
    """A workspace with two brands, sandbox accounts on every platform (one TikTok account expired) and a
    full-scope key. Areas that own other demo data (labels, media...) are listed in tools/areas.py."""
    ws = await create_workspace(session, now, "Demo workspace", plan_id=DEMO_PLAN_ID)
    brands = [await create_brand(session, now, ws, **spec) for spec in DEMO_BRANDS]
    integrations = []
    for brand in brands:
        for p in PLATFORMS:
            integrations.append(await connect_integration(session, now, brand, p.key))
        integrations.append(await connect_integration(
            session, now, brand, "tiktok", display_name=f"{brand.name} TikTok (old account)",
            username=f"{brand.name.lower().replace(' ', '')[:16]}_old", status="expired"))
    key, secret = await create_key(session, now, ws, "Demo full-access key", ALL_SCOPES, role="admin")
    seeded: dict[str, Any] = {}
    for seeder in areas.demo_seeders():
        seeded.update(await seeder(session, now, ws, brands) or {})
    return {"workspace": ws, "brands": brands, "integrations": integrations, "key": key, "secret": secret,
            **seeded}

