"""Column helpers shared by the table modules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from storage.types import JSONType, UTCDateTime


def utc_field(*, index: bool = False, nullable: bool = False, default: Any = ...) -> Any:
    if default is ...:
        default = None if nullable else ...
    return Field(default=default, sa_type=UTCDateTime, index=index, nullable=nullable)


def json_field(default_factory: Any = None, *, nullable: bool = True) -> Any:
    if default_factory is None:
        return Field(default=None, sa_type=JSONType, nullable=nullable)
    return Field(default_factory=default_factory, sa_type=JSONType, nullable=nullable)


class Stamped(SQLModel):
    """created_at / updated_at, always set from the service clock (never a database default)."""

    created_at: datetime = utc_field()
    updated_at: datetime = utc_field()
