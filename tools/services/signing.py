"""Server-signed tokens (upload capabilities, list cursors): HMAC-SHA256 under a per-purpose key.

The key is `settings.signing_secret` (SOCIALPUB_SIGNING_SECRET) or, when unset, 32 random bytes created once
in `{home}/signing.key` (mode 0600). Each purpose gets its own derived key, so a signature made for one use
never verifies for another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from datetime import datetime
from functools import cache
from pathlib import Path

from schemas.ids import is_id
from schemas.settings import Settings
from schemas.time import iso, parse_timestamp

KEY_FILE = "signing.key"
SEPARATOR = "\x1f"


@cache
def _file_secret(home: Path) -> bytes:
    path = home / KEY_FILE
    home.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        value = path.read_text().strip()
        if len(value) < 32:
            raise RuntimeError(f"{path} is too short to be a signing key; delete it to make a new one") from None
        return value.encode()
    value = secrets.token_hex(32)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    return value.encode()


def master_key(settings: Settings) -> bytes:
    if settings.signing_secret:
        return settings.signing_secret.encode()
    return _file_secret(Path(settings.home).expanduser().resolve())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(settings: Settings, purpose: str, *parts: str) -> str:
    key = hmac.new(master_key(settings), f"socialpub:{purpose}".encode(), hashlib.sha256).digest()
    return _b64(hmac.new(key, SEPARATOR.join(parts).encode(), hashlib.sha256).digest())


def verify(settings: Settings, signature: str, purpose: str, *parts: str) -> bool:
    return hmac.compare_digest(sign(settings, purpose, *parts).encode(), signature.encode("utf-8", "replace"))


# -- keyset list cursors: the last row's (time, id), signed and bound to everything that defines the list -------

def encode_position(settings: Settings, purpose: str, bound: tuple[str, ...], at: datetime, row_id: str) -> str:
    """A cursor naming the last row of a page; it verifies only with the same purpose and `bound` values (brand,
    window, filters, direction)."""
    body = _b64(json.dumps({"t": iso(at), "i": row_id}, separators=(",", ":")).encode())
    return f"{body}.{sign(settings, purpose, *bound, body)}"


def decode_position(settings: Settings, purpose: str, bound: tuple[str, ...], cursor: str,
                    id_prefix: str) -> tuple[datetime, str] | None:
    """(time, id) of a cursor from `encode_position`, or None when it is forged, foreign or malformed."""
    body, _, signature = cursor.partition(".")
    if not body or not signature or not verify(settings, signature, purpose, *bound, body):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        at, row_id = parse_timestamp(data["t"]), data["i"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return (at, row_id) if is_id(row_id, id_prefix) else None
