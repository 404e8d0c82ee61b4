"""The long-lived services a handler can reach: settings, database, clock, providers, worker wake-up."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field

import anyio

from providers import Provider, ProviderRegistry, default_providers
from schemas.settings import Settings
from schemas.time import Clock, SystemClock
from storage.db import Database
from tools.autopilot.topics import BUILTIN, TopicGenerator


@dataclass
class Runtime:
    settings: Settings
    db: Database
    clock: Clock = field(default_factory=SystemClock)
    providers: MutableMapping[str, Provider] = field(default_factory=default_providers)
    # Set when new work is due, so an idle worker in this process wakes at once instead of at its next poll.
    work_ready: anyio.Event = field(default_factory=anyio.Event)
    # Worker IDs asked to stop (server/worker.py `Worker.stop`): their ticks claim nothing more and hand back
    # what they have not started.
    stopping: set[str] = field(default_factory=set)
    # Autopilot themes and topics (tools/autopilot/topics.py); deterministic and local unless replaced.
    topic_generator: TopicGenerator = field(default=BUILTIN)

    def __post_init__(self) -> None:
        # Providers that keep local state (the sandbox's post ledger) keep it under the service's home; the
        # default registry builds each adapter on first use, and prepares it then.
        if isinstance(self.providers, ProviderRegistry):
            self.providers.on_build(self._use_home)
        else:
            for provider in self.providers.values():
                self._use_home(provider)

    def _use_home(self, provider: Provider) -> None:
        use_home = getattr(provider, "use_home", None)
        if use_home is not None:
            use_home(self.settings.home)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: object) -> Runtime:
        return cls(settings=settings, db=Database(settings.resolved_database_url), **kwargs)  # pyright: ignore[reportArgumentType]  # kwargs are Runtime fields, checked by the dataclass

    def provider(self, name: str) -> Provider:
        return self.providers[name]

    def wake_worker(self) -> None:
        self.work_ready.set()

    async def close(self) -> None:
        await self.db.dispose()
