"""Stored results of idempotent writes, keyed by (API key, endpoint, idempotency key)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from storage.tables import accounts  # noqa: F401  # tables its foreign keys name (storage/tables/__init__.py)
from storage.tables._base import TABLE_CONFIG, json_field, utc_field


class IdempotencyRecord(SQLModel, table=True):
    model_config = TABLE_CONFIG
    __tablename__ = "idempotency_records"  # pyright: ignore[reportAssignmentType]  # SQLModel types it as a declared_attr; SQLAlchemy takes a str
    __table_args__ = (UniqueConstraint("api_key_id", "endpoint", "key", name="uq_idempotency_key"),)

    id: str = Field(primary_key=True, max_length=40)
    api_key_id: str = Field(foreign_key="api_keys.id", max_length=40)
    endpoint: str = Field(max_length=100)
    key: str = Field(max_length=255)
    request_hash: str = Field(max_length=64)
    status_code: int = 200
    response: dict[str, Any] | None = json_field()
    created_at: datetime = utc_field(index=True)
