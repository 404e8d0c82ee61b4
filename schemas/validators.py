"""List validators shared by request models. Each reports the offending element's index, so the issue's
field_path points at it (e.g. `$.label_ids[2]`)."""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticCustomError


def unique_items(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    for i, v in enumerate(values):
        if v in seen:
            raise PydanticCustomError("duplicate_item", "item {index} repeats an earlier item; send each once",
                                      {"index": i, "issue_code": "DUPLICATE"})
        seen.add(v)
    return values


def canonical_ids(values: list[str]) -> list[str]:
    """Unique and ascending: the one canonical order, so two requests for the same set are the same bytes."""
    unique_items(values)
    for i in range(1, len(values)):
        if values[i] < values[i - 1]:
            raise PydanticCustomError(
                "not_ascending", "IDs must be sorted ascending; item {index} sorts before the item ahead of it",
                {"index": i, "issue_code": "NOT_ASCENDING"})
    return values
