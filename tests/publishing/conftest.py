"""Fixtures of the worker's subprocess tests (tests/publishing/test_worker_cli.py, test_worker_stop.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def init_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home after `socialpub init` (migrated database, vault key, first workspace), made once per worker."""
    from tests.publishing.test_worker_cli import run_cli

    home = tmp_path_factory.mktemp("init-home")
    run_cli(home, "init")
    return home


@pytest.fixture
def initialized(tmp_path: Path, init_home: Path) -> Path:
    """tmp_path as `socialpub init` leaves it, a copy of `init_home`: one CLI process (~1.3 s of CPU) less per test
    about the worker rather than about init."""
    shutil.copytree(init_home, tmp_path, dirs_exist_ok=True)
    return tmp_path
