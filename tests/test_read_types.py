"""storage/statements.py `as_api_time` and `as_json`: one function per value gives what the columns' own types
(then `iso()`) give, on SQLite's stored text and on other dialects' values."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from schemas.time import iso
from storage.db import json_loads
from storage.statements import ApiTime, JsonValue
from storage.types import JSONType, UTCDateTime

SQLITE = sqlite.dialect(json_deserializer=json_loads)  # pyright: ignore[reportArgumentType]  # as storage/db.py's engines


def _processor(column_type: Any, dialect: Any) -> Callable[[Any], Any]:
    process = column_type.result_processor(dialect, None)
    assert process is not None
    return process


def _long_way(dialect: Any, column_type: Any, value: Any) -> Any:
    return _processor(column_type.dialect_impl(dialect), dialect)(value)


def _stored(at: datetime) -> str:
    """The text SQLAlchemy's SQLite DATETIME writes for a UTC time."""
    bind = UTCDateTime().dialect_impl(SQLITE).bind_processor(SQLITE)
    assert bind is not None
    return bind(at)


TIMES = [datetime(2026, 11, 24, 6, 0, 0, tzinfo=UTC), datetime(2026, 11, 24, 6, 0, 0, 999999, tzinfo=UTC),
         datetime(2026, 11, 24, 6, 0, 0, 123456, tzinfo=UTC), datetime(2026, 11, 24, 6, 0, 0, 999, tzinfo=UTC),
         datetime(1000, 1, 1, tzinfo=UTC), datetime(999, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),
         datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
         datetime(2028, 2, 29, 12, 30, 1, 500, tzinfo=UTC)]
# Text SQLAlchemy would not write, which DATETIME still reads: whole seconds, an offset, a T, fewer digits.
OTHER_TEXT = ["2026-11-24 06:00:00", "2026-11-24T06:00:00.123456", "2026-11-24 06:00:00.123456+02:00",
              "2026-11-24 06:00:00.1", "2026-11-24", None]
BAD_TEXT = ["2026-02-30 06:00:00.000000", "2026-11-24 25:00:00.000000", "2026-11-24 06:00:00.12345٣", "soon"]


@pytest.mark.parametrize("at", TIMES)
def test_api_time_from_sqlite_text_is_iso_of_the_column(at: datetime) -> None:
    process = _processor(ApiTime(), SQLITE)
    text = _stored(at)
    assert process(text) == iso(_long_way(SQLITE, UTCDateTime(), text)) == iso(at)


@pytest.mark.parametrize("text", OTHER_TEXT)
def test_api_time_of_other_sqlite_text_takes_the_long_way(text: str | None) -> None:
    assert _processor(ApiTime(), SQLITE)(text) == iso(_long_way(SQLITE, UTCDateTime(), text))


@pytest.mark.parametrize("text", BAD_TEXT)
def test_api_time_refuses_what_the_column_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        _long_way(SQLITE, UTCDateTime(), text)
    with pytest.raises(ValueError):
        _processor(ApiTime(), SQLITE)(text)


def test_api_time_elsewhere_is_iso_of_the_column() -> None:
    dialect = postgresql.dialect()
    process = _processor(ApiTime(), dialect)
    for at in [*TIMES[:4], datetime(2026, 11, 24, 8, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))]:
        assert process(at) == iso(at)
    assert process(None) is None


@pytest.mark.parametrize("text", ['{"caption": "x", "hashtags": []}', "[]", "[\"a\", \"b\"]", "null", "3",
                                  '{"big": 123456789012345678901234567890}', "NaN", None])
def test_json_value_from_sqlite_text_is_the_column_value(text: str | None) -> None:
    got = _processor(JsonValue(), SQLITE)(text)
    want = _long_way(SQLITE, JSONType, text)
    assert repr(got) == repr(want)  # repr: NaN is not equal to itself


def test_json_value_of_a_stored_number_and_of_bad_text() -> None:
    process = _processor(JsonValue(), SQLITE)
    assert process(5) == _long_way(SQLITE, JSONType, 5) == 5
    with pytest.raises(ValueError):
        _long_way(SQLITE, JSONType, "{")
    with pytest.raises(ValueError):
        process("{")
