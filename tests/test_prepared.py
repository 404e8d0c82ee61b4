"""storage/prepared.py: its shortcuts give what SQLAlchemy's own machinery gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, select
from sqlalchemy.dialects import sqlite

from schemas.time import iso
from storage.db import json_loads
from storage.prepared import Prepared, _expanded, _plan, _processor, _value
from storage.tables.content import ContentItem, ContentItemLabel
from tools.content.routes import _LIST

DIALECT = sqlite.dialect(json_deserializer=json_loads)
LABELS = Prepared(select(ContentItemLabel.content_item_id, ContentItemLabel.label_id)
                  .where(ContentItemLabel.content_item_id.in_(bindparam("item_ids", expanding=True))))


def _args(prepared: Prepared, params: dict) -> tuple[str, tuple]:
    compiled, _ = prepared._compile(DIALECT)
    plan = _plan(compiled, params)
    assert plan is not None
    sql, sources = plan
    return sql, tuple(_value(params, source, process) for source, process in sources)


@pytest.mark.parametrize("ids", [["ci_a"], ["ci_a", "ci_b", "ci_c"], [f"ci_{n}" for n in range(21)]])
def test_plan_of_an_in_list_is_sqlalchemys_expansion(ids):
    compiled, _ = LABELS._compile(DIALECT)
    plan_sql, _ = _args(LABELS, {"item_ids": ids})
    # a plan made for one list serves another of the same length, as SQLAlchemy would expand it
    other = [f"{i}x" for i in ids]
    assert (plan_sql, _value_of(LABELS, {"item_ids": ids}, other)) == _expanded(compiled, {"item_ids": other})


def _value_of(prepared: Prepared, made_for: dict, ids: list[str]) -> tuple:
    _, sources = _plan(prepared._compile(DIALECT)[0], made_for)
    return tuple(_value({"item_ids": ids}, source, process) for source, process in sources)


@pytest.mark.parametrize("desc", [False, True])
def test_plan_of_a_keyset_page_is_sqlalchemys_expansion(desc):
    prepared = _LIST._statements[desc, True]
    at = datetime(2026, 11, 24, 6, 0, 0, 123456, tzinfo=UTC)
    params = {"brand_id": "brd_x", "keyset_limit": 21, "keyset_value": at, "keyset_id": "ci_y"}
    assert _args(prepared, params) == _expanded(prepared._compile(DIALECT)[0], params)
    assert "2026-11-24 06:00:00.123456" in _args(prepared, params)[1]  # the time's bind processor ran


@pytest.mark.parametrize("value", [None, "2026-11-24 06:00:00.123456", "2026-11-24 06:00:00",
                                   "2026-11-24 08:00:00.5+02:00", "0999-01-02 03:04:05.000006"])
def test_time_processor_is_sqlalchemys(value):
    impl = ContentItem.__table__.c.updated_at.type.dialect_impl(DIALECT)
    ours, theirs = _processor(impl, DIALECT), impl.result_processor(DIALECT, None)
    assert ours is not theirs
    assert ours(value) == theirs(value)
    if value is not None:
        assert ours(value).tzinfo is UTC


@pytest.mark.parametrize("value", [None, '{"a": [1, 2]}', "[]", "null", 7, 2.5, '{"n": 123456789012345678901234}'])
def test_json_processor_is_sqlalchemys(value):
    impl = ContentItem.__table__.c.settings.type.dialect_impl(DIALECT)
    ours, theirs = _processor(impl, DIALECT), impl.result_processor(DIALECT, None)
    assert ours is not theirs
    assert ours(value) == theirs(value)


def test_json_processor_refuses_what_sqlalchemy_refuses():
    impl = ContentItem.__table__.c.settings.type.dialect_impl(DIALECT)
    for process in (_processor(impl, DIALECT), impl.result_processor(DIALECT, None)):
        with pytest.raises(TypeError):
            process(object())


ISO_CASES = [None, "2026-11-24 06:00:00.123456", "2026-11-24 06:00:00.000000", "2026-11-24 06:00:00.999999",
             "2026-11-24 06:00:00.000999", "2026-11-24 06:00:00.001000", "2026-11-24 06:00:00",
             "2026-11-24 06:00:00.5", "2026-11-24T06:00:00.123456", "2026-11-24 08:00:00.5+02:00",
             "2026-11-24 06:00:00.123456+00:00", "2026-11-24 06:00:00.1234+0000", "0999-01-02 03:04:05.000006",
             "0001-01-01 00:00:00.000000", "1000-01-01 00:00:00.000000", "9999-12-31 23:59:59.999999",
             "2028-02-29 12:00:00.000000"]
ISO_REFUSED = ["2026-02-30 00:00:00.000000", "2026-11-24 24:00:00.000000", "2026-11-24 06:60:00.000000",
               "2026-13-01 00:00:00.000000", "2027-02-29 00:00:00.000000", "2026-11-24 06:00:60.000000",
               "２026-11-24 06:00:00.000000", "2026-11-24 06:00:00.12345\u0663", "", "x", 7, 2.5,
               "2026-11-24 06:00:00.123456 "]


def _time_processors():
    impl = ContentItem.__table__.c.updated_at.type.dialect_impl(DIALECT)
    return _processor(impl, DIALECT, True), impl.result_processor(DIALECT, None)


@pytest.mark.parametrize("value", ISO_CASES)
def test_iso_time_processor_is_iso_of_sqlalchemys(value):
    """Text straight from the stored text (storage/prepared.py `_iso_processor`) == iso() of SQLAlchemy's value."""
    ours, theirs = _time_processors()
    assert ours(value) == iso(theirs(value))


@pytest.mark.parametrize("value", ISO_REFUSED)
def test_iso_time_processor_refuses_what_sqlalchemy_refuses(value):
    ours, theirs = _time_processors()
    with pytest.raises(Exception) as theirs_raised:
        theirs(value)
    with pytest.raises(theirs_raised.type) as ours_raised:
        ours(value)
    assert str(ours_raised.value) == str(theirs_raised.value)


def test_iso_time_processor_over_stored_times():
    """Random times written by the column's own bind processor, read back both ways."""
    import random

    impl = ContentItem.__table__.c.updated_at.type.dialect_impl(DIALECT)
    store = impl.bind_processor(DIALECT)
    ours, theirs = _time_processors()
    rng = random.Random(18)
    lo, hi = datetime(1, 1, 1, tzinfo=UTC).timestamp(), datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()
    for n in range(20_000):
        at = datetime.fromtimestamp(rng.uniform(lo, hi), UTC)
        at = at.replace(microsecond=rng.choice([0, 999999, 1000, 999, rng.randrange(1_000_000)]) if n % 2 else at.microsecond)
        text = store(at)
        assert ours(text) == iso(theirs(text)) == iso(at), text


def test_iso_columns_elsewhere_are_iso_of_the_processor():
    """On another dialect (PostgreSQL's) the listed time columns are iso() of the column's own processor."""
    from sqlalchemy.dialects import postgresql

    dialect = postgresql.dialect()
    impl = ContentItem.__table__.c.updated_at.type.dialect_impl(dialect)
    at = datetime(2026, 11, 24, 6, 0, 0, 123456, tzinfo=UTC)
    theirs = impl.result_processor(dialect, None)
    assert _processor(impl, dialect, True)(at) == iso(theirs(at)) == "2026-11-24T06:00:00.123Z"
    assert _processor(impl, dialect, True)(None) is None
