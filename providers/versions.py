"""The network API versions the adapters call, each with the sunset date its network publishes: the one place
a version is chosen (adapters read it from here) and the one place a test checks that none is near its end
(tests/networks/test_versions.py fails 90 days ahead, so a version is bumped before it expires, not after).

Only versions whose network publishes a sunset are listed. TikTok (`/v2/`), Pinterest (`/v5/`), X (`/2/`),
YouTube (`/v3/`), Threads (`/v1.0/`) and the Business Profile APIs (`v1`) publish none.

A deployment may pin another version without a release: `SOCIALPUB_<KEY>_VERSION` (e.g.
`SOCIALPUB_LINKEDIN_VERSION=202608`) with its published sunset in `SOCIALPUB_<KEY>_VERSION_SUNSET`
(`YYYY-MM-DD`); a pinned version without one shows its sunset as unknown in `socialpub networks status`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

WARN_DAYS = 90  # a version this close to its sunset must be bumped


@dataclass(frozen=True)
class ApiVersion:
    key: str  # names the settings: SOCIALPUB_{KEY}_VERSION, SOCIALPUB_{KEY}_VERSION_SUNSET
    label: str
    platforms: tuple[str, ...]  # the socialpub platforms whose adapters send it
    version: str
    sunset: date | None  # None: a deployment pinned a version without its sunset
    source: str  # the network's page that publishes the sunset
    overridden: bool = False

    def days_left(self, today: date) -> int | None:
        return None if self.sunset is None else (self.sunset - today).days


# The defaults, each with the page its sunset was read from (checked 2026-11-28).
DEFAULTS = (
    # LinkedIn Marketing API versioning (https://learn.microsoft.com/en-us/linkedin/marketing/versioning): monthly
    # versions, each supported at least a year. The copies of LinkedIn's "API Migration Status" table reachable on
    # 2026-11-28 list versions up to 202603 (sunset March 16, 2027; 202510 sunset October 15, 2026). 202607 (July
    # 2026) and its sunset, July 15, 2027, come from a third-party copy of that table (api-evangelist/linkedin-ads,
    # lifecycle/linkedin-ads-lifecycle.yml, taken 2026-08-13), consistent with the one-year rule: confirm both on
    # the live migrations page when next bumping, and correct this line if LinkedIn's date differs.
    # Between 202603 and 202607 the recent-changes page lists no change to the Posts, Images or Videos APIs the
    # adapter calls (202604-202607 changed analytics, events, conversions, audiences and campaigns only).
    ApiVersion("LINKEDIN", "LinkedIn-Version header", ("linkedin",), "202607", date(2027, 7, 15),
               "https://learn.microsoft.com/en-us/linkedin/marketing/integrations/migrations"),
    # Meta Graph API changelog, "Available Graph API versions": v25.0 released February 18, 2026, available
    # until July 29, 2028 (v21.0, the previous default, until January 21, 2027). Instagram (Facebook Login) and
    # Facebook Pages share it; v26.0's end date is still TBD.
    ApiVersion("GRAPH", "Graph API version", ("instagram", "facebook"), "v25.0", date(2028, 7, 29),
               "https://developers.facebook.com/docs/graph-api/changelog/versions/"),
)


def _resolve(default: ApiVersion, env: Mapping[str, str]) -> ApiVersion:
    pinned = (env.get(f"SOCIALPUB_{default.key}_VERSION") or "").strip()
    sunset_text = (env.get(f"SOCIALPUB_{default.key}_VERSION_SUNSET") or "").strip()
    if not pinned and not sunset_text:
        return default
    try:
        sunset = date.fromisoformat(sunset_text) if sunset_text else None
    except ValueError:
        raise ValueError(f"SOCIALPUB_{default.key}_VERSION_SUNSET must be a date (YYYY-MM-DD), "
                         f"not {sunset_text[:40]!r}") from None
    if not pinned or pinned == default.version:
        return ApiVersion(**{**default.__dict__, "sunset": sunset or default.sunset,
                             "overridden": bool(sunset_text)})
    return ApiVersion(**{**default.__dict__, "version": pinned, "sunset": sunset, "overridden": True})


def resolve(env: Mapping[str, str] | None = None) -> dict[str, ApiVersion]:
    """The versions in use by key, with the deployment's pins applied."""
    return {v.key: _resolve(v, os.environ if env is None else env) for v in DEFAULTS}


def expiring(version: ApiVersion, today: date, within_days: int = WARN_DAYS) -> bool:
    """Whether a version's sunset is less than `within_days` away (or unknown, or past): it must be bumped."""
    left = version.days_left(today)
    return left is None or left < within_days


def for_platform(platform: str, found: dict[str, ApiVersion] | None = None) -> ApiVersion | None:
    for version in (found or VERSIONS).values():
        if platform in version.platforms:
            return version
    return None


VERSIONS = resolve()
LINKEDIN = VERSIONS["LINKEDIN"]
GRAPH = VERSIONS["GRAPH"]
