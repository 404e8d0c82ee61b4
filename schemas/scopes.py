"""The scope table of the spec's Authentication section; every other list of scopes derives from it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    name: str
    grants: str
    # Listed by the default `GET /v1/context`; scopes added after that list was fixed appear only with
    # `scope_disclosure=effective`.
    default_disclosed: bool = True
    # Never listed by `scope_disclosure=effective` (administrative or credential-affecting).
    sensitive: bool = False


SCOPES: tuple[Scope, ...] = (
    Scope("brands:read", "list and get brands"),
    Scope("integrations:read", "list targets and integrations; read live TikTok privacy choices"),
    Scope("integrations:write", "refresh live TikTok privacy choices (may rotate credentials or mark reauthorisation)",
          sensitive=True),
    Scope("media:read", "read one media item, list media"),
    Scope("media:write", "upload, import, create repair derivative"),
    Scope("posts:read", "brand context, labels, content items, drafts, Link in bio, Autopilot plans"),
    Scope("posts:write", "create or edit unused drafts, delete them, update TikTok privacy, approve and regenerate "
          "Autopilot ideas; needed with schedule:write to move a schedule to drafts"),
    Scope("schedule:read", "read Schedules, receipts, queues, publish runs"),
    Scope("schedule:write", "preflight, manage Schedules, queues, publish runs"),
    Scope("publish:execute", "Publishing permission: post to connected accounts; required when approval_status is "
          "approved"),
    Scope("publications:read", "publications, History", default_disclosed=False),
    Scope("notifications:read", "read own notifications and notification settings", default_disclosed=False),
    Scope("notifications:write", "update and revert notification settings"),
    Scope("ideas:read", "ideas"),
    Scope("ideas:write", "ideas"),
    Scope("labels:read", "labels (older routes)"),
    Scope("labels:write", "labels (older routes)"),
    Scope("snippets:read", "snippets"),
    Scope("snippets:write", "snippets"),
    Scope("community:read", "community routes", sensitive=True),
    Scope("community:write", "community routes", sensitive=True),
    Scope("admin:read", "admin marketing routes", sensitive=True),
    Scope("admin:marketing", "admin marketing routes", sensitive=True),
    # Not in the spec (issue 34: post metrics are ours to design); after the spec's fixed default list.
    Scope("analytics:read", "post metrics, analytics summaries, top posts, brand performance",
          default_disclosed=False),
)

BY_NAME: dict[str, Scope] = {s.name: s for s in SCOPES}
ALL_SCOPES: tuple[str, ...] = tuple(s.name for s in SCOPES)
# Held scopes the default `GET /v1/context` list leaves out (the spec keeps that list for older clients); links
# may still require them (a receipt's History link: publications:read), so get_context names them.
DEFAULT_UNDISCLOSED: tuple[str, ...] = tuple(s.name for s in SCOPES if not s.default_disclosed)
# The scope that lets a key publish: approve Schedules, create approved ones, request provider cleanup.
PUBLISH_SCOPE = BY_NAME["publish:execute"].name

ROLES: tuple[str, ...] = ("member", "admin", "super_admin")
ADMIN_ROLES: tuple[str, ...] = ("admin", "super_admin")

# The most a key may hold, by its owner's role. Members may prepare and hold work but not publish, and never hold
# the sensitive scopes (credential-affecting, community, admin marketing); admins hold everything. Key creation
# (tools/operator/actions.py `create_key`, behind the CLI, the console and MCP sign-in) refuses anything beyond.
ROLE_SCOPES: dict[str, tuple[str, ...]] = {
    "member": tuple(s.name for s in SCOPES if s.name != PUBLISH_SCOPE and not s.sensitive),
    "admin": ALL_SCOPES,
    "super_admin": ALL_SCOPES,
}
# Scopes whose routes check the owner's role themselves (403 ROLE_REQUIRED, spec Authentication rule 7).
ROLE_CHECKED_SCOPES = frozenset({"community:read", "community:write", "admin:read", "admin:marketing"})


def usable_scopes(scopes: list[str] | tuple[str, ...] | frozenset[str], role: str) -> frozenset[str]:
    """What a key may use: its scopes within its owner's role. A key stored with more (made before key creation
    refused it) loses the rest at authentication, so a member's key never publishes; the role-checked scopes
    are kept for the routes' own ROLE_REQUIRED answer."""
    allowed = ROLE_SCOPES.get(role, ())
    return frozenset(s for s in scopes if s in allowed or s in ROLE_CHECKED_SCOPES)


def parse_scopes(text: str) -> tuple[str, ...]:
    """`all` or a comma list, validated against the table; returned in table order."""
    if text.strip() == "all":
        return ALL_SCOPES
    wanted = {s.strip() for s in text.split(",") if s.strip()}
    unknown = sorted(wanted - BY_NAME.keys())
    if unknown:
        raise ValueError(f"unknown scopes: {', '.join(unknown)}; known: {', '.join(ALL_SCOPES)}")
    return tuple(s for s in ALL_SCOPES if s in wanted)


def disclosed(held: frozenset[str] | set[str], effective: bool) -> list[str]:
    """The scope list `GET /v1/context` reports (see docs/decisions.md, 'Context scope disclosure')."""
    if effective:
        return [s.name for s in SCOPES if s.name in held and not s.sensitive]
    return [s.name for s in SCOPES if s.name in held and s.default_disclosed]
