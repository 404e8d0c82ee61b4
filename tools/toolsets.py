"""Toolsets: endpoints grouped by API area. MCP serves the default set unless told `--toolsets`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Toolset:
    name: str
    description: str
    default: bool


TOOLSETS: tuple[Toolset, ...] = (
    Toolset("context", "Who am I, which brands, plans and platform rules.", True),
    Toolset("brands", "Brands and their voice context.", True),
    Toolset("targets", "Connected accounts (targets, integrations) and their live options.", True),
    Toolset("media", "Upload, import, read and repair media.", True),
    Toolset("content", "Draft content items, drafts and TikTok privacy.", True),
    Toolset("schedules", "Preflight checks and Schedules (create, approve, reschedule, cancel, receipts).", True),
    Toolset("history", "Publications and publication History.", True),
    Toolset("analytics", "Post metrics: one post's readings, brand summaries, top posts, performance digest.", False),
    Toolset("publishing", "Older routes and shapes (publish runs, content items, publications, upload URLs) and posting queues.", False),
    Toolset("labels", "Labels.", False),
    Toolset("snippets", "Reusable text snippets.", False),
    Toolset("ideas", "Content ideas.", False),
    Toolset("notifications", "In-app notifications and email notification settings.", False),
    Toolset("bio", "Link in bio page and its stats.", False),
    Toolset("autopilot", "Autopilot weekly plans.", False),
    Toolset("community", "Community posts (admin role).", False),
    Toolset("admin", "Prospect-brand marketing tooling (admin role and scope).", False),
)

BY_NAME: dict[str, Toolset] = {t.name: t for t in TOOLSETS}
DEFAULT_TOOLSETS: tuple[str, ...] = tuple(t.name for t in TOOLSETS if t.default)
