"""Text counting the way each network counts: grapheme clusters, X weighted length, Threads length with
emoji as UTF-8 bytes, UTF-16 code units, links and hashtags.

Pure functions, no dependencies beyond the standard library. Grapheme clusters follow UAX #29 extended
grapheme clusters (GB1–GB13 including GB9c, Unicode 15.1 rules) with character properties derived from
`unicodedata` plus the small tables below (Extended_Pictographic, Prepend, SpacingMark exceptions, InCB
consonants). The tests compare the segmentation against the `regex` package's `\\X` (a test-only oracle).
Results are memoised per string because preflight counts the same caption for many targets.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

# --- grapheme cluster break properties -------------------------------------------------------------------

# Extended_Pictographic (emoji-data.txt; stable since Unicode 13 because whole blocks are reserved).
_EXT_PICT = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122),
    (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA), (0x231A, 0x231B), (0x2328, 0x2328),
    (0x2388, 0x2388), (0x23CF, 0x23CF), (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2),
    (0x25AA, 0x25AB), (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712), (0x2714, 0x2714),
    (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721), (0x2728, 0x2728), (0x2733, 0x2734),
    (0x2744, 0x2744), (0x2747, 0x2747), (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755),
    (0x2757, 0x2757), (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50),
    (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299),
    (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F), (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA), (0x1F400, 0x1F53D),
    (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)
# Grapheme_Cluster_Break=Prepend.
_PREPEND = (
    (0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2),
    (0x0D4E, 0x0D4E), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x111C2, 0x111C3), (0x1193F, 0x1193F),
    (0x11941, 0x11941), (0x11A3A, 0x11A3A), (0x11A84, 0x11A89), (0x11D46, 0x11D46), (0x11F02, 0x11F02),
)
# Other_Grapheme_Extend and other non-Mn/Me code points with Grapheme_Cluster_Break=Extend.
_EXTEND_EXTRA = (
    (0x09BE, 0x09BE), (0x09D7, 0x09D7), (0x0B3E, 0x0B3E), (0x0B57, 0x0B57), (0x0BBE, 0x0BBE),
    (0x0BD7, 0x0BD7), (0x0CC2, 0x0CC2), (0x0CD5, 0x0CD6), (0x0D3E, 0x0D3E), (0x0D57, 0x0D57),
    (0x0DCF, 0x0DCF), (0x0DDF, 0x0DDF), (0x1B35, 0x1B35), (0x200C, 0x200C), (0x302E, 0x302F),
    (0xFF9E, 0xFF9F), (0x1133E, 0x1133E), (0x11357, 0x11357), (0x114B0, 0x114B0), (0x114BD, 0x114BD),
    (0x115AF, 0x115AF), (0x11930, 0x11930), (0x1D165, 0x1D165), (0x1D16E, 0x1D172), (0x1F3FB, 0x1F3FF),
    (0xE0020, 0xE007F),
)
# Spacing combining marks (Mc) that are NOT SpacingMark, and non-Mc code points that are.
_NOT_SPACING = (
    (0x102B, 0x102C), (0x1038, 0x1038), (0x1062, 0x1064), (0x1067, 0x106D), (0x1083, 0x1083),
    (0x1087, 0x108C), (0x108F, 0x108F), (0x109A, 0x109C), (0x1A61, 0x1A61), (0x1A63, 0x1A64),
    (0xAA7B, 0xAA7B), (0xAA7D, 0xAA7D), (0x11720, 0x11721),
)
_SPACING_EXTRA = ((0x0E33, 0x0E33), (0x0EB3, 0x0EB3))
# Indic_Conjunct_Break (Unicode 15.1, GB9c): consonants and linkers (viramas) of six scripts.
_INCB_CONSONANT = (
    (0x0915, 0x0939), (0x0958, 0x095F), (0x0978, 0x097F), (0x0995, 0x09A8), (0x09AA, 0x09B0),
    (0x09B2, 0x09B2), (0x09B6, 0x09B9), (0x09DC, 0x09DD), (0x09DF, 0x09DF), (0x09F0, 0x09F1),
    (0x0A95, 0x0AA8), (0x0AAA, 0x0AB0), (0x0AB2, 0x0AB3), (0x0AB5, 0x0AB9), (0x0AF9, 0x0AF9),
    (0x0B15, 0x0B28), (0x0B2A, 0x0B30), (0x0B32, 0x0B33), (0x0B35, 0x0B39), (0x0B5C, 0x0B5D),
    (0x0B5F, 0x0B5F), (0x0B71, 0x0B71), (0x0C15, 0x0C28), (0x0C2A, 0x0C39), (0x0C58, 0x0C5A),
    (0x0D15, 0x0D3A),
)
_INCB_LINKER = frozenset((0x094D, 0x09CD, 0x0ACD, 0x0B4D, 0x0C4D, 0x0D4D))


def _table(ranges: tuple[tuple[int, int], ...]) -> Callable[[int], bool]:
    starts = [a for a, _ in ranges]
    ends = [b for _, b in ranges]

    def contains(cp: int) -> bool:
        i = bisect.bisect_right(starts, cp) - 1
        return i >= 0 and cp <= ends[i]
    return contains


_is_ext_pict = _table(_EXT_PICT)
_is_prepend = _table(_PREPEND)
_is_extend_extra = _table(_EXTEND_EXTRA)
_is_not_spacing = _table(_NOT_SPACING)
_is_spacing_extra = _table(_SPACING_EXTRA)
_is_incb_consonant = _table(_INCB_CONSONANT)

# Property codes.
OTHER, CR, LF, CONTROL, EXTEND, ZWJ, RI, PREPEND, SPACING, L, V, T, LV, LVT, EXT_PICT = range(15)


@lru_cache(maxsize=8192)
def _gcb(cp: int) -> int:
    if cp == 0x0D:
        return CR
    if cp == 0x0A:
        return LF
    if cp == 0x200D:
        return ZWJ
    if 0x1F1E6 <= cp <= 0x1F1FF:
        return RI
    if 0x1100 <= cp <= 0x115F or 0xA960 <= cp <= 0xA97C:
        return L
    if 0x1160 <= cp <= 0x11A7 or 0xD7B0 <= cp <= 0xD7C6:
        return V
    if 0x11A8 <= cp <= 0x11FF or 0xD7CB <= cp <= 0xD7FB:
        return T
    if 0xAC00 <= cp <= 0xD7A3:
        return LV if (cp - 0xAC00) % 28 == 0 else LVT
    if _is_prepend(cp):
        return PREPEND
    if _is_extend_extra(cp):
        return EXTEND
    if _is_ext_pict(cp):
        return EXT_PICT
    if _is_spacing_extra(cp):
        return SPACING
    cat = unicodedata.category(chr(cp))
    if cat in ("Mn", "Me"):
        return EXTEND
    if cat == "Mc":
        return OTHER if _is_not_spacing(cp) else SPACING
    if cat in ("Cc", "Zl", "Zp", "Cs") or cat == "Cf":
        return CONTROL
    return OTHER


def _incb(cp: int, prop: int) -> str | None:
    if cp in _INCB_LINKER:
        return "linker"
    if _is_incb_consonant(cp):
        return "consonant"
    if prop in (EXTEND, ZWJ):
        return "extend"
    return None


def _segment(text: str) -> list[str]:
    clusters: list[str] = []
    start = 0
    prev = -1
    ri_run = 0  # regional indicators in the current run (GB12/13 pair them)
    emoji = 0  # 0 none, 1 after ExtPict Extend*, 2 after ExtPict Extend* ZWJ (GB11)
    incb = 0  # 0 none, 1 after Consonant [Extend]*, 2 after Consonant ... Linker ... (GB9c)
    for i, ch in enumerate(text):
        cp = ord(ch)
        prop = _gcb(cp)
        if i == 0 or (prev == CR and prop == LF):
            join = True
        elif prev in (CONTROL, CR, LF) or prop in (CONTROL, CR, LF):
            join = False
        elif (prev == L and prop in (L, V, LV, LVT)) or (prev in (LV, V) and prop in (V, T)) or \
                (prev in (LVT, T) and prop == T) or prop in (EXTEND, ZWJ, SPACING) or prev == PREPEND or (incb == 2 and _is_incb_consonant(cp)) or (prev == ZWJ and prop == EXT_PICT and emoji == 2):
            join = True
        else:
            join = prev == RI and prop == RI and ri_run % 2 == 1
        if not join and i:
            clusters.append(text[start:i])
            start = i
        # state for the next code point
        ri_run = ri_run + 1 if prop == RI else 0
        if prop == EXT_PICT or (emoji == 1 and prop == EXTEND):
            emoji = 1
        elif emoji == 1 and prop == ZWJ:
            emoji = 2
        else:
            emoji = 0
        kind = _incb(cp, prop)
        if kind == "consonant":
            incb = 1
        elif incb and kind == "linker":
            incb = 2
        elif incb and kind == "extend":
            pass
        else:
            incb = 0
        prev = prop
    if text:
        clusters.append(text[start:])
    return clusters


@lru_cache(maxsize=512)
def graphemes(text: str) -> tuple[str, ...]:
    """The extended grapheme clusters of `text` (what a reader sees as one character)."""
    if text.isascii() and "\r" not in text:
        return tuple(text)
    return tuple(_segment(text))


@lru_cache(maxsize=512)
def grapheme_length(text: str) -> int:
    if text.isascii():
        return len(text) - text.count("\r\n")
    return len(graphemes(text))


def is_emoji(cluster: str) -> bool:
    """True for a cluster that renders as one emoji: a pictograph (with modifiers, ZWJ parts, tags or
    variation selectors), a flag (regional indicator pair) or a keycap. Text-default symbols such as ©
    count as emoji only with the emoji variation selector U+FE0F."""
    first = ord(cluster[0])
    if 0x1F1E6 <= first <= 0x1F1FF:
        return len(cluster) > 1
    if "\u20e3" in cluster and cluster[0] in "0123456789#*":
        return True
    if not _is_ext_pict(first):
        return False
    return first >= 0x1F000 or "\ufe0f" in cluster or "\u200d" in cluster or len(cluster) > 1 or \
        _emoji_default(first)


# BMP pictographs that render as emoji without U+FE0F (Emoji_Presentation=Yes below U+1F000).
_EMOJI_PRESENTATION_BMP = frozenset((
    0x231A, 0x231B, 0x23E9, 0x23EA, 0x23EB, 0x23EC, 0x23F0, 0x23F3, 0x25FD, 0x25FE, 0x2614, 0x2615,
    0x2648, 0x2649, 0x264A, 0x264B, 0x264C, 0x264D, 0x264E, 0x264F, 0x2650, 0x2651, 0x2652, 0x2653,
    0x267F, 0x2693, 0x26A1, 0x26AA, 0x26AB, 0x26BD, 0x26BE, 0x26C4, 0x26C5, 0x26CE, 0x26D4, 0x26EA,
    0x26F2, 0x26F3, 0x26F5, 0x26FA, 0x26FD, 0x2705, 0x270A, 0x270B, 0x2728, 0x274C, 0x274E, 0x2753,
    0x2754, 0x2755, 0x2757, 0x2795, 0x2796, 0x2797, 0x27B0, 0x27BF, 0x2B1B, 0x2B1C, 0x2B50, 0x2B55,
))


def _emoji_default(cp: int) -> bool:
    return cp in _EMOJI_PRESENTATION_BMP


# --- X (twitter-text v3 configuration) --------------------------------------------------------------------

# https://github.com/twitter/twitter-text/blob/master/config/v3.json
X_URL_LENGTH = 23  # transformedURLLength: every URL counts as 23 whatever its length
_X_SCALE = 100
_X_DEFAULT_WEIGHT = 200
_X_RANGES = ((0, 4351, 100), (8192, 8205, 100), (8208, 8223, 100), (8242, 8247, 100))


def _x_weight(cp: int) -> int:
    for lo, hi, w in _X_RANGES:
        if lo <= cp <= hi:
            return w
    return _X_DEFAULT_WEIGHT


@lru_cache(maxsize=512)
def x_weighted_length(text: str) -> int:
    """Weighted length per twitter-text v3: NFC-normalised; code points in the Latin-1/general ranges
    weigh 1, everything else (CJK, most symbols) 2; each emoji sequence weighs 2 whatever its length;
    each URL (with or without a scheme) counts as 23."""
    text = unicodedata.normalize("NFC", text)
    total = 0
    pos = 0
    for m in _URL_RE.finditer(text):
        total += _x_plain_weight(text[pos:m.start()]) + X_URL_LENGTH * _X_SCALE
        pos = m.end()
    total += _x_plain_weight(text[pos:])
    return -(-total // _X_SCALE)  # ceil, as twitter-text compares the scaled sum


def _x_plain_weight(text: str) -> int:
    if text.isascii():
        return len(text) * 100
    total = 0
    for cluster in graphemes(text):
        if is_emoji(cluster):
            total += _X_DEFAULT_WEIGHT
        else:
            total += sum(_x_weight(ord(c)) for c in cluster)
    return total


# --- Threads ----------------------------------------------------------------------------------------------

@lru_cache(maxsize=512)
def threads_length(text: str) -> int:
    """Threads: characters (code points), except that each emoji counts as its UTF-8 byte length
    (👍 = 4, ❤️ = 6, a ZWJ family = 18)."""
    if text.isascii():
        return len(text)
    total = 0
    for cluster in graphemes(text):
        total += len(cluster.encode("utf-8")) if is_emoji(cluster) else len(cluster)
    return total


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


def char_length(text: str) -> int:
    return len(text)


# --- links and hashtags -----------------------------------------------------------------------------------

# Scheme-less links need a known top-level domain (as twitter-text and Meta's link counters do): common
# generic TLDs plus any two-letter country code.
_GTLDS = ("com|net|org|info|biz|edu|gov|mil|int|io|co|ai|app|dev|me|tv|ly|gg|fm|xyz|online|site|shop|store|"
          "blog|news|page|link|tech|cloud|social|media|live|art|design|studio|agency|club|world|today|"
          "company|global|group|life|network|email|travel|museum|aero|jobs|mobi|name|pro|tel|asia|cat|coop|"
          "google|youtube|amazon|apple|microsoft")
_URL_RE = re.compile(
    r"(?<![\w@.\-/])(?:"
    r"https?://[^\s<>\"]+"
    r"|(?:www\.)?(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:" + _GTLDS + r"|[a-z]{2})(?![\w\-])"
    r"(?::\d{1,5})?(?:/[^\s<>\"]*)?"
    r")(?<![.,;:!?)\]'\"])",
    re.IGNORECASE,
)


@lru_cache(maxsize=512)
def find_urls(text: str) -> tuple[str, ...]:
    """Links in `text`, in order: `http(s)://…` anywhere, and bare domains (`example.com/path`,
    `www.example.org`) with a known top-level domain. Trailing punctuation is not part of a link."""
    return tuple(m.group(0) for m in _URL_RE.finditer(text))


def _link_key(url: str) -> str:
    key = re.sub(r"^https?://", "", url, flags=re.IGNORECASE)
    host, _, rest = key.partition("/")
    return host.lower().removeprefix("www.") + ("/" + rest if rest else "")


@lru_cache(maxsize=512)
def count_links(text: str, *, unique: bool = True) -> int:
    """Number of links; `unique` counts the same address once (scheme, `www.` and host case ignored)."""
    urls = find_urls(text)
    return len({_link_key(u) for u in urls}) if unique else len(urls)


_HASHTAG_RE = re.compile(r"(?<![\w#&/])[#＃](\w*[^\W\d_]\w*)")


@lru_cache(maxsize=512)
def find_hashtags(text: str) -> tuple[str, ...]:
    """Hashtags written inline (`#word`, not `#123`, not inside a URL fragment), without the `#`."""
    return tuple(m.group(1) for m in _HASHTAG_RE.finditer(_URL_RE.sub(" ", text)))


_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z0-9_.]{1,30}")


@lru_cache(maxsize=512)
def find_mentions(text: str) -> tuple[str, ...]:
    """@handles written in the text (not e-mail addresses)."""
    return tuple(_MENTION_RE.findall(text))


# --- composition and dispatch -----------------------------------------------------------------------------

def compose_text(caption: str | None, hashtags: list[str] | tuple[str, ...] = ()) -> str:
    """The text a network receives: the caption, then a blank line and the hashtags as `#tag` words.
    Preflight counts this composed text; the publisher must compose the same way."""
    caption = caption or ""
    if not hashtags:
        return caption
    tags = " ".join("#" + h for h in hashtags)
    return f"{caption}\n\n{tags}" if caption else tags


def all_hashtags(caption: str | None, hashtags: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Every hashtag a post will carry: inline ones in the caption and the copy's `hashtags`."""
    return [*find_hashtags(caption or ""), *hashtags]


# How a length is counted, by method name. The registry and the capabilities document refer to these names.
COUNTERS: dict[str, Callable[[str], int]] = {
    "characters": char_length,
    "graphemes": grapheme_length,
    "utf16": utf16_length,
    "utf8_bytes": utf8_length,
    "x_weighted": x_weighted_length,
    "threads": threads_length,
}

COUNTING_DESCRIPTIONS: dict[str, str] = {
    "characters": "Unicode code points (an emoji made of several code points counts as several).",
    "graphemes": "Grapheme clusters: what a reader sees as one character (one emoji, one flag, a letter with "
                 "its accents each count 1).",
    "utf16": "UTF-16 code units (most characters 1; emoji and other characters outside the Basic "
             "Multilingual Plane 2).",
    "utf8_bytes": "UTF-8 bytes (ASCII 1, most accented letters 2, CJK 3, emoji 4 or more).",
    "x_weighted": "X weighted characters (twitter-text v3): Latin and common punctuation weigh 1; CJK, "
                  "most other scripts and symbols weigh 2; each emoji weighs 2; each link counts as 23 "
                  "whatever its length; text is NFC-normalised first.",
    "threads": "Characters, except each emoji counts as its UTF-8 bytes (4 for most, more for sequences).",
}
assert set(COUNTERS) == set(COUNTING_DESCRIPTIONS)


def count(text: str, method: str) -> int:
    return COUNTERS[method](text)
