"""Operator-configured OAuth apps: the client credentials this service uses on networks that have no dynamic
client registration (X, Instagram, TikTok, ...). Set with `socialpub apps set` (the secret sealed in the vault)
or with `SOCIALPUB_<PLATFORM>_CLIENT_ID` / `SOCIALPUB_<PLATFORM>_CLIENT_SECRET` (and optionally
`SOCIALPUB_<PLATFORM>_REDIRECT_URI`); the environment wins over a stored app, so a deployment can pin it.

An operator app is an `oauth_apps` row with `server = ""` (one per network). The redirect URI defaults to
`{SOCIALPUB_PUBLIC_URL}/connect/{platform}/callback`, which the operator registers on the network's side.
"""

from __future__ import annotations

import os
from typing import Any

from sqlmodel import select

from schemas.ids import new_id
from storage import vault
from storage.tables.networks import OAuthApp
from tools.networks.networks import NETWORKS
from tools.runtime import Runtime

# Where an operator creates a network's app (and registers the redirect URI), shown by the console's apps page.
DEVELOPER_CONSOLES = {
    "x": "https://developer.x.com/en/portal/dashboard",
    "instagram": "https://developers.facebook.com/apps/",
    "facebook": "https://developers.facebook.com/apps/",
    "threads": "https://developers.facebook.com/apps/",
    "tiktok": "https://developers.tiktok.com/apps/",
    "linkedin": "https://www.linkedin.com/developers/apps",
    "youtube": "https://console.cloud.google.com/apis/credentials",
    "google_business": "https://console.cloud.google.com/apis/credentials",
    "pinterest": "https://developers.pinterest.com/apps/",
    "tumblr": "https://www.tumblr.com/oauth/apps",
}
OPERATOR_SERVER = ""  # the `server` of an operator-configured app (fixed networks have one each)


class AppError(Exception):
    """A refused app configuration; the message is safe to print."""


def default_redirect_uri(rt: Runtime, platform: str) -> str:
    return f"{rt.settings.public_url.rstrip('/')}/connect/{platform}/callback"


def env_app(platform: str) -> tuple[str, str, str | None] | None:
    """(client_id, client_secret, redirect_uri or None) from the environment, or None when unset."""
    prefix = f"SOCIALPUB_{platform.upper()}_"
    client_id, secret = os.environ.get(prefix + "CLIENT_ID", ""), os.environ.get(prefix + "CLIENT_SECRET", "")
    if not client_id:
        return None
    return client_id.strip(), secret.strip(), (os.environ.get(prefix + "REDIRECT_URI") or "").strip() or None


def _operator_platforms() -> list[str]:
    return sorted(p for p, n in NETWORKS.items() if n.register is None)


def _check(platform: str, client_id: str, redirect_uri: str | None) -> None:
    if platform not in _operator_platforms():
        raise AppError(f"{platform} takes no operator app (networks that do: {', '.join(_operator_platforms())})")
    if not client_id or len(client_id) > 500 or not client_id.isprintable():
        raise AppError("--client-id must be 1-500 printable characters")
    if redirect_uri is not None and (len(redirect_uri) > 2000 or not redirect_uri.startswith(("https://",
                                                                                              "http://"))):
        raise AppError("--redirect-uri must be an http(s) URL of at most 2000 characters")


async def set_app(rt: Runtime, platform: str, client_id: str, client_secret: str,
                  redirect_uri: str | None = None) -> OAuthApp:
    """Store (or replace) the operator app of `platform`; the secret is sealed."""
    _check(platform, client_id, redirect_uri)
    if len(client_secret) > 1000:
        raise AppError("--client-secret is longer than 1000 characters")
    now = rt.clock.now()
    async with rt.db.session(write=True) as s:
        app = (await s.exec(select(OAuthApp).where(OAuthApp.platform == platform,
                                                   OAuthApp.server == OPERATOR_SERVER))).first()
        if app is None:
            app = OAuthApp(id=new_id("oap"), platform=platform, server=OPERATOR_SERVER, client_id="",
                           redirect_uri="", created_at=now, updated_at=now)
        app.client_id = client_id
        app.client_secret = vault.seal_text(rt.settings, client_secret) if client_secret else None
        app.redirect_uri = redirect_uri or default_redirect_uri(rt, platform)
        app.scopes, app.updated_at = " ".join(NETWORKS[platform].scopes), now
        s.add(app)
    return app


async def operator_app(rt: Runtime, platform: str) -> OAuthApp | None:
    """The app to connect `platform` accounts with: the environment's (kept in step with a row, since pending
    connects point at their app), else the stored one, else None."""
    from_env = env_app(platform)
    async with rt.db.session(write=False) as s:
        stored = (await s.exec(select(OAuthApp).where(OAuthApp.platform == platform,
                                                      OAuthApp.server == OPERATOR_SERVER))).first()
    if from_env is None:
        return stored
    client_id, secret, uri = from_env
    same = stored is not None and stored.client_id == client_id and \
        stored.redirect_uri == (uri or default_redirect_uri(rt, platform)) and \
        (vault.open_text(rt.settings, stored.client_secret) if stored.client_secret else "") == secret
    return stored if same else await set_app(rt, platform, client_id, secret, uri)


async def list_apps(rt: Runtime) -> list[dict[str, Any]]:
    """Every network that needs an operator app, whether one is configured and from where (never the secret)."""
    async with rt.db.session(write=False) as s:
        rows = {a.platform: a for a in (await s.exec(select(OAuthApp).where(
            OAuthApp.server == OPERATOR_SERVER))).all()}
    out = []
    for platform in _operator_platforms():
        from_env, row = env_app(platform), rows.get(platform)
        source = "env" if from_env else "stored" if row else None
        client_id = from_env[0] if from_env else row.client_id if row else None
        uri = (from_env[2] if from_env else row.redirect_uri if row else None) or default_redirect_uri(rt, platform)
        out.append({"platform": platform, "configured": source is not None, "source": source,
                    "client_id": client_id, "has_client_secret": bool(from_env[1]) if from_env else
                    bool(row and row.client_secret), "redirect_uri": uri})
    return out


async def stored_secret(rt: Runtime, platform: str) -> str | None:
    """The stored app's secret, opened (to keep it when only the client ID changes); None without one."""
    async with rt.db.session(write=False) as s:
        app = (await s.exec(select(OAuthApp).where(OAuthApp.platform == platform,
                                                   OAuthApp.server == OPERATOR_SERVER))).first()
    return vault.open_text(rt.settings, app.client_secret) if app is not None and app.client_secret else None
