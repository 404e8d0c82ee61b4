"""How platforms count text where it is not plain characters.

Threads: up to 500 characters where each emoji counts as its UTF-8 bytes (😀 is 4, ❤️ is 6: the heart and
its variation selector), and at most 5 links. Content creation and preflight count the same way.
"""

from __future__ import annotations

import re

THREADS_TEXT_MAX = 500
THREADS_LINKS_MAX = 5

# Code points that belong to emoji (pictographs, symbols drawn as emoji, regional-indicator flags, skin
# tones) and the joiners and selectors that combine them into one emoji. Every one of these is counted at
# its UTF-8 length, so a whole ZWJ sequence counts as the sum of its bytes.
_EMOJI_RANGES = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049), (0x2122, 0x2122),
    (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA), (0x231A, 0x231B), (0x2328, 0x2328),
    (0x23CF, 0x23CF), (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x27BF), (0x2934, 0x2935),
    (0x2B05, 0x2B07), (0x2B1B, 0x2B1C), (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030),
    (0x303D, 0x303D), (0x3297, 0x3297), (0x3299, 0x3299),
    (0x200D, 0x200D),  # zero-width joiner
    (0x20E3, 0x20E3),  # combining keycap
    (0xFE0E, 0xFE0F),  # variation selectors (text / emoji presentation)
    (0x1F000, 0x1FAFF),  # pictographs, emoticons, transport, flags (regional indicators), skin tones...
    (0xE0020, 0xE007F),  # tag characters (subdivision flags)
)
_LINK_RE = re.compile(r"(?i)\b(?:https?://|www\.)[^\s<>\"']+")


def is_emoji_code_point(cp: int) -> bool:
    return any(lo <= cp <= hi for lo, hi in _EMOJI_RANGES)


def threads_length(text: str) -> int:
    """Threads' count: one per character, except emoji code points, which count their UTF-8 bytes."""
    return sum(len(ch.encode("utf-8")) if is_emoji_code_point(ord(ch)) else 1 for ch in text)


def count_links(text: str) -> int:
    """Links as Threads counts them: http(s) URLs and www. addresses."""
    return len(_LINK_RE.findall(text))
