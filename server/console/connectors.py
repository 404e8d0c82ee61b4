"""Connect forms shown on a brand's accounts page, one list per provider.

The real networks of `tools/networks/` (credential forms; Mastodon without a token starts OAuth) and the
sandbox. The accounts page renders every form generically; each form's `action` must be a console route
(CSRF checked there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from schemas.platforms import PLATFORMS
from storage.tables.brands import Brand


@dataclass(frozen=True)
class FormField:
    name: str
    label: str
    kind: str = "text"  # text | password | select
    choices: tuple[tuple[str, str], ...] = ()  # (value, label) for select
    required: bool = True


@dataclass(frozen=True)
class ConnectForm:
    provider: str  # "sandbox", "bluesky", ...
    title: str
    action: str  # path under /console
    button: str
    fields: tuple[FormField, ...] = field(default_factory=tuple)
    note: str = ""


def sandbox_forms(brand: Brand) -> list[ConnectForm]:
    return [ConnectForm(
        provider="sandbox", title="Sandbox account", action=f"/brands/{brand.id}/accounts/connect",
        button="Connect sandbox account",
        fields=(FormField("platform", "Network", "select", tuple((p.key, p.display_name) for p in PLATFORMS)),),
        note="A simulated account on any network: publishes to the sandbox, accepts injected faults.")]


# What the console calls each credential field; which fields a network takes (and which are secret) is
# `server/commands/networks.py`'s FLAGS, the CLI's list, so both ask for the same things.
LABELS = {
    "instance": "Instance URL (https://…)", "access_token": "Access token (empty: authorise on the instance)",
    "bot_token": "Bot token", "chat_id": "Chat or channel id", "webhook_url": "Webhook URL",
    "service": "PDS URL (empty: https://bsky.social)", "handle": "Handle", "app_password": "App password",
}
NOTES = {
    "mastodon": "Leave the token empty to be sent to the instance to authorise socialpub (OAuth with PKCE).",
    "bluesky": "An app password (Settings → App passwords), not the account password.",
    "telegram": "The bot must be an admin of the channel; socialpub checks it before saving.",
    "discord": "A channel webhook (Channel settings → Integrations → Webhooks).",
}


def network_forms(brand: Brand) -> list[ConnectForm]:
    """A credential form per real network (verified with the network before anything is stored)."""
    from server.commands.networks import FLAGS  # the CLI's flags: one list of what each network needs

    names = {p.key: p.display_name for p in PLATFORMS}
    return [ConnectForm(
        provider=platform, title=f"{names.get(platform, platform)} account",
        action=f"/brands/{brand.id}/accounts/connect/{platform}", button=f"Connect {names.get(platform, platform)}",
        fields=tuple(FormField(name, LABELS.get(name, name), "password" if secret else "text", required=required)
                     for name, required, secret in flags),
        note=NOTES.get(platform, "")) for platform, flags in FLAGS.items()]


def reconnect_fields(platform: str) -> tuple[FormField, ...]:
    """The fields that bring back a real account of `platform` (a Mastodon account keeps its instance)."""
    from server.commands.networks import FLAGS

    return tuple(FormField(name, LABELS.get(name, name), "password" if secret else "text", required=required)
                 for name, required, secret in FLAGS.get(platform, ()) if (platform, name) != ("mastodon", "instance"))


# Each: (brand) -> forms.
NETWORK_CONNECTORS: list[Callable[[Brand], list[ConnectForm]]] = [network_forms, sandbox_forms]


def connect_forms(brand: Brand) -> list[ConnectForm]:
    return [form for make in NETWORK_CONNECTORS for form in make(brand)]
