"""The table modules. Importing this package imports none of them: a process loads the tables it uses (the stdio
server's key lookup needs three of the ~57, whose SQLModel classes cost ~0.4 s of start-up all together).

A flush sorts the loaded tables by their foreign keys, which must resolve, so each table module imports the
modules of the tables its foreign keys name: whatever set a process loads is closed under foreign keys
(tests/test_tables_loading.py checks it). `load_all()` fills `SQLModel.metadata` for migrations and tests."""

from __future__ import annotations

import importlib
import pkgutil


def load_all() -> None:
    """Import every table module, so `SQLModel.metadata` holds every table."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")
