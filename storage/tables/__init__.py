"""Every table module of this package is imported here, so `SQLModel.metadata` is complete for migrations
and tests without a hand-kept list."""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
