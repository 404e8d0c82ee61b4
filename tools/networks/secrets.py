"""`socialpub secrets rotate`: every stored secret (account credentials, OAuth app client secrets, pending
PKCE verifiers) re-encrypted under the newest vault key, and legacy plaintext credentials sealed. Run it after
putting a new key first (SOCIALPUB_SECRET_KEYS, or `--new-key` for the key file); then the old keys can go.
"""

from __future__ import annotations

from sqlmodel import col, select

from storage import vault
from storage.tables.integrations import Integration
from storage.tables.networks import OAuthApp, OAuthState
from tools.runtime import Runtime

PAGE = 200


async def rotate(rt: Runtime, *, legacy_only: bool = False) -> dict[str, int]:
    """Re-encrypt every stored secret under the newest key (`legacy_only`: only seal plaintext rows, which
    `socialpub init` does after migrating). Page by page, one transaction each. Returns counts per kind."""
    counts = {"credentials": 0, "legacy_sealed": 0, "oauth_apps": 0, "oauth_states": 0}
    after = ""
    while True:
        async with rt.db.session(write=True) as s:
            rows = (await s.exec(select(Integration).where(Integration.id > after, col(Integration.credentials).is_not(None))
                                 .order_by(Integration.id).limit(PAGE))).all()
            for i in rows:
                legacy = not vault.is_sealed(i.credentials)
                if legacy_only and not legacy:
                    continue
                i.credentials = vault.reseal(rt.settings, i.credentials)
                s.add(i)
                counts["legacy_sealed" if legacy else "credentials"] += 1
        if len(rows) < PAGE:
            break
        after = rows[-1].id
    if legacy_only:
        return counts
    async with rt.db.session(write=True) as s:
        for app in (await s.exec(select(OAuthApp).where(col(OAuthApp.client_secret).is_not(None)))).all():
            assert app.client_secret is not None  # selected so
            app.client_secret = vault.seal_text(rt.settings, vault.open_text(rt.settings, app.client_secret))
            s.add(app)
            counts["oauth_apps"] += 1
        for state in (await s.exec(select(OAuthState).where(col(OAuthState.used_at).is_(None)))).all():
            state.code_verifier = vault.seal_text(rt.settings, vault.open_text(rt.settings, state.code_verifier))
            s.add(state)
            counts["oauth_states"] += 1
    return counts
