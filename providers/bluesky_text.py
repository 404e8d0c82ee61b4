"""Bluesky's pure parts: record keys derived from idempotency tokens, rich-text facets, JWT expiry.

No network here, so the rules can be unit-tested on their own; `providers.bluesky` does the calls.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

import libipld

# --- record keys -------------------------------------------------------------------------------------------
# A TID is 13 characters of base32-sortable: a 64-bit integer (top bit 0) = 53 bits of microseconds since the
# epoch + 10 bits of clock ID (atproto spec "Record Key" / "TID"). Ours come from a hash, not a clock, so a
# retry of the same target writes the same key. The first character is pinned to "3" (timestamps 2005-2041,
# like every TID minted today): keys look ordinary and never start with a letter, which keeps them clear of
# the PDS's start-of-word record-key word filter.
TID_ALPHABET = "234567abcdefghijklmnopqrstuvwxyz"
TID_PATTERN = re.compile(r"^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$")
_TID_PREFIX = 1  # index of "3"


def _encode_tid(value: int) -> str:
    out = []
    for _ in range(13):
        out.append(TID_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def record_key(token: str, part: int = 0) -> str:
    """The TID-format key of a target's post (part 0) or of its thread part `part` (1, 2, ...)."""
    if not token:
        raise ValueError("an idempotency token is required")
    for salt in range(64):
        digest = hashlib.sha256(f"socialpub-bluesky|{token}|{part}|{salt}".encode()).digest()
        low = int.from_bytes(digest[:8], "big") & ((1 << 60) - 1)  # 60 bits under the pinned first character
        key = _encode_tid((_TID_PREFIX << 60) | low)
        # A doubled "g" is the one thing the PDS's word filter matches mid-key; the next salt avoids it.
        if "gg" not in key:
            return key
    raise AssertionError("unreachable: 64 hashes in a row with a doubled g")


# --- facets ------------------------------------------------------------------------------------------------
# Facets index UTF-8 bytes (app.bsky.richtext.facet): byteStart inclusive, byteEnd exclusive.
_URL = re.compile(r"(?<![\w/])https?://[^\s<>\"'`]+", re.IGNORECASE)
_MENTION = re.compile(r"(?<![\w@.])@((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?)",
                      re.IGNORECASE)
_TAG = re.compile(r"(?<![\w#＃&])[#＃]([^\s#＃]+)")
_TRAILING = ".,;:!?)]}'\"…"
TAG_MAX = 64  # graphemes, per the lexicon's tag maxGraphemes; counted here in code points (stricter for emoji)


@dataclass(frozen=True)
class Span:
    kind: str  # link, mention, tag
    start: int  # UTF-8 byte offsets
    end: int
    value: str  # the URL, the handle (without @) or the tag (without #)


def _bytes_at(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def _trim(value: str) -> str:
    # A sentence's closing punctuation is not part of the link; a closing bracket is kept when it has a partner.
    while value and value[-1] in _TRAILING:
        if value[-1] == ")" and value.count("(") >= value.count(")"):
            break
        value = value[:-1]
    return value


def find_spans(text: str) -> list[Span]:
    """Links, @mentions and #hashtags in `text`, in order, with UTF-8 byte offsets; overlaps are dropped."""
    spans: list[tuple[int, int, str, str]] = []
    for m in _URL.finditer(text):
        url = _trim(m.group(0))
        if len(url) > len("https://"):
            spans.append((m.start(), m.start() + len(url), "link", url))
    for m in _MENTION.finditer(text):
        spans.append((m.start(), m.end(), "mention", m.group(1).lower()))
    for m in _TAG.finditer(text):
        tag = _trim(m.group(1))
        if tag and not tag.isdigit() and len(tag) <= TAG_MAX:
            spans.append((m.start(), m.start() + 1 + len(tag), "tag", tag))
    spans.sort()
    out: list[Span] = []
    last_end = -1
    for start, end, kind, value in spans:
        if start < last_end:
            continue  # inside a link (a URL's #fragment or @path)
        out.append(Span(kind, _bytes_at(text, start), _bytes_at(text, end), value))
        last_end = end
    return out


def facet(span: Span, did: str | None = None) -> dict:
    """The facet record for a span; a mention needs the DID its handle resolved to."""
    if span.kind == "link":
        feature = {"$type": "app.bsky.richtext.facet#link", "uri": span.value}
    elif span.kind == "mention":
        feature = {"$type": "app.bsky.richtext.facet#mention", "did": did}
    else:
        feature = {"$type": "app.bsky.richtext.facet#tag", "tag": span.value}
    return {"index": {"byteStart": span.start, "byteEnd": span.end}, "features": [feature]}


# --- sessions ----------------------------------------------------------------------------------------------

def jwt_expiry(token: str | None) -> int | None:
    """A JWT's `exp` (epoch seconds), read without verifying: only to know when to refresh."""
    if not token or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except ValueError:
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return int(exp) if isinstance(exp, int | float) else None


# --- record CIDs -------------------------------------------------------------------------------------------
# A record's CID is CIDv1, dag-cbor codec (0x71), sha2-256 of its DAG-CBOR encoding, base32 ("b..."). Knowing
# it before writing lets a thread be written last part first and its first post last, so the first post
# exists only once the whole thread does (which is what `find_post` looks for).

def _ipld(value: Any) -> Any:
    """A record in its JSON form (blob refs as {"$link": "b..."}) to the values libipld encodes (CID bytes)."""
    if isinstance(value, dict):
        if set(value) == {"$link"} and isinstance(value["$link"], str) and value["$link"].startswith("b"):
            link = value["$link"][1:].upper()
            return base64.b32decode(link + "=" * (-len(link) % 8))
        return {k: _ipld(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ipld(v) for v in value]
    return value


def record_cid(record: dict[str, Any]) -> str:
    digest = hashlib.sha256(libipld.encode_dag_cbor(_ipld(record))).digest()
    return "b" + base64.b32encode(bytes([0x01, 0x71, 0x12, 0x20]) + digest).decode().lower().rstrip("=")
