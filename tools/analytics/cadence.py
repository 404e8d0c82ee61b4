"""When a published post's metrics are read: soon after publishing, then ever more rarely, then never again.
Most engagement comes in the first day; a reading a month later catches the long tail."""

from __future__ import annotations

from datetime import datetime, timedelta

STEPS: tuple[timedelta, ...] = (timedelta(hours=1), timedelta(hours=6), timedelta(hours=24), timedelta(days=3),
                                timedelta(days=7), timedelta(days=30))


def next_due(published_at: datetime, now: datetime) -> datetime | None:
    """The first reading time of the cadence after `now`, or None when the last one has passed. A collector that
    was down for a week does not catch up reading by reading: it takes one reading and goes on from there."""
    for offset in STEPS:
        if published_at + offset > now:
            return published_at + offset
    return None
