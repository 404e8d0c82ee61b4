"""Autopilot topic generation behind one small interface.

A `TopicGenerator` proposes a week theme and a post topic from a `TopicContext` (brand name, category and
voice, a bounded sample of the brand's ideas, the agent's guidance, and the topics already in the week).
`BuiltinTopicGenerator` is deterministic (the same context gives the same topic) and never calls a network;
another implementation (e.g. an LLM) is plugged in as `Runtime.topic_generator`. The caller checks the
result (non-empty, bounded, not already in the week) and treats an exception or a timeout as an uncertain
result (tools/autopilot/routes.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from sqlmodel import col, select

if TYPE_CHECKING:
    from sqlmodel.ext.asyncio.session import AsyncSession

    from storage.tables.brands import Brand

IDEAS_SAMPLE = 20  # ideas of the brand a generator sees (newest updated first, unused ones)
GUIDANCE_SUBJECT_MAX = 120


@dataclass(frozen=True)
class IdeaHint:
    name: str
    type: str | None = None


@dataclass(frozen=True)
class TopicContext:
    brand_name: str
    category: str | None
    voice: str | None  # the brand's voice instructions (or profile), clipped
    ideas: tuple[IdeaHint, ...]
    week_number: int
    theme: str | None  # None while the theme itself is being proposed
    taken: tuple[str, ...] = ()  # topics already in the week: never repeat one (case-insensitive)
    guidance: str | None = None
    seed: str = ""  # varies the choice deterministically (item ID and revision, or plan and position)
    # Names of the brand's best posts of the last 30 days by their lead metric, best first (empty without metrics):
    # what worked, for a generator to write more of (tools/analytics/summary.best_post_names).
    performing: tuple[str, ...] = ()


@runtime_checkable
class TopicGenerator(Protocol):
    async def theme(self, ctx: TopicContext) -> str: ...

    async def topic(self, ctx: TopicContext) -> str: ...


def norm(topic: str) -> str:
    return " ".join(topic.split()).casefold()


async def context_for(session: AsyncSession, brand: Brand, *, week_number: int, theme: str | None,
                      taken: list[str] | tuple[str, ...] = (), guidance: str | None = None,
                      seed: str = "", now: datetime | None = None) -> TopicContext:
    """Build the context from the brand row, a bounded sample of its ideas and (given `now`) the names of its
    best-performing recent posts."""
    # Imported here: every `Runtime` holds the built-in generator, and most processes never build a context.
    from storage.tables.library import Idea
    from tools.analytics.summary import best_post_names

    rows = (await session.exec(select(Idea).where(Idea.brand_id == brand.id, Idea.status != "used")
                               .order_by(col(Idea.updated_at).desc(), col(Idea.id).desc()).limit(IDEAS_SAMPLE))).all()
    ideas = tuple(IdeaHint(_clip(r.name, 120), r.type) for r in rows if r.name and r.name.strip())
    voice = brand.voice_instructions or brand.voice_profile
    performing = await best_post_names(session, brand.id, now) if now is not None else ()
    return TopicContext(brand_name=brand.name, category=brand.category, voice=_clip(voice, 500) if voice else None,
                        ideas=ideas, week_number=week_number, theme=theme, taken=tuple(taken), guidance=guidance,
                        seed=seed, performing=tuple(_clip(p, 120) for p in performing))


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return (cut or text[:limit]).rstrip(" ,.;:")


_CASUAL = re.compile(r"\b(playful|fun|funny|witty|casual|friendly|warm|cheeky|light)\b", re.I)
_EXPERT = re.compile(r"\b(formal|professional|expert|authoritative|technical|precise|serious)\b", re.I)

_TEMPLATES = {
    "casual": ("Behind the scenes: {s}", "Things we love about {s}", "A quick, fun tip on {s}",
               "Your questions about {s}, answered", "{s}: what surprised us this week", "Our favourite {s} moment"),
    "expert": ("A practical guide to {s}", "Three common mistakes with {s}", "{s}: myths and facts",
               "How we approach {s}", "What the numbers say about {s}", "A checklist for {s}"),
    "neutral": ("Behind the scenes: {s}", "A practical tip on {s}", "{s}: myths and facts",
                "Your questions about {s}, answered", "How we approach {s}", "What's new in {s}"),
}
_THEMES = ("Getting started with {s}", "Behind the scenes of {s}", "Tips and tricks: {s}", "Community and {s}",
           "Myths and facts about {s}", "Seasonal focus: {s}", "Stories from {s}", "Questions about {s}")


def _limits() -> tuple[int, int]:
    """THEME_MAX, TOPIC_MAX: the columns' lengths, imported on first use (see `context_for`)."""
    from storage.tables.autopilot import THEME_MAX, TOPIC_MAX

    return THEME_MAX, TOPIC_MAX


def _rank(seed: str, options: list[str]) -> list[str]:
    return sorted(options, key=lambda o: hashlib.sha256(f"{seed}\x00{o}".encode()).hexdigest())


class BuiltinTopicGenerator:
    """Deterministic, local: templates chosen by the brand's voice, filled with subjects from the guidance
    (first), the brand's best-performing recent post (next), the brand's ideas, its category and its name;
    ranked by a hash of the seed."""

    def _voice(self, ctx: TopicContext) -> str:
        voice = ctx.voice or ""
        if _EXPERT.search(voice):
            return "expert"
        if _CASUAL.search(voice):
            return "casual"
        return "neutral"

    def _subjects(self, ctx: TopicContext) -> list[str]:
        subjects = [i.name for i in ctx.ideas]
        if ctx.category:
            subjects.append(ctx.category)
        if ctx.theme:
            subjects.append(ctx.theme)
        subjects.append(ctx.brand_name)
        return [s for s in dict.fromkeys(_clip(s, 150) for s in subjects) if s]

    async def theme(self, ctx: TopicContext) -> str:
        subject = ctx.category or ctx.brand_name
        options = [t.format(s=subject) for t in _THEMES]
        choice = options[(ctx.week_number - 1) % len(options)]
        return _clip(choice, _limits()[0])

    async def topic(self, ctx: TopicContext) -> str:
        taken = {norm(t) for t in ctx.taken}
        templates = _TEMPLATES[self._voice(ctx)]
        seed = f"{ctx.seed}|{ctx.week_number}"
        candidates: list[str] = []
        if ctx.guidance and ctx.guidance.strip():
            subject = _clip(ctx.guidance, GUIDANCE_SUBJECT_MAX)
            candidates += _rank(seed, [t.format(s=subject) for t in templates])
        if ctx.performing:  # more of what worked: the best recent post's subject comes before the rest
            candidates += _rank(seed, [t.format(s=ctx.performing[0]) for t in templates])
        candidates += _rank(seed, [t.format(s=s) for s in self._subjects(ctx) for t in templates])
        topic_max = _limits()[1]
        for c in candidates:
            c = _clip(c, topic_max)
            if norm(c) not in taken:
                return c
        base = _clip(candidates[0], topic_max - 8)
        n = 2
        while norm(f"{base} ({n})") in taken:
            n += 1
        return f"{base} ({n})"


BUILTIN = BuiltinTopicGenerator()

