"""The credentials vault (storage/vault.py) and the operator CLI around it: keys from SOCIALPUB_SECRET_KEYS or a
key file made once, rotation under the newest key, a wrong key refused, legacy plaintext rows read and sealed;
`socialpub integrations connect / disconnect / reconnect` and `socialpub secrets rotate` as subprocesses."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from schemas.settings import Settings
from storage import vault
from tests.networks.support import MASTODON_TOKEN, mastodon_server  # noqa: F401  (fixture)

CLI = str(Path(sys.executable).parent / "socialpub")
CREDS = {"access_token": "tok-planted-secret-1", "refresh_token": "ref-planted-2", "expires_at": "2030-01-01T00:00:00Z"}


def test_seal_open_keeps_only_the_expiry_readable(tmp_path) -> None:
    settings = Settings(home=tmp_path)
    sealed = vault.seal(settings, CREDS)
    assert sealed is not None
    assert set(sealed) == {"sealed", "expires_at"} and "planted" not in json.dumps(sealed)
    assert vault.open_credentials(settings, sealed) == CREDS
    assert vault.seal(settings, None) is None and vault.open_credentials(settings, None) is None
    key_file = tmp_path / "vault.keys"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert vault.keys(Settings(home=tmp_path)) == vault.keys(settings)  # made once, then reused


def test_rotation_first_key_encrypts_all_decrypt_wrong_key_refused(tmp_path) -> None:
    old, new, other = (Fernet.generate_key().decode() for _ in range(3))
    with_old = Settings(home=tmp_path, secret_keys=(old,))
    sealed = vault.seal(with_old, CREDS)
    assert sealed is not None
    both = Settings(home=tmp_path, secret_keys=(new, old))
    assert vault.open_credentials(both, sealed) == CREDS  # the old key still decrypts
    rotated = vault.reseal(both, sealed)
    assert rotated["sealed"] != sealed["sealed"]
    assert vault.open_credentials(Settings(home=tmp_path, secret_keys=(new,)), rotated) == CREDS
    with pytest.raises(vault.VaultError, match="cannot be decrypted"):
        vault.open_credentials(with_old, rotated)
    with pytest.raises(vault.VaultError, match="cannot be decrypted"):
        vault.open_credentials(Settings(home=tmp_path, secret_keys=(other,)), sealed)
    with pytest.raises(vault.VaultError, match="not a Fernet key"):
        vault.keys(Settings(home=tmp_path, secret_keys=("not-a-key",)))


def test_legacy_plaintext_is_read_as_is_and_resealed(tmp_path) -> None:
    settings = Settings(home=tmp_path)
    assert vault.open_credentials(settings, {"access_token": "old"}) == {"access_token": "old"}
    sealed = vault.reseal(settings, {"access_token": "old"})
    assert vault.is_sealed(sealed) and vault.open_credentials(settings, sealed) == {"access_token": "old"}


# --- the CLI ----------------------------------------------------------------------------------------------

def cli(home: Path, *args: str, ok: bool = True, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(home), **extra)
    done = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def rows(home: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(home / "socialpub.db") as db:
        return db.execute("SELECT id, status, credentials FROM integrations ORDER BY id").fetchall()


@pytest.mark.slow
def test_init_seals_legacy_rows_and_rotate_moves_everything_to_the_new_key(tmp_path) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    cli(tmp_path, "init", "--demo", SOCIALPUB_SECRET_KEYS=old)
    with sqlite3.connect(tmp_path / "socialpub.db") as db:  # a row as versions before the vault wrote it
        first = db.execute("SELECT id FROM integrations ORDER BY id LIMIT 1").fetchone()[0]
        db.execute("UPDATE integrations SET credentials = ? WHERE id = ?",
                   (json.dumps({"access_token": "legacy-plain"}), first))
    done = cli(tmp_path, "secrets", "rotate", "--json", SOCIALPUB_SECRET_KEYS=f"{new},{old}")
    counts = json.loads(done.stdout)
    assert counts["legacy_sealed"] == 1 and counts["credentials"] == len(rows(tmp_path)) - 1
    only_new = Settings(home=tmp_path, secret_keys=(new,))
    for _id, _status, stored in rows(tmp_path):
        assert vault.open_credentials(only_new, json.loads(stored))  # every row opens with the new key alone
    assert "legacy-plain" not in (tmp_path / "socialpub.db").read_bytes().decode("latin-1")
    refused = cli(tmp_path, "secrets", "rotate", ok=False, SOCIALPUB_SECRET_KEYS=Fernet.generate_key().decode())
    assert refused.returncode == 2 and "cannot be decrypted" in refused.stderr


@pytest.mark.slow
def test_cli_connect_disconnect_reconnect_mastodon(tmp_path, mastodon_server) -> None:  # noqa: F811
    local = "127.0.0.1"  # SOCIALPUB_FETCH_ALLOW_HOSTS: the CLI may fetch from the local mastodon-mock
    init = json.loads(cli(tmp_path, "init", "--demo", "--json").stdout)
    brand = init["brands"][0]["id"]
    before = len(rows(tmp_path))
    wrong = cli(tmp_path, "integrations", "connect", "--brand", brand, "--platform", "mastodon", "--instance",
                mastodon_server.base_url, "--access-token", "-", "--json", ok=False, SOCIALPUB_FETCH_ALLOW_HOSTS=local)
    # Under --json the refusal is the JSON error on stdout (docs/decisions.md, "Errors under --json").
    assert wrong.returncode == 2 and "nothing was saved" in json.loads(wrong.stdout)["error"]["message"].lower()
    assert len(rows(tmp_path)) == before

    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(SOCIALPUB_HOME=str(tmp_path), SOCIALPUB_FETCH_ALLOW_HOSTS=local)
    done = subprocess.run([CLI, "integrations", "connect", "--brand", brand, "--platform", "mastodon", "--instance",
                           mastodon_server.base_url, "--access-token", "-", "--json"], input=MASTODON_TOKEN + "\n",
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["platform"], out["provider"], out["username"], out["status"]) == ("mastodon", "mastodon", "alice",
                                                                                 "connected")
    assert MASTODON_TOKEN not in done.stdout + done.stderr
    stored = dict((r[0], r[2]) for r in rows(tmp_path))[out["id"]]
    assert MASTODON_TOKEN not in stored and vault.is_sealed(json.loads(stored))

    oauth = json.loads(cli(tmp_path, "integrations", "connect", "--brand", brand, "--platform", "mastodon",
                           "--instance", mastodon_server.base_url, "--json", SOCIALPUB_FETCH_ALLOW_HOSTS=local).stdout)
    assert oauth["authorize_url"].startswith(f"{mastodon_server.base_url}/oauth/authorize?response_type=code")
    assert oauth["redirect_uri"] == "http://127.0.0.1:8000/connect/mastodon/callback"

    gone = json.loads(cli(tmp_path, "integrations", "disconnect", out["id"], "--json").stdout)
    assert gone["status"] == "needs_reauth"
    assert dict((r[0], r[2]) for r in rows(tmp_path))[out["id"]] is None
    back = json.loads(cli(tmp_path, "integrations", "reconnect", out["id"], "--access-token", MASTODON_TOKEN,
                          "--json", SOCIALPUB_FETCH_ALLOW_HOSTS=local).stdout)
    assert back["status"] == "connected" and back["id"] == out["id"]

    sandbox = json.loads(cli(tmp_path, "integrations", "connect", "--brand", brand, "--platform", "x",
                             "--sandbox", "--json").stdout)  # a sandbox account only on request
    assert sandbox["platform"] == "x" and sandbox["status"] == "connected"
    stray = cli(tmp_path, "integrations", "connect", "--brand", brand, "--platform", "telegram", "--instance", "x",
                ok=False)
    assert stray.returncode == 2 and "--instance does not apply" in stray.stderr


@pytest.mark.anyio
async def test_rotate_in_process_on_each_backend(env) -> None:
    """secrets.rotate over stored rows (SQLite and PostgreSQL): legacy plaintext sealed, sealed rows and OAuth
    app secrets moved to the newest key; afterwards the old key is not needed."""
    from storage.tables.integrations import Integration
    from storage.tables.networks import OAuthApp
    from tools.networks import secrets

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    env.rt.settings.secret_keys = (old,)
    ws = await env.workspace()
    brand = await env.brand(ws)
    legacy = await env.integration(brand, "x")  # written without settings: plaintext, as before the vault
    sealed = await env.integration(brand, "threads", settings=env.rt.settings)
    assert not vault.is_sealed(legacy.credentials) and vault.is_sealed(sealed.credentials)
    async with env.db.session(write=True) as s:
        s.add(OAuthApp(id="oap_1", platform="mastodon", server="https://m.example", client_id="c",
                       client_secret=vault.seal_text(env.rt.settings, "app-secret"), redirect_uri="http://x/cb",
                       created_at=env.clock.now(), updated_at=env.clock.now()))
    env.rt.settings.secret_keys = (new, old)
    counts = await secrets.rotate(env.rt)
    assert counts == {"credentials": 1, "legacy_sealed": 1, "oauth_apps": 1, "oauth_states": 0}
    env.rt.settings.secret_keys = (new,)
    async with env.db.session(write=False) as s:
        for i in (legacy, sealed):
            row = await s.get(Integration, i.id)
            creds = vault.open_credentials(env.rt.settings, row.credentials)
            assert creds is not None and creds["access_token"].startswith("sbx_token_")
        app = await s.get(OAuthApp, "oap_1")
    assert vault.open_text(env.rt.settings, app.client_secret) == "app-secret"
