"""Item 3 of issue 28: every versioned network API the adapters call is at least 90 days from the sunset its
network publishes, checked against today's real date (not the test clock), so a version is bumped before it
expires. The checking function is shown to fail on LinkedIn's 202510, whose sunset (October 15, 2026, LinkedIn
Marketing API "API Migration Status" table, https://learn.microsoft.com/en-us/linkedin/marketing/integrations/
migrations) made every `/rest/*` call refused."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from providers import facebook, instagram, linkedin, versions
from providers.versions import ApiVersion, expiring

TODAY = date.today()  # the real date on purpose: the point is to fail before a real sunset


@pytest.mark.parametrize("version", versions.DEFAULTS, ids=lambda v: v.key)
def test_every_declared_version_is_at_least_90_days_from_its_sunset(version: ApiVersion) -> None:
    assert version.sunset is not None and version.source.startswith("https://")
    assert not expiring(version, TODAY), (
        f"{version.label} {version.version} sunsets {version.sunset} ({version.days_left(TODAY)} days from "
        f"{TODAY}): bump it in providers/versions.py to a version {versions.WARN_DAYS}+ days from its sunset "
        f"(see {version.source})")


# The default until issue 33: sunset March 16, 2027 in the same table, so refused from 2026-12-17 on (89 days left).
LINKEDIN_202603 = ApiVersion("LINKEDIN", "LinkedIn-Version header", ("linkedin",), "202603", date(2027, 3, 16),
                             "https://learn.microsoft.com/en-us/linkedin/marketing/integrations/migrations")
LINKEDIN_202510 = ApiVersion("LINKEDIN", "LinkedIn-Version header", ("linkedin",), "202510", date(2026, 10, 15),
                             "https://learn.microsoft.com/en-us/linkedin/marketing/integrations/migrations")


@pytest.mark.parametrize(("version", "today", "refused"), [
    # The version the adapter sent until issue 28: sunset already past today.
    (LINKEDIN_202510, date(2026, 11, 28), True),
    # ... and already refused 90 days ahead of its sunset, when it should have been bumped.
    (LINKEDIN_202510, date(2026, 10, 15) - timedelta(days=89), True),
    (LINKEDIN_202510, date(2026, 10, 15) - timedelta(days=90), False),
    (LINKEDIN_202510, TODAY, date(2026, 10, 15) - timedelta(days=90) < TODAY),
    (LINKEDIN_202603, date(2026, 12, 17), True),
    (LINKEDIN_202603, date(2026, 12, 16), False),
    # A pinned version whose sunset nobody gave is refused too: unknown is not safe.
    (ApiVersion("LINKEDIN", "x", ("linkedin",), "202607", None, "-"), TODAY, True),
], ids=["202510-today", "202510-89-days-ahead", "202510-90-days-ahead", "202510-real-today",
                          "202603-89-days-ahead", "202603-90-days-ahead", "unknown-sunset"])
def test_the_check_refuses_a_version_near_or_past_its_sunset(version: ApiVersion, today: date,
                                                              refused: bool) -> None:
    assert expiring(version, today) is refused


def test_adapters_send_the_registry_versions() -> None:
    """One place: the adapters read their version from the registry (no copy of it elsewhere)."""
    assert versions.LINKEDIN.version == linkedin.VERSION
    graph = versions.GRAPH.version
    assert instagram.GRAPH_URL.endswith(f"/{graph}") and f"/{graph}/dialog/oauth" in instagram.AUTHORIZE_URL
    assert facebook.VIDEO_URL.endswith(f"/{graph}") and facebook.RUPLOAD_URL.endswith(f"/{graph}")
    assert versions.for_platform("linkedin") is versions.LINKEDIN
    assert versions.for_platform("facebook") is versions.GRAPH and versions.for_platform("tiktok") is None


def test_a_deployment_pins_a_version_and_its_sunset() -> None:
    found = versions.resolve({"SOCIALPUB_LINKEDIN_VERSION": "202608",
                              "SOCIALPUB_LINKEDIN_VERSION_SUNSET": "2027-08-16"})
    assert found["LINKEDIN"].version == "202608" and found["LINKEDIN"].sunset == date(2027, 8, 16)
    assert found["LINKEDIN"].overridden and not found["GRAPH"].overridden
    pinned = versions.resolve({"SOCIALPUB_GRAPH_VERSION": "v26.0"})["GRAPH"]
    assert pinned.version == "v26.0" and pinned.sunset is None  # another version's sunset is not guessed
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        versions.resolve({"SOCIALPUB_GRAPH_VERSION_SUNSET": "soon"})
