"""Adapters to social networks behind one small interface. `sandbox` is local and deterministic."""

from __future__ import annotations

from providers.base import Account, Options, PostRequest, PostResult, Provider, ProviderError
from providers.sandbox import SandboxProvider

__all__ = ["Account", "Options", "PostRequest", "PostResult", "Provider", "ProviderError", "SandboxProvider",
           "default_providers"]


def default_providers() -> dict[str, Provider]:
    return {"sandbox": SandboxProvider()}
