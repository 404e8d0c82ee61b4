"""Strict JSON for request bodies: bounded nesting, duplicate keys refused, never a RecursionError.

The standard library's parser is used (it is the one the rest of the service uses); `object_pairs_hook` sees
every object's keys in order, so a repeated key is refused rather than silently taking the last value, and the
nesting depth is checked on the parsed value with an explicit stack (the parser itself recurses; a document
deep enough to exhaust Python's recursion limit is caught and refused the same way).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

MAX_DEPTH = 64  # arrays and objects nested inside each other; far above any request model's shape


class BadJson(ValueError):
    """The body is not acceptable JSON; the message is safe to show a client."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BadJson(f"The JSON object repeats the key {key[:64]!r}; send each key once.")
        out[key] = value
    return out


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    try:
        value = json.loads(raw, object_pairs_hook=_no_duplicates)
    except BadJson:
        raise
    except RecursionError:
        raise BadJson(f"The JSON is nested too deeply (at most {max_depth} levels).") from None
    except (ValueError, UnicodeDecodeError):
        raise BadJson("The request body is not valid JSON.") from None
    if depth_of(value, max_depth) > max_depth:
        raise BadJson(f"The JSON is nested too deeply (at most {max_depth} levels).")
    return value


def replay(body: bytes, receive: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A `receive` that hands the buffered body over again, then waits on the real one (disconnects)."""
    sent = False

    async def again() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
