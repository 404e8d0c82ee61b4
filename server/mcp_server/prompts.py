"""Prompts for the main workflows. Each prompt is a list of steps and every step names ONE tool; a prompt is
rendered for a connection with only the steps whose tool that connection has, and names the rest as not
available (so an agent is never told to call a tool that is not there). `tests/mcp/test_prompts.py` checks
that every tool a step names exists in the catalogue and that step texts name no other tool.
"""

from __future__ import annotations

import string
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import mcp_types as types

from tools.endpoint import Endpoint


@dataclass(frozen=True)
class Step:
    tool: str
    text: str  # may use {argument} placeholders; names no tool other than `tool`


@dataclass(frozen=True)
class Arg:
    name: str
    description: str
    required: bool = False
    default: str = ""


@dataclass(frozen=True)
class PromptDef:
    name: str
    title: str
    description: str
    arguments: tuple[Arg, ...]
    intro: str
    steps: tuple[Step, ...]
    outro: str = ""

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.tool for s in self.steps))


PROMPTS: tuple[PromptDef, ...] = (
    PromptDef(
        name="draft_and_schedule_post",
        title="Draft and schedule a post for a brand",
        description="Walk the tools in order to write a draft in the brand's voice, check it with preflight and "
                    "create a Schedule held for review. Nothing is published without approval.",
        arguments=(
            Arg("brand_id", "The brand to post for (from get_context).", required=True),
            Arg("brief", "What the post is about, in a sentence or two.", default="(ask the user)"),
            Arg("scheduled_at", "When to publish, ISO 8601 with an explicit offset.", default="(ask the user)"),
        ),
        intro="Draft and schedule a social post for brand {brand_id}. Brief: {brief}. Publish time: "
              "{scheduled_at}. Use these tools in order; stop and tell the user when a step fails and its "
              "error's repair_guidance does not say how to continue.",
        steps=(
            Step("get_context", "Check that brand {brand_id} is listed and which scopes the key holds. Without "
                                "posts:write and schedule:write this workflow cannot finish: say so."),
            Step("get_brand_context", "Read brand {brand_id}'s voice, timezone and default call to action; write "
                                      "the post in that voice."),
            Step("list_targets", "List the brand's connected accounts; keep the ones with schedulable true and "
                                 "note each integration_id and platform."),
            Step("get_platform_capabilities", "Read the rules for those platforms (post types, text and media "
                                              "limits, settings), or only the resource "
                                              "socialpub://platforms/<platform>/settings-schema of each; the "
                                              "rules live there, not in this prompt."),
            Step("get_target_dynamic_options", "For a TikTok target, read its live privacy options and let the "
                                               "user choose one; never guess a privacy level."),
            Step("import_media", "If the post needs an image or video, import it from its URL (send an "
                                 "idempotency_key)."),
            Step("get_media", "Read each media item again until readiness.ready_for_content is true."),
            Step("create_content_item", "Create the draft: name, single_copy (or platform_copy), the "
                                        "<platform>_settings each platform needs (as "
                                        "socialpub://platforms/<platform>/settings-schema describes), "
                                        "intended_integration_ids, and a new "
                                        "idempotency_key. A draft schedules nothing; an error's issues name the "
                                        "exact field to fix."),
            Step("preflight_content", "Check the draft for those integration_ids at {scheduled_at} with "
                                      "approval_status pending_review. If can_schedule is false, apply each "
                                      "blocker's repair_action, then check again."),
            Step("create_schedule", "Create the Schedule with the same integration_ids and time, approval_status "
                                    "pending_review (held for review) and a new idempotency_key. Use approved "
                                    "only when the user asked for it and the key holds publish:execute."),
            Step("get_schedule", "Read the Schedule back and report its status, blocking_reason and next_actions "
                                 "to the user."),
        ),
        outro="Report the draft ID, the Schedule ID and what the user must do next (usually: approve it).",
    ),
    PromptDef(
        name="review_held_schedules",
        title="Review held schedules",
        description="Find Schedules held for review in a window, show each to the user, and approve, "
                    "reschedule or cancel only what the user decides.",
        arguments=(
            Arg("brand_id", "The brand whose schedules to review.", required=True),
            Arg("from", "Window start, UTC with milliseconds (e.g. 2026-03-01T00:00:00.000Z).",
                default="(now)"),
            Arg("to", "Window end, at most 93 days after the start.", default="(30 days after the start)"),
        ),
        intro="Review the Schedules of brand {brand_id} held for review between {from} and {to}. Change nothing "
              "the user has not decided.",
        steps=(
            Step("list_schedules", "List the brand's Schedules in the window (page with cursor) and keep those "
                                   "with approval_status pending_review."),
            Step("get_content_item", "For each held Schedule, read its content item and show the user the "
                                     "caption, the platforms and the time."),
            Step("preflight_content", "Check each one again with approval_status approved, so the user decides "
                                      "on current readiness."),
            Step("approve_schedule", "Approve what the user approves: confirm_schedule_id and a new "
                                     "idempotency_key (needs schedule:write and publish:execute)."),
            Step("reschedule_schedule", "To change only the time: a new scheduled_at, confirm_schedule_id and a "
                                        "new idempotency_key."),
            Step("cancel_schedule", "To drop a held post: confirm_schedule_id and a new idempotency_key. "
                                    "Cancelling never removes anything from a platform."),
        ),
        outro="Summarise what was approved, moved and cancelled.",
    ),
    PromptDef(
        name="fix_blocked_preflight",
        title="Fix a blocked preflight",
        description="Read a draft's preflight blockers and apply each repair action until it can be scheduled.",
        arguments=(
            Arg("brand_id", "The brand of the draft.", required=True),
            Arg("content_item_id", "The draft that preflight blocked.", required=True),
            Arg("integration_ids", "Comma-separated target IDs to check.", default="(the draft's intended targets)"),
        ),
        intro="Preflight blocked draft {content_item_id} of brand {brand_id} for targets {integration_ids}. "
              "Repair it step by step; each blocker has a code, a field_path and a repair_action.",
        steps=(
            Step("preflight_content", "Run preflight and list every blocker with its field_path and "
                                      "repair_action.guidance."),
            Step("get_content_item", "Read the draft to see the fields the blockers point at."),
            Step("update_content_item", "Correct caption, title, hashtag and settings problems at the field_path "
                                        "each blocker names (a platform's settings rules: resource "
                                        "socialpub://platforms/<platform>/settings-schema)."),
            Step("get_target_dynamic_options", "For a TikTok privacy blocker, read the live privacy options and "
                                               "ask the user to choose one."),
            Step("update_tiktok_privacy", "Write the chosen privacy level for that exact integration_id."),
            Step("get_media", "For media that is not ready (read_media_again), read it again until it is; failed "
                              "media (repair_media) must be replaced."),
            Step("list_targets", "A disconnected or expired account must be reconnected by the user in the "
                                 "dashboard: check the targets again, or drop that target."),
            Step("preflight_content", "Run preflight again; repeat until can_schedule is true."),
        ),
        outro="When can_schedule is true, the preflight result links to the next call; tell the user the draft is "
              "ready to schedule.",
    ),
)

BY_NAME: dict[str, PromptDef] = {p.name: p for p in PROMPTS}


class _Defaults(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def prompt_model(p: PromptDef) -> types.Prompt:
    return types.Prompt(name=p.name, title=p.title, description=p.description,
                        arguments=[types.PromptArgument(name=a.name, description=a.description, required=a.required)
                                   for a in p.arguments])


def placeholders(p: PromptDef) -> set[str]:
    texts = [p.intro, p.outro, *(s.text for s in p.steps)]
    return {f for t in texts for _, f, _, _ in string.Formatter().parse(t) if f}


def render(p: PromptDef, args: Mapping[str, str], available: Collection[str],
           known: Mapping[str, Endpoint]) -> types.GetPromptResult:
    """The prompt text for a connection: the steps whose tool it has. A step whose tool is in the catalogue but
    not on this connection is named with what would enable it; a tool not in the catalogue is never named."""
    values = _Defaults({a.name: a.default for a in p.arguments})
    values.update({k: str(v)[:500] for k, v in args.items() if v})
    lines = [p.intro.format_map(values), ""]
    n = 0
    for step in p.steps:
        if step.tool in available:
            n += 1
            lines.append(f"{n}. `{step.tool}`: {step.text.format_map(values)}")
    missing = [known[t] for t in p.tools if t not in available and t in known]
    if missing:
        needs = "; ".join(f"{ep.name} (toolset {ep.toolset}" + (f", scope {', '.join(ep.scopes)}" if ep.scopes else "")
                          + ")" for ep in missing)
        lines += ["", f"Not available on this connection: {needs}. Skip those steps, or tell the user what would "
                      "enable them."]
    if p.outro:
        lines += ["", p.outro.format_map(values)]
    text = "\n".join(lines)
    return types.GetPromptResult(description=p.description,
                                 messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))])
