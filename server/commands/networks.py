"""Real network accounts: `integrations connect` with credentials (or an OAuth authorize URL), `integrations
disconnect` / `reconnect`, and `secrets rotate` / `secrets new-key` for the credentials vault.

`integrations connect --sandbox` connects a sandbox account (server/commands/core.py); without credentials, `--oauth`
or `--sandbox` it says what is missing and creates nothing (docs/decisions.md, "Sandbox accounts only on request").
Secrets given as `-` are read from standard input (one line each, in flag order), so they stay out of the
process list and shell history. No output ever contains a secret.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cryptography.fernet import Fernet

from server.cli import add_json_flag, emit, run_with_runtime, subcommands
from server.commands.core import cmd_integrations_connect as connect_sandbox
from server.commands.core import integration_out
from storage import vault
from storage.migrate import check_current
from tools.networks import apps, oauth, secrets
from tools.networks import connect as networks
from tools.operator import actions as operator
from tools.runtime import Runtime

# Flags that carry a network credential or address, per platform: (flag dest, required, secret).
FLAGS: dict[str, tuple[tuple[str, bool, bool], ...]] = {
    "mastodon": (("instance", True, False), ("access_token", False, True)),
    "telegram": (("bot_token", True, True), ("chat_id", True, False)),
    "discord": (("webhook_url", True, True),),
    "bluesky": (("service", False, False), ("handle", True, False), ("app_password", True, True)),
}
ALL_FLAGS = sorted({name for flags in FLAGS.values() for name, _, _ in flags})


def _options(args: argparse.Namespace, platform: str) -> dict[str, Any]:
    given = {name for name in ALL_FLAGS if getattr(args, name, None) is not None}
    allowed = {name for name, _, _ in FLAGS.get(platform, ())}
    stray = given - allowed
    if stray:
        raise operator.OperatorError(f"{', '.join('--' + s.replace('_', '-') for s in sorted(stray))} "
                                     f"does not apply to --platform {platform}")
    out: dict[str, Any] = {}
    for name, required, secret in FLAGS.get(platform, ()):
        value = getattr(args, name, None)
        if value == "-" and secret:
            value = sys.stdin.readline().strip()
            if not value:
                raise operator.OperatorError(f"--{name.replace('_', '-')} - read nothing from standard input; "
                                             "nothing was saved")
        if value is None and required:
            raise operator.OperatorError(f"--platform {platform} needs --{name.replace('_', '-')}")
        if value is not None:
            out[name] = value
    return out


def _out(i: Any) -> dict[str, Any]:
    return {**integration_out(i), "provider": i.provider}


def _operator_oauth(platform: str) -> bool:
    network = oauth.NETWORKS.get(platform)
    return network is not None and network.register is None


async def _start_oauth(args: argparse.Namespace, rt: Runtime, brand_id: str, platform: str,
                       integration_id: str | None = None) -> None:
    try:
        flow = await oauth.start(rt, brand_id, platform, integration_id=integration_id,
                                 display_name=getattr(args, "display_name", None))
    except networks.ConnectError as exc:
        raise operator.OperatorError(str(exc)) from None
    network = oauth.NETWORKS[platform]
    emit(args, {"platform": platform, "brand_id": brand_id, "integration_id": integration_id,
                "scopes": list(network.scopes), **flow},
         f"Open this URL to authorise socialpub on {network.display_name} (valid until {flow['expires_at']}, "
         f"once):\n{flow['authorize_url']}\nScopes: {' '.join(network.scopes)}\n`socialpub serve` must be "
         f"reachable at {flow['redirect_uri']} to complete it.")


# Placeholders for the flags a refusal names, per credential flag.
_HINTS = {"instance": "URL", "access_token": "-", "bot_token": "-", "chat_id": "@channel", "webhook_url": "-",
          "service": "URL", "handle": "HANDLE", "app_password": "-"}


async def _missing(rt: Runtime, platform: str) -> str:
    """One line saying what a connect without credentials needs, for this platform and this service's apps."""
    if platform not in operator.PLATFORMS_BY_KEY:
        return f"platform must be one of {', '.join(operator.PLATFORMS_BY_KEY)}"
    tail = "; `--sandbox` connects a local test account instead. Nothing was created."
    if _operator_oauth(platform):
        name = oauth.NETWORKS[platform].display_name
        await check_current(rt.db)
        if await apps.operator_app(rt, platform) is not None:
            return f"no credentials given: add `--oauth` to connect a real {name} account (its app is configured){tail}"
        return (f"no {name} app is configured: run `socialpub apps set --platform {platform} --client-id ID "
                f"--client-secret -`, then connect with `--oauth` (docs/networks.md){tail}")
    need = " ".join(f"--{n.replace('_', '-')} {_HINTS[n]}" for n, required, _ in FLAGS[platform] if required)
    return f"--platform {platform} needs {need} (docs/networks.md){tail}"


async def cmd_connect(args: argparse.Namespace, rt: Runtime) -> None:
    given = [name for name in ALL_FLAGS if getattr(args, name, None) is not None]
    if args.sandbox:
        if given or getattr(args, "oauth", False):
            raise operator.OperatorError("--sandbox takes no network credential flags nor --oauth")
        await connect_sandbox(args, rt)
        return
    if not given and not getattr(args, "oauth", False):
        raise operator.OperatorError(await _missing(rt, args.platform))
    if getattr(args, "oauth", False):
        if not _operator_oauth(args.platform) or given:
            raise operator.OperatorError(f"--oauth applies to {', '.join(sorted(p for p in oauth.NETWORKS if _operator_oauth(p)))} "
                                         "without network credential flags")
        await check_current(rt.db)
        await _start_oauth(args, rt, args.brand, args.platform)
        return
    if args.platform not in FLAGS:
        raise operator.OperatorError(f"--platform {args.platform} takes no credential flags: "
                                     f"{await _missing(rt, args.platform)}")
    await check_current(rt.db)
    options = _options(args, args.platform)
    try:
        if args.platform == "mastodon" and "access_token" not in options:
            flow = await oauth.start(rt, args.brand, "mastodon", server=options["instance"],
                                     display_name=args.display_name)
            emit(args, {"platform": "mastodon", "brand_id": args.brand, **flow},
                 f"Open this URL to authorise socialpub on the instance (valid until {flow['expires_at']}, once):\n"
                 f"{flow['authorize_url']}\n`socialpub serve` must be reachable at {flow['redirect_uri']} "
                 "to complete it.")
            return
        integration = await networks.connect(rt, args.brand, args.platform, options, display_name=args.display_name)
    except networks.ConnectError as exc:
        raise operator.OperatorError(str(exc)) from None
    emit(args, _out(integration), f"Connected {integration.platform} account {integration.display_name} "
                                  f"({integration.id}), verified with the network")


async def cmd_disconnect(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    try:
        integration = await networks.disconnect(rt, args.integration_id)
    except networks.ConnectError as exc:
        raise operator.OperatorError(str(exc)) from None
    emit(args, _out(integration), f"Disconnected {integration.id}: its credentials are deleted; "
                                  f"`socialpub integrations reconnect {integration.id}` brings it back")


async def cmd_reconnect(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    async with rt.db.session(write=False) as s:
        from storage.tables.integrations import Integration

        found = await s.get(Integration, args.integration_id)
    if found is None:
        raise operator.OperatorError(f"no integration {args.integration_id}")
    try:
        if found.provider != "sandbox" and _operator_oauth(found.platform):
            await _start_oauth(args, rt, found.brand_id, found.platform, integration_id=found.id)
            return
        if found.provider != "sandbox":
            if found.platform == "mastodon" and args.instance is None:  # the account's own instance
                args.instance = (found.provider_state or {}).get("instance")
            options = _options(args, found.platform)
            if found.platform == "mastodon" and "access_token" not in options:
                flow = await oauth.start(rt, found.brand_id, "mastodon", server=options["instance"],
                                         integration_id=found.id)
                emit(args, {"platform": "mastodon", "integration_id": found.id, **flow},
                     f"Open this URL to authorise socialpub again (valid until {flow['expires_at']}, once):\n"
                     f"{flow['authorize_url']}")
                return
        else:
            options = {}
        integration = await networks.reconnect(rt, found.id, options)
    except networks.ConnectError as exc:
        raise operator.OperatorError(str(exc)) from None
    emit(args, _out(integration), f"Reconnected {integration.platform} account {integration.display_name} "
                                  f"({integration.id}), status {integration.status}")


async def cmd_rotate(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    if args.new_key:
        try:
            vault.add_file_key(rt.settings)
        except vault.VaultError as exc:
            raise operator.OperatorError(str(exc)) from None
    try:
        counts = await secrets.rotate(rt)
    except vault.VaultError as exc:
        raise operator.OperatorError(f"{exc}; nothing after the failing row was re-encrypted") from None
    dropped = vault.drop_old_file_keys(rt.settings) if args.drop_old_keys else 0
    emit(args, {**counts, "old_keys_dropped": dropped},
         f"Re-encrypted {counts['credentials']} credentials, sealed {counts['legacy_sealed']} legacy ones, "
         f"{counts['oauth_apps']} app secrets and {counts['oauth_states']} pending connects under the newest key"
         + (f"; dropped {dropped} old key(s)" if dropped else ""))


def cmd_new_key(args: argparse.Namespace) -> int:
    print(Fernet.generate_key().decode())
    return 0


def _network_flags(p: argparse.ArgumentParser, *, reconnect: bool = False) -> None:
    g = p.add_argument_group("network credentials (verified with the network before anything is saved; "
                             "`-` reads a secret from stdin)")
    g.add_argument("--instance", help="Mastodon: the instance URL (OAuth unless --access-token is given)")
    g.add_argument("--access-token", help="Mastodon: a token made in the instance's Development settings")
    g.add_argument("--bot-token", help="Telegram: the bot token from @BotFather")
    g.add_argument("--chat-id", help="Telegram: the channel or group (@name or numeric ID) the bot posts to")
    g.add_argument("--webhook-url", help="Discord: the channel webhook URL")
    g.add_argument("--service", help="Bluesky: the PDS URL (default https://bsky.social)")
    g.add_argument("--handle", help="Bluesky: the account handle")
    g.add_argument("--app-password", help="Bluesky: an app password (Settings > App passwords)")
    if not reconnect:
        g.add_argument("--oauth", action="store_true",
                       help="X and the other operator-app networks: print the authorize URL (needs `socialpub "
                            "apps set` or SOCIALPUB_<PLATFORM>_CLIENT_ID/SECRET)")


async def cmd_select_account(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    try:
        integration = await networks.select_account(rt, args.integration_id, args.account)
    except networks.ConnectError as exc:
        raise operator.OperatorError(str(exc)) from None
    emit(args, _out(integration), f"{integration.id} now publishes as {integration.platform} account "
                                  f"{integration.username or integration.provider_account_id}")


async def cmd_apps_set(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    secret = args.client_secret
    if secret == "-":
        secret = sys.stdin.readline().strip()
        if not secret:
            raise operator.OperatorError("--client-secret - read nothing from standard input; nothing was saved")
    try:
        app = await apps.set_app(rt, args.platform, args.client_id, secret or "", args.redirect_uri)
    except apps.AppError as exc:
        raise operator.OperatorError(str(exc)) from None
    emit(args, {"platform": app.platform, "client_id": app.client_id, "has_client_secret": bool(app.client_secret),
                "redirect_uri": app.redirect_uri},
         f"Stored the {app.platform} app {app.client_id} (secret sealed in the vault); register this redirect "
         f"URI on the network's side: {app.redirect_uri}")


async def cmd_apps_list(args: argparse.Namespace, rt: Runtime) -> None:
    await check_current(rt.db)
    rows = await apps.list_apps(rt)
    lines = [f"{r['platform']:<16} {'configured (' + r['source'] + ')' if r['configured'] else 'not configured':<20} "
             f"{r['client_id'] or '-':<30} {r['redirect_uri']}" for r in rows]
    emit(args, {"apps": rows}, "\n".join(lines) or "no network needs an operator app")


def register(sub: argparse._SubParsersAction) -> None:
    integrations = subcommands(sub, "integrations")
    p = integrations.choices["connect"]
    p.description = ("Connect an account to a brand: a real one with network credentials (Mastodon, Telegram, "
                     "Discord, Bluesky; see docs/networks.md), an OAuth one with --oauth, or a sandbox one with --sandbox; "
                     "without any of them it says what is missing and creates nothing.")
    _network_flags(p)
    p.set_defaults(func=run_with_runtime(cmd_connect))

    p = integrations.add_parser("disconnect", help="delete an account's stored credentials (it stops publishing)")
    p.add_argument("integration_id")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_disconnect))

    p = integrations.add_parser("reconnect", help="verify new credentials for an account (or print a new "
                                                  "authorize URL) and mark it connected")
    p.add_argument("integration_id")
    _network_flags(p, reconnect=True)
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_reconnect))

    p = integrations.add_parser("select-account", help="Instagram, Facebook, LinkedIn, Tumblr, Google Business "
                                                       "Profile: publish as another account (professional account, "
                                                       "Page, organization, blog, location) the connect reached "
                                                       "(listed in the connect's output)")
    p.add_argument("integration_id")
    p.add_argument("--account", required=True, help="the account ID")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_select_account))

    group = subcommands(sub, "apps")
    p = group.add_parser("set", help="store a network's OAuth client credentials (the secret sealed)")
    p.add_argument("--platform", required=True)
    p.add_argument("--client-id", required=True)
    p.add_argument("--client-secret", default="", help="`-` reads it from standard input")
    p.add_argument("--redirect-uri", help="default {SOCIALPUB_PUBLIC_URL}/connect/{platform}/callback")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_apps_set))
    p = group.add_parser("list", help="which networks have an OAuth app configured (never the secret)")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_apps_list))

    group = subcommands(sub, "secrets")
    p = group.add_parser("rotate", help="re-encrypt every stored secret under the newest vault key")
    p.add_argument("--new-key", action="store_true",
                   help="first put a new random key in front of $SOCIALPUB_HOME/vault.keys")
    p.add_argument("--drop-old-keys", action="store_true",
                   help="afterwards keep only the newest key in $SOCIALPUB_HOME/vault.keys")
    add_json_flag(p)
    p.set_defaults(func=run_with_runtime(cmd_rotate))
    p = group.add_parser("new-key", help="print a new random vault key (for SOCIALPUB_SECRET_KEYS)")
    p.set_defaults(func=cmd_new_key)
