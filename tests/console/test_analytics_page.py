"""The analytics page in Chromium against `socialpub serve` on the demo (issue 34): the demo's month of sandbox
metrics shows as totals, a daily chart, per-platform figures and top posts; a period can be chosen; a member
without analytics:read in their key is told so. Screenshot in docs/console/analytics.png."""

from __future__ import annotations

import pytest

from tests.console.test_browser import browser, page, server, shot, sign_in  # noqa: F401  (fixtures)

pytestmark = pytest.mark.slow

from playwright.sync_api import Page, expect  # noqa: E402


def test_the_demo_brand_analytics_page(page: Page, server) -> None:  # noqa: F811
    sign_in(page, server, "admin@example.com")
    page.goto(f"{server.base}/console/brands/{server.brand}/analytics")
    expect(page.get_by_role("heading", level=1)).to_have_text("Analytics")
    expect(page.get_by_role("link", name="Analytics")).to_have_attribute("aria-current", "page")
    totals = page.locator("table").first
    expect(totals).to_contain_text("likes")
    assert page.locator("svg.chart rect").count() == 30  # one bar per day of the default period
    expect(page.get_by_role("heading", name="Top posts by likes")).to_be_visible()
    expect(page.locator("table").nth(2)).to_contain_text("youtube")
    shot(page, "analytics")
    page.get_by_label("Period", exact=True).select_option("7")
    page.get_by_role("button", name="Show").click()
    assert page.locator("svg.chart rect").count() == 7


def test_the_performance_digest_matches_the_page(server) -> None:  # noqa: F811
    perf = server.api.get(f"/brands/{server.brand}/analytics/performance").json()["data"]
    summary = server.api.get(f"/brands/{server.brand}/analytics/summary").json()["data"]
    assert perf["posts"] == summary["posts"] == 12 and "Top posts" in perf["text"]
