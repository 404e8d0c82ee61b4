"""Text counting: graphemes (against the `regex` package's \\X as an oracle), X weighted length, Threads
length with emoji as UTF-8 bytes, UTF-16, links and hashtags — with the tricky cases spelled out."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.textcount import (
    all_hashtags,
    compose_text,
    count,
    count_links,
    find_hashtags,
    find_urls,
    grapheme_length,
    graphemes,
    is_emoji,
    threads_length,
    utf16_length,
    x_weighted_length,
)

FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # man ZWJ woman ZWJ girl ZWJ boy: 7 code points, 25 UTF-8 bytes
FLAG_FR = "🇫🇷"
FLAG_SCOTLAND = "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"  # tag sequence
THUMB_SKIN = "👍🏽"
HEART = "❤️"  # U+2764 + VS16
KEYCAP = "1️⃣"
E_COMBINING = "e\u0301"
HANGUL_JAMO = "\u1100\u1161\u11a8"  # L V T: one syllable
DEVANAGARI_KSSA = "\u0915\u094d\u0937"  # consonant virama consonant (GB9c): one cluster


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0), ("abc", 3), ("a\r\nb", 3), (FAMILY, 1), (FLAG_FR, 1), (FLAG_FR * 3, 3), (FLAG_FR + "🇩", 2),
    (FLAG_SCOTLAND, 1), (THUMB_SKIN, 1), (HEART, 1), (KEYCAP, 1), (E_COMBINING, 1), ("e\u0301\u0302\u0303", 1),
    ("中文字", 3), (HANGUL_JAMO, 1), ("각", 1), (DEVANAGARI_KSSA, 1), ("\u0915\u093f", 1),
    ("\u0e01\u0e33", 1), ("\u0600a", 1), ("a\u200db", 2), ("👩\u200d💻 hi", 4),
    ("\u0915\u094d\u200d\u0937", 1), ("a\u094d\u0937", 2),  # GB9c needs a consonant before the virama
])
def test_grapheme_length(text: str, expected: int) -> None:
    assert grapheme_length(text) == expected
    assert "".join(graphemes(text)) == text


ORACLE_ALPHABET = [chr(c) for c in [
    *range(0x20, 0x7F), 0x0D, 0x0A, 0x09, 0x0300, 0x0301, 0x20E3, 0x200D, 0xFE0F, 0x200C, 0x200B, 0xFEFF,
    0x1F3FB, 0x1F3FD, 0x1F1E6, 0x1F1EB, 0x1F1F7, 0xE0067, 0xE007F, 0x1F468, 0x1F469, 0x1F467, 0x1F9D1,
    0x1F91D, 0x2764, 0x00A9, 0x1F44D, 0x1F3F4, 0x2600, 0x1100, 0x1161, 0x11A8, 0xAC00, 0xAC01, 0x0915, 0x0937,
    0x093F, 0x0940, 0x0903, 0x0995, 0x09B7, 0x0E01, 0x0E33, 0x0600, 0x0627, 0x064B, 0x4E2D, 0x3042, 0x102B,
]]


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from(ORACLE_ALPHABET), max_size=12))
def test_graphemes_match_unicode_oracle(text: str) -> None:
    # Viramas are left out of the random alphabet: the oracle joins any virama to a following consonant,
    # while UAX #29 GB9c needs a consonant before it (covered by the explicit cases above).
    assert list(graphemes(text)) == regex.findall(r"\X", text)


@pytest.mark.parametrize(("cluster", "emoji"), [
    (FAMILY, True), (FLAG_FR, True), (FLAG_SCOTLAND, True), (THUMB_SKIN, True), (HEART, True), (KEYCAP, True),
    ("👍", True), ("⚽", True), ("©", False), ("©️", True), ("❤", False), ("a", False), ("1", False),
    ("🇫", False), ("中", False),
])
def test_is_emoji(cluster: str, emoji: bool) -> None:
    assert is_emoji(cluster) is emoji


@pytest.mark.parametrize(("text", "expected"), [
    ("hello", 5),
    ("a" * 280, 280),
    ("中文", 4),  # CJK weighs 2
    ("日本語のテキスト", 16),
    (FAMILY, 2), (FLAG_FR, 2), (THUMB_SKIN, 2), (HEART, 2), (KEYCAP, 2), (FLAG_SCOTLAND, 2),  # any emoji: 2
    ("é", 1), (E_COMBINING, 1),  # NFC-normalised to one code point
    ("https://example.com/a/very/long/path/that/goes/on/and/on?with=query", 23),
    ("example.com", 23), ("see www.example.org/page.", 4 + 23 + 1),  # scheme-less links count 23 too
    ("go https://a.co now", 3 + 23 + 4),
    ("–—", 2),  # U+2013/U+2014 are in the weight-1 range 8208-8223
    ("…", 2),  # U+2026 (8230) is outside every weight-1 range
])
def test_x_weighted_length(text: str, expected: int) -> None:
    assert x_weighted_length(text) == expected


def test_x_weighted_boundary_280() -> None:
    assert x_weighted_length("a" * 279 + "中") == 281
    assert x_weighted_length("a" * 278 + "中") == 280


@pytest.mark.parametrize(("text", "expected"), [
    ("hello", 5), ("👍", 4), (HEART, 6), (THUMB_SKIN, 8), (FAMILY, 25), (FLAG_FR, 8), (KEYCAP, 7),
    ("hi 👍", 7), ("中文", 2), (E_COMBINING, 2), ("©", 1),
])
def test_threads_length(text: str, expected: int) -> None:
    assert threads_length(text) == expected


def test_utf16_and_other_counters() -> None:
    assert utf16_length("👍") == 2 and utf16_length("abc") == 3 and utf16_length(FAMILY) == 11
    assert count(FAMILY, "characters") == 7
    assert count(FAMILY, "utf8_bytes") == 25
    assert count(FAMILY, "graphemes") == 1


@pytest.mark.parametrize(("text", "urls"), [
    ("see https://example.com/x?y=1.", ["https://example.com/x?y=1"]),
    ("(http://a.io/b)", ["http://a.io/b"]),
    ("visit example.com, or www.test.org/path!", ["example.com", "www.test.org/path"]),
    ("example.co.uk:8080/p", ["example.co.uk:8080/p"]),
    ("write to me@mail.com", []),
    ("file.txt and v1.2 and foo.bar1", []),
    ("HTTPS://EXAMPLE.COM", ["HTTPS://EXAMPLE.COM"]),
])
def test_find_urls(text: str, urls: list[str]) -> None:
    assert list(find_urls(text)) == urls


def test_count_links_unique_and_total() -> None:
    text = "https://example.com example.com WWW.EXAMPLE.COM https://other.org https://example.com/x"
    assert count_links(text, unique=False) == 5
    assert count_links(text, unique=True) == 3  # example.com, other.org, example.com/x


def test_hashtags() -> None:
    assert find_hashtags("#tag #123 #a1 x#no https://x.com/#frag ＃全角 #日本") == ("tag", "a1", "全角", "日本")
    assert all_hashtags("hi #one", ("two", "three")) == ["one", "two", "three"]


def test_compose_text() -> None:
    assert compose_text("Hello", ["a", "b"]) == "Hello\n\n#a #b"
    assert compose_text("Hello", []) == "Hello"
    assert compose_text(None, ["a"]) == "#a"
    assert compose_text(None) == ""
