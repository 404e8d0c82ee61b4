"""`socialpub networks status`: for every network, what an operator needs to know before connecting accounts,
all derived from where each fact lives (nothing copied): whether its operator app is configured
(tools/networks/apps.py), the API version in use and its published sunset (providers/versions.py), the scopes
the connect requests (the OAuth network entry, which takes them from the adapter) and the redirect URI to
register (the app's, else `{SOCIALPUB_PUBLIC_URL}/connect/{platform}/callback`, as the connect uses)."""

from __future__ import annotations

from typing import Any

from providers import ADAPTERS, versions
from schemas.platforms import BY_KEY
from tools.networks import apps
from tools.networks.oauth import NETWORKS, redirect_uri
from tools.runtime import Runtime

# How an account of a network without an OAuth flow is connected (`socialpub integrations connect` flags).
CREDENTIAL_CONNECTS = {"telegram": "bot token", "discord": "webhook URL", "bluesky": "app password"}


def _version(platform: str, today: Any) -> dict[str, Any] | None:
    found = versions.for_platform(platform)
    if found is None:
        return None
    return {"name": found.label, "version": found.version, "sunset": found.sunset.isoformat() if found.sunset else None,
            "days_left": found.days_left(today), "expiring": versions.expiring(found, today),
            "overridden": found.overridden, "source": found.source}


async def network_status(rt: Runtime) -> list[dict[str, Any]]:
    today = rt.clock.now().date()
    app_rows = {a["platform"]: a for a in await apps.list_apps(rt)}
    out = []
    for platform in (p for p in ADAPTERS if p != "sandbox"):
        network, app = NETWORKS.get(platform), app_rows.get(platform)
        if network is not None and network.register is None:
            assert app is not None  # list_apps has a row for every network without registration
            connect, app_out = "oauth_operator_app", {k: app[k] for k in ("configured", "source", "client_id")}
            uri: str | None = app["redirect_uri"]
        elif network is not None:  # registered per server at connect time (Mastodon instances)
            connect, app_out, uri = "oauth_per_instance", None, redirect_uri(rt, platform)
        else:
            connect, app_out, uri = f"credentials ({CREDENTIAL_CONNECTS.get(platform, 'flags')})", None, None
        rules = BY_KEY.get(platform)
        out.append({"platform": platform, "display_name": rules.display_name if rules else platform,
                    "connect": connect, "operator_app": app_out, "api_version": _version(platform, today),
                    "scopes": list(network.scopes) if network else [],
                    "scope_param": network.scope_param if network else None, "redirect_uri": uri})
    return out


def status_text(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        app = r["operator_app"]
        app_text = "-" if app is None else f"app configured ({app['source']})" if app["configured"] \
            else "app NOT configured"
        v = r["api_version"]
        version = "(no published sunset)" if v is None else f"{v['version']} (sunset {v['sunset'] or 'unknown'}" + \
            (f", {v['days_left']} days" if v["days_left"] is not None else "") + \
            (", BUMP IT" if v["expiring"] else "") + ")"
        lines.append(f"{r['platform']:<16} {app_text:<28} version {version}")
        lines.append(f"{'':<16} connect: {r['connect']}; scopes: {r['scope_param'] or '-'}")
        if r["redirect_uri"]:
            lines.append(f"{'':<16} redirect URI to register: {r['redirect_uri']}")
    return "\n".join(lines)
