"""Fixtures of the Schedules tests: `sc`, a brand of the test world with one draft (tests/schedules/support.py)."""

from __future__ import annotations

import pytest

from tests.schedules.support import Sched


@pytest.fixture
async def sc(world) -> Sched:
    s = await Sched(world).setup()
    s.item_id = await s.item()
    return s
