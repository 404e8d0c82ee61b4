"""Adapters to social networks behind one small interface. `sandbox` is local and deterministic; the others
talk to real networks (their base URLs come from each account: a Mastodon instance, the Telegram Bot API base
stored at connect time, a Discord webhook URL, a Bluesky PDS)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping

from providers.base import Account, Options, PostRequest, PostResult, Provider, ProviderError
from providers.sandbox import SandboxProvider

__all__ = ["Account", "Options", "PostRequest", "PostResult", "Provider", "ProviderError", "ProviderRegistry",
           "SandboxProvider", "adapter_class", "declared_scopes", "default_providers"]

# Every adapter by name: "module:class". Importing an adapter pulls its network libraries (httpx, authlib, the
# Bluesky and Google clients), which a process that never talks to that network does not need.
ADAPTERS: dict[str, str] = {
    "sandbox": "providers.sandbox:SandboxProvider",
    "mastodon": "providers.mastodon:MastodonProvider",
    "telegram": "providers.telegram:TelegramProvider",
    "discord": "providers.discord:DiscordProvider",
    "bluesky": "providers.bluesky:BlueskyProvider",
    "x": "providers.x:XProvider",
    "instagram": "providers.instagram:InstagramProvider",
    "tiktok": "providers.tiktok:TikTokProvider",
    "threads": "providers.threads:ThreadsProvider",
    "facebook": "providers.facebook:FacebookProvider",
    "linkedin": "providers.linkedin:LinkedInProvider",
    "youtube": "providers.youtube:YouTubeProvider",
    "pinterest": "providers.pinterest:PinterestProvider",
    "tumblr": "providers.tumblr:TumblrProvider",
    "google_business": "providers.google_business:GoogleBusinessProvider",
}


class ProviderRegistry(MutableMapping[str, Provider]):
    """The providers of a runtime by name, each adapter imported and built on first use. Setting a name replaces
    (or adds) a provider as in a dict; `on_build` prepares each adapter as it is built."""

    def __init__(self, adapters: dict[str, str]) -> None:
        self._adapters = dict(adapters)
        self._built: dict[str, Provider] = {}
        self._prepare: Callable[[Provider], None] | None = None

    def on_build(self, prepare: Callable[[Provider], None]) -> None:
        self._prepare = prepare

    def __getitem__(self, name: str) -> Provider:
        provider = self._built.get(name)
        if provider is None:
            module, cls = self._adapters[name].split(":")  # KeyError: no such provider
            provider = getattr(importlib.import_module(module), cls)()
            if self._prepare is not None:
                self._prepare(provider)
            self._built[name] = provider
        return provider

    def __setitem__(self, name: str, provider: Provider) -> None:
        self._built[name] = provider

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._built.pop(name, None)
        self._adapters.pop(name, None)

    def __contains__(self, name: object) -> bool:  # without building the adapter
        return name in self._built or name in self._adapters

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._adapters, *self._built]))

    def __len__(self) -> int:
        return len(self._adapters.keys() | self._built.keys())


def default_providers() -> ProviderRegistry:
    return ProviderRegistry(ADAPTERS)


def adapter_class(name: str) -> type:
    """The adapter class of `name`, imported but not built."""
    module, cls = ADAPTERS[name].split(":")  # KeyError: no such adapter
    return getattr(importlib.import_module(module), cls)


def declared_scopes(platform: str, account: Account | None = None) -> Mapping[str, tuple[str, ...]]:
    """The scopes the adapter of `platform` declares per operation (`needed_scopes`, or `needed_scopes_for(account)`
    where they depend on the account, as LinkedIn's organization accounts): the one source `integrations check`
    and the sandbox compare grants with."""
    cls = adapter_class(platform)
    for_account: Callable[[Account], Mapping[str, tuple[str, ...]]] | None = getattr(cls, "needed_scopes_for", None)
    if account is not None and callable(for_account):
        return for_account(account)
    return getattr(cls, "needed_scopes", {})
