"""List validators shared by request models. Each reports the offending element's index, so the issue's
field_path points at it (e.g. `$.label_ids[2]`)."""

from __future__ import annotations

import re
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


# -- text ----------------------------------------------------------------------------------------------------
# Every string a request carries is checked by `RequestModel` (schemas/requests.py) with `check_text`: lone
# surrogates (not valid Unicode, cannot be stored or encoded) and control characters are refused. Text may keep
# tab, line feed and carriage return; a single-line value (a name) refuses those too (`single_line`).

_TEXT_ALLOWED_CONTROLS = frozenset("\t\n\r")
# The single-line rule as a JSON Schema pattern, so documents state what `single_line` refuses (lone surrogates
# aside, which no pattern can name); request models carry it only in their schema, never as a validator.
SINGLE_LINE_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"


# Any character `bad_character` may refuse (a lone surrogate, any control character): one C scan finds most strings
# clean (every string of every request is checked; the loop below cost ~80 ns a character).
_SUSPECT = re.compile("[\ud800-\udfff\x00-\x1f\x7f-\x9f]").search


def bad_character(value: str, *, single_line: bool = False) -> tuple[int, str] | None:
    """(position, description) of the first character a request string may not hold, or None."""
    if _SUSPECT(value) is None:
        return None
    for i, ch in enumerate(value):
        cp = ord(ch)
        if 0xD800 <= cp <= 0xDFFF:
            return i, "a lone surrogate (not valid Unicode)"
        if (cp < 0x20 or 0x7F <= cp <= 0x9F) and (single_line or ch not in _TEXT_ALLOWED_CONTROLS):
            return i, f"control character U+{cp:04X}"
    return None


def check_text(value: str, *, single_line: bool = False, at: tuple[Any, ...] = ()) -> str:
    found = bad_character(value, single_line=single_line)
    if found is not None:
        pos, what = found
        raise PydanticCustomError(
            "invalid_character", "character {position} is {what}; send valid Unicode text without control "
            "characters" + ("" if single_line else " (tab and newlines are allowed)"),
            {"position": pos, "what": what, "issue_code": "INVALID_CHARACTER", "at": list(at)})
    return value


def single_line(value: str) -> str:
    """For names and other one-line values: no control characters at all (not even tab or newline)."""
    return check_text(value, single_line=True)


def check_strings(value: Any, at: tuple[Any, ...] = ()) -> None:
    """Walk a validated value (strings, lists, dicts, nested models) and check every string in it; `at` is the
    path below the field, reported so the issue points at the offending element."""
    if isinstance(value, str):
        check_text(value, at=at)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            check_strings(item, (*at, i))
    elif isinstance(value, dict):
        for k, item in value.items():
            if isinstance(k, str):
                check_strings(k, (*at, k))
            check_strings(item, (*at, k))
    elif hasattr(value, "__pydantic_fields__") and hasattr(value, "__dict__"):
        for name, item in vars(value).items():
            check_strings(item, (*at, name))
