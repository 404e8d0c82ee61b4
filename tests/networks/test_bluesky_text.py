"""Bluesky's pure rules: TID-format record keys from idempotency tokens, facet byte offsets, JWT expiry."""

from __future__ import annotations

import base64
import json

from hypothesis import given
from hypothesis import strategies as st

from providers.bluesky_text import TID_ALPHABET, TID_PATTERN, find_spans, jwt_expiry, record_cid, record_key


def _tid_value(key: str) -> int:
    value = 0
    for ch in key:
        value = value * 32 + TID_ALPHABET.index(ch)
    return value


def test_record_keys_are_deterministic_valid_tids() -> None:
    key = record_key("sp_0123456789abcdef")
    assert key == record_key("sp_0123456789abcdef")  # a retry writes the same record
    assert TID_PATTERN.match(key) and len(key) == 13
    assert key != record_key("sp_0123456789abcdeg")
    parts = [record_key(key, i) for i in range(1, 25)]
    assert len({key, *parts}) == 25 and all(TID_PATTERN.match(p) for p in parts)
    value = _tid_value(key)
    assert value < 2**63  # top bit clear
    micros = value >> 10
    assert 35 * 365 * 86400 * 10**6 < micros < 72 * 365 * 86400 * 10**6  # a 2005-2041 timestamp


@given(st.text(min_size=1, max_size=80))
def test_any_token_gives_a_valid_key(token: str) -> None:
    key = record_key(token)
    assert TID_PATTERN.match(key) and key.startswith("3") and "gg" not in key


def _cut(text: str, start: int, end: int) -> str:
    return text.encode()[start:end].decode()


def test_facet_offsets_are_utf8_bytes() -> None:
    text = "🎉 launch: https://example.com/a?b=1#frag, by @alice.test #launch! ünïcode #2024"
    spans = find_spans(text)
    assert [(s.kind, s.value) for s in spans] == [
        ("link", "https://example.com/a?b=1#frag"), ("mention", "alice.test"), ("tag", "launch")]
    link = spans[0]
    assert link.start == 13 and text.index("https") == 10  # bytes, not characters: the emoji is 4 bytes
    for span in spans:
        assert _cut(text, span.start, span.end) == {"link": span.value, "mention": "@" + span.value,
                                                    "tag": "#" + span.value}[span.kind]


def test_facets_skip_what_is_not_a_link_mention_or_tag() -> None:
    assert find_spans("mail me@example.com or see example.com, #123 only digits") == []
    spans = find_spans("(see https://en.wikipedia.org/wiki/Foo_(bar)) and https://x.test.")
    assert [s.value for s in spans] == ["https://en.wikipedia.org/wiki/Foo_(bar)", "https://x.test"]


def test_jwt_expiry_reads_exp_without_verifying() -> None:
    payload = base64.urlsafe_b64encode(json.dumps({"exp": 1_900_000_000}).encode()).decode().rstrip("=")
    assert jwt_expiry(f"eyJhbGciOiJIUzI1NiJ9.{payload}.sig") == 1_900_000_000
    assert jwt_expiry("not-a-jwt") is None and jwt_expiry(None) is None and jwt_expiry("a.!!!.c") is None


def test_record_cids_match_what_a_pds_computes() -> None:
    # CIDs the local PDS (.ci/pds) answered to putRecord for these two records.
    text = {"$type": "app.bsky.feed.post", "text": "héllo 🎉 https://x.test", "createdAt": "2026-01-01T00:00:00.000Z",
            "facets": [{"index": {"byteStart": 11, "byteEnd": 25},
                        "features": [{"$type": "app.bsky.richtext.facet#link", "uri": "https://x.test"}]}]}
    assert record_cid(text) == "bafyreia3newwlwuxg5zb3ghwpgdao4d2idx4ywzljxv6srnkonmcnhadkq"
    blob = {"$type": "blob", "ref": {"$link": "bafkreiegciyhp2tj6itdv6hxgjpj57wfscrtdwgs7ojmo4esbbmd4e3cme"},
            "mimeType": "image/png", "size": 69}
    image = {"$type": "app.bsky.feed.post", "text": "img", "createdAt": "2026-01-01T00:00:00.000Z",
             "embed": {"$type": "app.bsky.embed.images",
                       "images": [{"alt": "a", "image": blob, "aspectRatio": {"width": 5, "height": 5}}]}}
    assert record_cid(image) == "bafyreict77wd45tms2mvllzntyc577nbjayxl7pqkwohjavzl2vv5ojtv4"
