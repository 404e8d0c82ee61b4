"""Tables that let several machines run as one service: worker heartbeats (for /readyz) and rate-limit
counters (for `SOCIALPUB_RATE_LIMIT_STORAGE=database`)."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from storage.tables._base import TABLE_CONFIG, utc_field


class WorkerHeartbeat(SQLModel, table=True):
    """One row per running worker, rewritten by its loop every few seconds (server/health.py reads them)."""

    model_config = TABLE_CONFIG
    __tablename__ = "worker_heartbeats"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    worker_id: str = Field(primary_key=True, max_length=120)
    started_at: datetime = utc_field()
    beat_at: datetime = utc_field(index=True)
    # Loop passes since start: shows a worker that beats but is stuck in one long pass.
    passes: int = 0


class RateLimitCounter(SQLModel, table=True):
    """A fixed-window counter per limit key; `expires_at` is a Unix time (seconds)."""

    model_config = TABLE_CONFIG
    __tablename__ = "rate_limit_counters"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str

    key: str = Field(primary_key=True, max_length=250)
    count: int = 0
    expires_at: float = Field(index=True)
