"""Server-signed tokens (upload capabilities, cleanup authority, list cursors via storage/keyset.py): HMAC-SHA256 under a per-purpose key.

The key is `settings.signing_secret` (SOCIALPUB_SIGNING_SECRET) or, when unset, 32 random bytes created once
in `{home}/signing.key` (mode 0600). Each purpose gets its own derived key, so a signature made for one use
never verifies for another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from schemas.settings import Settings

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


@dataclass(frozen=True)
class PurposeSigner:
    """`sign` / `verify` bound to one purpose: what storage/keyset.py signs list cursors with."""

    settings: Settings
    purpose: str

    def sign(self, *parts: str) -> str:
        return sign(self.settings, self.purpose, *parts)

    def verify(self, signature: str, *parts: str) -> bool:
        return verify(self.settings, signature, self.purpose, *parts)


def signer(settings: Settings, purpose: str) -> PurposeSigner:
    return PurposeSigner(settings, purpose)
