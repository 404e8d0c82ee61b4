"""Adapters to social networks behind one small interface. `sandbox` is local and deterministic; the others
talk to real networks (their base URLs come from each account: a Mastodon instance, the Telegram Bot API base
stored at connect time, a Discord webhook URL, a Bluesky PDS)."""

from __future__ import annotations

from providers.base import Account, Options, PostRequest, PostResult, Provider, ProviderError
from providers.bluesky import BlueskyProvider
from providers.discord import DiscordProvider
from providers.facebook import FacebookProvider
from providers.google_business import GoogleBusinessProvider
from providers.instagram import InstagramProvider
from providers.linkedin import LinkedInProvider
from providers.mastodon import MastodonProvider
from providers.pinterest import PinterestProvider
from providers.sandbox import SandboxProvider
from providers.telegram import TelegramProvider
from providers.threads import ThreadsProvider
from providers.tiktok import TikTokProvider
from providers.tumblr import TumblrProvider
from providers.x import XProvider
from providers.youtube import YouTubeProvider

__all__ = ["Account", "Options", "PostRequest", "PostResult", "Provider", "ProviderError", "SandboxProvider",
           "default_providers"]


def default_providers() -> dict[str, Provider]:
    return {
        "sandbox": SandboxProvider(), "mastodon": MastodonProvider(), "telegram": TelegramProvider(),
        "discord": DiscordProvider(), "bluesky": BlueskyProvider(), "x": XProvider(),
        "instagram": InstagramProvider(), "tiktok": TikTokProvider(),
        "threads": ThreadsProvider(),
        "facebook": FacebookProvider(),
        "linkedin": LinkedInProvider(),
        "youtube": YouTubeProvider(),
        "pinterest": PinterestProvider(),
        "tumblr": TumblrProvider(),
        "google_business": GoogleBusinessProvider(),
    }
