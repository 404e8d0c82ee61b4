"""Demo data: a month of published posts on the first demo brand's sandbox accounts, with the readings the
collector would have taken (the sandbox's own deterministic figures), so the demo's analytics page, the
performance resource and the docs show real charts without any real account or any waiting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlmodel import col, select

from providers.base import Account
from providers.metrics import SUPPORT
from providers.sandbox import SandboxProvider
from schemas.ids import new_id
from schemas.metrics import COMMON
from storage.tables.analytics import MetricSnapshot, PostMetricsState
from storage.tables.content import ContentItem
from storage.tables.integrations import Integration
from storage.tables.publishing import Publication, PublishExecution, PublishTarget, Schedule
from tools.analytics.cadence import STEPS, next_due

POSTS = ("Fresh roast today", "Meet our head roaster", "Cold brew is back", "Three tips for pour-over at home",
         "Behind the scenes: green beans arrive", "Weekend opening hours", "Latte art class on Saturday",
         "Our Ethiopian single origin", "How we pick our beans", "Espresso tonic recipe", "Thank you, regulars",
         "New mugs in the shop")
DAYS_BACK = 27  # posts spread over the last four weeks
HOURS = (8, 12, 17, 9, 19)  # publishing hours in the brand's time zone, so weekday/hour groups differ


async def seed_demo(session: Any, now: datetime, workspace: Any, brands: list[Any]) -> dict[str, Any]:
    if not brands:
        return {}
    brand = brands[0]
    accounts = (await session.exec(select(Integration).where(
        Integration.brand_id == brand.id, Integration.status == "connected",
        col(Integration.platform).in_(sorted(SUPPORT))))).all()
    if not accounts:
        return {}
    sandbox = SandboxProvider()
    try:
        zone = ZoneInfo(brand.timezone)
    except (KeyError, ValueError):
        zone = ZoneInfo("UTC")
    made = 0
    for n, name in enumerate(POSTS):
        account = accounts[n % len(accounts)]
        days = DAYS_BACK - n * DAYS_BACK // len(POSTS)
        local = (now - timedelta(days=days)).astimezone(zone)
        published = local.replace(hour=HOURS[n % len(HOURS)], minute=0, second=0, microsecond=0).astimezone(UTC)
        await _published_post(session, brand, account, name, published, now, sandbox)
        made += 1
    return {"analytics_posts": made}


async def _published_post(session: Any, brand: Any, account: Integration, name: str, at: datetime, now: datetime,
                          sandbox: SandboxProvider) -> None:
    item = ContentItem(id=new_id("ci"), workspace_id=brand.workspace_id, brand_id=brand.id, created_by="usr_demo",
                       name=name, copy_mode="single", single_copy={"caption": name, "hashtags": ["coffee"],
                                                                   "title": None},
                       settings={}, created_at=at, updated_at=at)
    schedule = Schedule(id=new_id("sch"), workspace_id=brand.workspace_id, brand_id=brand.id,
                        content_item_id=item.id, integration_ids=[account.id], scheduled_at=at,
                        approval_status="approved", status="published", source="api", created_by="usr_demo",
                        approved_at=at, created_at=at, updated_at=at)
    run = PublishExecution(id=new_id("run"), brand_id=brand.id, schedule_id=schedule.id, status="published",
                           started_at=at, finished_at=at, created_at=at, updated_at=at)
    schedule.latest_execution_id = run.id
    publish_id = f"sbx_demo_{item.id[-12:].lower()}"
    permalink = f"https://sandbox.socialpub.invalid/{account.platform}/posts/{publish_id[4:]}"
    pub = Publication(id=new_id("pub"), workspace_id=brand.workspace_id, brand_id=brand.id, schedule_id=schedule.id,
                      execution_id=run.id, target_id=new_id("tgt"), platform=account.platform,
                      integration_id=account.id, post_id=item.id, post_name=name, status="published",
                      source="calendar", publish_id=publish_id, permalink_url=permalink, published_at=at,
                      created_at=at, updated_at=at)
    target = PublishTarget(id=pub.target_id, execution_id=run.id, schedule_id=schedule.id, brand_id=brand.id,
                           integration_id=account.id, platform=account.platform, state="published", attempts=1,
                           idempotency_token=f"demo-{pub.id}", attempted_at=at, settled_at=at,
                           publish_id=publish_id, permalink_url=permalink, publication_id=pub.id, created_at=at,
                           updated_at=at)
    session.add_all([item, schedule])
    await session.flush()
    session.add(run)
    await session.flush()
    session.add_all([target, pub])
    acct = Account(integration_id=account.id, platform=account.platform, status="connected",
                   provider_account_id=None, credentials={}, state={})
    latest: dict[str, int | None] = {}
    step = 0
    for offset in STEPS:
        taken = at + offset
        if taken > now:
            break
        reading = await sandbox.post_metrics(acct, publish_id, published_at=at, now=taken)
        latest = {m: reading.values.get(m) for m in COMMON}
        session.add(MetricSnapshot(id=new_id("pms"), publication_id=pub.id, brand_id=brand.id, step=step,
                                   taken_at=taken, raw=dict(reading.raw), created_at=taken, updated_at=taken,
                                   **latest))
        step += 1
    due = next_due(at, now)
    state = PostMetricsState(
        publication_id=pub.id, workspace_id=brand.workspace_id, brand_id=brand.id, integration_id=account.id,
        platform=account.platform, post_id=item.id, publish_id=publish_id, published_at=at,
        status="collecting" if due else "done", step=step, next_due_at=due,
        read_at=(at + STEPS[step - 1]) if step else None, created_at=at, updated_at=now)
    for name, value in latest.items():
        setattr(state, name, value)
    session.add(state)
