"""Prefixed, time-sortable identifiers (`brd_01J...`): a ULID body after a short type prefix."""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Annotated

from pydantic import StringConstraints

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32: sorts like the number it encodes
_lock = threading.Lock()
_last = [0, 0]  # (millisecond, random part) of the last ID, for monotonic IDs within one millisecond

ID_PATTERN = r"^[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}$"
_ID_RE = re.compile(ID_PATTERN)

# An identifier field as it must arrive: exact, unpadded, our format. Padded or case-folded IDs fail here.
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=32)]


# Two base32 digits per lookup (every REST call makes a request ID): 1,024 pairs, built once.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_SHIFTS = {length: tuple(range(5 * (length - 2), -1, -10)) for length in (10, 16)}


def _encode(value: int, length: int) -> str:
    """`value` as `length` Crockford base32 digits, most significant first (higher bits are dropped)."""
    shifts = _SHIFTS.get(length)
    if shifts is None:
        chars = []
        for _ in range(length):
            value, rem = divmod(value, 32)
            chars.append(_ALPHABET[rem])
        return "".join(reversed(chars))
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in shifts])


def id_floor(prefix: str, ms: int) -> str:
    """A string below every ID of `prefix` made at millisecond `ms` or later, and above those made before it (a
    range bound for "IDs since")."""
    return f"{prefix}_{_encode(ms, 10)}"


def new_id(prefix: str, ms: int | None = None) -> str:
    """A new ID; later calls sort after earlier ones even within one millisecond."""
    ms = int(time.time() * 1000) if ms is None else ms
    with _lock:
        if ms <= _last[0]:
            ms = _last[0]
            rand = _last[1] + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 1  # headroom for increments
        _last[0], _last[1] = ms, rand
    return f"{prefix}_{_encode(ms, 10)}{_encode(rand, 16)}"


def is_id(value: object, prefix: str | None = None) -> bool:
    return isinstance(value, str) and bool(_ID_RE.match(value)) and (prefix is None or value.startswith(prefix + "_"))
