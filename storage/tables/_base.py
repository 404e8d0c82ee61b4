"""Column helpers shared by the table modules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel
from sqlmodel.main import SQLModelConfig  # pyright: ignore[reportPrivateImportUsage]  # the type of SQLModel.model_config; sqlmodel.main imports it from its _compat module without re-exporting it

from storage.types import JSONType, UTCDateTime

# SQLModel's own config plus `defer_build`: pydantic builds a table's validator and serializer on first use
# (`model_validate`, `model_dump`), not when the class is defined. A table's `__init__` and the rows SQLAlchemy
# loads never use them, so a process that only reads and writes rows (every CLI command) skips building ~50.
TABLE_CONFIG = SQLModelConfig(from_attributes=True, defer_build=True)
# One type object for every timestamp column (types hold no per-column state; `JSONType` is shared the same way):
# SQLAlchemy derives a TypeDecorator's comparator class once per type object, ~70 µs each when mappers configure.
UTC_DATETIME = UTCDateTime()


def utc_field(*, index: bool = False, nullable: bool = False, default: Any = ...) -> Any:
    if default is ...:
        default = None if nullable else ...
    return Field(default=default, sa_type=UTC_DATETIME, index=index, nullable=nullable)


def json_field(default_factory: Any = None, *, nullable: bool = True) -> Any:
    if default_factory is None:
        return Field(default=None, sa_type=JSONType, nullable=nullable)
    return Field(default_factory=default_factory, sa_type=JSONType, nullable=nullable)


class Stamped(SQLModel):
    """created_at / updated_at, always set from the service clock (never a database default)."""

    model_config = TABLE_CONFIG

    created_at: datetime = utc_field()
    updated_at: datetime = utc_field()
