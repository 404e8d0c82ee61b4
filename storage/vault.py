"""The credentials vault: provider credentials (tokens, app passwords, bot tokens, webhook URLs) and OAuth app
secrets are stored encrypted with Fernet (AES-128-CBC + HMAC-SHA256, `cryptography`).

Keys: `SOCIALPUB_SECRET_KEYS` (comma-separated Fernet keys, newest first: the first encrypts, every one
decrypts, so a key can be added in front and the old ones dropped after `socialpub secrets rotate`), or, when
unset, the keys in `{home}/vault.keys` (one per line, newest first; created once with one random key, mode 0600).

A stored value is an envelope `{"sealed": "<fernet token>"}` in the same JSON column as before; the credential's
expiry, which is not a secret, stays readable beside it (`expires_at`) so the token tick and preflight can see
when a refresh is due without decrypting. Rows written by versions before the vault hold plaintext JSON: they
are read as they are (legacy) and sealed the next time they are written, by `socialpub init` or by
`socialpub secrets rotate`. Decrypt only where a provider call is made (`open_credentials`).
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from schemas.settings import Settings

KEY_FILE = "vault.keys"
SEALED = "sealed"
CLEAR_FIELDS = ("expires_at",)  # facts about a credential that are not secret and stay readable


class VaultError(Exception):
    """A stored secret could not be decrypted with any configured key (a key was removed too early)."""


def _valid(key: str) -> str:
    try:
        Fernet(key.encode())
    except (ValueError, TypeError):
        raise VaultError("a vault key is not a Fernet key (32 url-safe base64 bytes); make one with "
                         "`socialpub secrets new-key`") from None
    return key


def _read_keys(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def key_file(settings: Settings) -> Path:
    return Path(settings.home).expanduser().resolve() / KEY_FILE


def _file_keys(path: Path) -> tuple[str, ...]:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        keys = _read_keys(path)
        if not keys:
            raise VaultError(f"{path} holds no key; restore it from a backup (stored credentials need it)") from None
        return tuple(keys)
    key = Fernet.generate_key().decode()
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return (key,)


def keys(settings: Settings) -> tuple[str, ...]:
    """The vault keys, newest first."""
    found = settings.secret_keys or _file_keys(key_file(settings))
    return tuple(_valid(k) for k in found)


@cache
def _fernet(found: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(k.encode()) for k in found])


def fernet(settings: Settings) -> MultiFernet:
    return _fernet(keys(settings))


def add_file_key(settings: Settings) -> str:
    """Put a new random key in front of `{home}/vault.keys` (the old ones keep decrypting). Only when the keys
    come from the file; with SOCIALPUB_SECRET_KEYS the operator edits that value instead."""
    if settings.secret_keys:
        raise VaultError("the vault keys come from SOCIALPUB_SECRET_KEYS: put a new key first in it "
                         "(`socialpub secrets new-key` prints one), then run `socialpub secrets rotate`")
    path = key_file(settings)
    old = _file_keys(path)
    key = Fernet.generate_key().decode()
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("\n".join((key, *old)) + "\n")
    os.replace(tmp, path)
    return key


def drop_old_file_keys(settings: Settings) -> int:
    """Keep only the newest key in `{home}/vault.keys` (after a rotation). Returns how many were dropped."""
    if settings.secret_keys:
        return 0
    path = key_file(settings)
    found = _file_keys(path)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(found[0] + "\n")
    os.replace(tmp, path)
    return len(found) - 1


def is_sealed(stored: Any) -> bool:
    return isinstance(stored, dict) and isinstance(stored.get(SEALED), str)


def seal_text(settings: Settings, value: str) -> str:
    return fernet(settings).encrypt(value.encode()).decode()


def open_text(settings: Settings, token: str) -> str:
    try:
        return fernet(settings).decrypt(token.encode()).decode()
    except InvalidToken:
        raise VaultError("a stored secret cannot be decrypted with the configured vault keys") from None


def seal(settings: Settings, credentials: dict[str, Any] | None) -> dict[str, Any] | None:
    """The envelope to store for `credentials` (None stays None)."""
    if credentials is None:
        return None
    if is_sealed(credentials):
        return credentials
    envelope: dict[str, Any] = {SEALED: seal_text(settings, json.dumps(credentials, separators=(",", ":")))}
    for name in CLEAR_FIELDS:
        if credentials.get(name) is not None:
            envelope[name] = credentials[name]
    return envelope


def open_credentials(settings: Settings, stored: Any) -> dict[str, Any] | None:
    """The plain credentials of a stored value: decrypted when sealed, as they are when legacy plaintext."""
    if stored is None:
        return None
    if not is_sealed(stored):
        return copy.deepcopy(stored) if isinstance(stored, dict) else None  # legacy plaintext row
    value = json.loads(open_text(settings, stored[SEALED]))
    return value if isinstance(value, dict) else None


def reseal(settings: Settings, stored: Any) -> Any:
    """`stored` encrypted under the newest key (legacy plaintext gets sealed); None stays None."""
    if stored is None:
        return None
    if not is_sealed(stored):
        return seal(settings, stored) if isinstance(stored, dict) else stored
    try:
        token = fernet(settings).rotate(stored[SEALED].encode()).decode()
    except InvalidToken:
        raise VaultError("a stored secret cannot be decrypted with the configured vault keys") from None
    return {**stored, SEALED: token}
