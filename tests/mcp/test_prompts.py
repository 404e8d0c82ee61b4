"""Every tool a prompt names exists in the catalogue, and a step's text names no tool but its own."""

from __future__ import annotations

import re

import pytest

from server.mcp_server.prompts import PROMPTS, placeholders
from server.mcp_server.resources import RESOURCES
from tools import catalogue

# A tool-like identifier: verb_noun with a verb the catalogue uses.
TOOL_WORD = re.compile(r"\b(?:get|list|create|update|delete|preflight|approve|cancel|reschedule|import|upload|move|"
                       r"refresh|revert|regenerate|publish)_[a-z_]+\b")
CASES = [(p.name, tool) for p in PROMPTS for tool in p.tools]


@pytest.mark.parametrize(("prompt", "tool"), CASES, ids=[f"{p}:{t}" for p, t in CASES])
def test_prompt_tools_exist(prompt: str, tool: str) -> None:
    assert tool in catalogue.by_name()


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: p.name)
def test_step_texts_name_only_their_own_tool(prompt) -> None:
    for step in prompt.steps:
        assert set(TOOL_WORD.findall(step.text)) <= {step.tool}, step
    # intro, outro and argument texts may name only tools that always exist
    always = set(catalogue.by_name())
    for text in (prompt.intro, prompt.outro, *(a.description for a in prompt.arguments)):
        assert set(TOOL_WORD.findall(text)) <= always, text


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: p.name)
def test_placeholders_are_arguments(prompt) -> None:
    assert placeholders(prompt) <= {a.name for a in prompt.arguments}


RESOURCE_WORD = re.compile(r"socialpub://[a-z_/<>{}-]+")


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: p.name)
def test_settings_rules_are_referenced_not_inlined(prompt) -> None:
    """A step about platform settings points to the settings-schema resource, and every resource a prompt names
    is one the server offers (`<platform>` is the template's `{platform}`)."""
    offered = {d.uri for d in RESOURCES}
    for step in prompt.steps:
        if "settings" in step.text:
            assert "socialpub://platforms/<platform>/settings-schema" in step.text, step
        for uri in RESOURCE_WORD.findall(step.text):
            assert uri.replace("<platform>", "{platform}") in offered, uri
