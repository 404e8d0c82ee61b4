"""`released_plain` (the create's reply built as JSON without the model) equals `released(...)` dumped as the
dispatcher dumps it, and declines what it does not cover; REST then writes it with orjson, which must give the
bytes the standard library gives."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace

import orjson
import pytest

from tools.content.rules import released, released_plain

AT = datetime(2026, 1, 5, 9, 0, 0, 123000, tzinfo=UTC)


def item(**changes):
    values = dict(id="ci_01M868V9RW0XAXXKDM9QQKPWN8", brand_id="brd_01M868V41X3ZHJ197SE8MG2NHD", name="Draft é",
                  thumbnail_media_id=None, thumbnail_timestamp=0.0, intended_integration_ids=[], copy_mode="single",
                  single_copy={"caption": "Hello \u2028 \"there\" 👋", "hashtags": ["a", "b"], "title": None},
                  platform_copy=None, settings={}, created_at=AT, updated_at=AT)
    values.update(changes)
    return SimpleNamespace(**values)


def stdlib(data):  # Starlette's JSONResponse
    return json.dumps(data, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


@pytest.mark.parametrize("changes", [
    {},
    {"thumbnail_timestamp": 0},
    {"thumbnail_timestamp": 2.5},
    {"thumbnail_timestamp": 12345678.9},
    {"thumbnail_media_id": "med_01M868V9RW0XAXXKDM9QQKPWN8"},
    {"intended_integration_ids": ["int_1", "int_2"]},
    {"single_copy": {"caption": "", "hashtags": [], "title": "A title"}},
    {"name": "x" * 300},
])
@pytest.mark.parametrize("labels", [[], ["lbl_1", "lbl_2"]])
def test_equals_the_model_dump(changes, labels):
    it = item(**changes)
    plain = released_plain(it, labels)
    assert plain is not None
    model = released(it, labels).model_dump(mode="json", by_alias=True)
    assert plain == model
    assert list(plain) == list(model)
    assert [type(v) for v in plain.values()] == [type(v) for v in model.values()]
    assert orjson.dumps(plain) == stdlib(model)


@pytest.mark.parametrize("changes", [
    {"thumbnail_timestamp": 1e-05},  # orjson writes 0.00001, the standard library 1e-05
    {"thumbnail_timestamp": 1e-7},
    {"settings": {"instagram_settings": {"post_type": "REEL"}}},
    {"copy_mode": "per_platform", "single_copy": None, "platform_copy": {"x": {"caption": "c", "hashtags": [],
                                                                              "title": None}}},
    {"single_copy": {"caption": "c", "hashtags": ["a"]}},
    {"single_copy": {"caption": "c", "hashtags": [1], "title": None}},
    {"thumbnail_timestamp": True},
])
def test_declines_what_it_does_not_cover(changes):
    assert released_plain(item(**changes), []) is None
