"""Connect forms shown on a brand's accounts page, one list per provider.

The sandbox form is built in. Real networks (`tools/networks/`, another branch) add a function to
`NETWORK_CONNECTORS` that returns their forms for a brand: an OAuth start (a POST form whose handler
redirects to the network) or a credential form (fields posted to the network's own handler). The accounts
page renders every form generically; each form's `action` must be a console route (CSRF checked there).
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


# Each: (brand) -> forms. The lead adds the real networks' connectors here when merging `nets`.
NETWORK_CONNECTORS: list[Callable[[Brand], list[ConnectForm]]] = [sandbox_forms]


def connect_forms(brand: Brand) -> list[ConnectForm]:
    return [form for make in NETWORK_CONNECTORS for form in make(brand)]
