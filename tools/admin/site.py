"""Reading a prospect's home page: safe HTML parsing and deterministic extraction of identity facts.

Parsing uses the standard library's `html.parser` on at most `PARSE_MAX_BYTES` of the page: nothing is
executed, no sub-resource is loaded, every collected list and string is bounded. Extraction is pure (no I/O)
and deterministic, so the same page always gives the same facts:

- title: `og:site_name`, else the `<title>` text, else `og:title` (whitespace collapsed, 200 characters);
- description: `<meta name="description">`, else `og:description`, else `twitter:description` (1,000);
- logo: the first of `og:image`, `twitter:image`, `apple-touch-icon`, `icon` links whose URL does not name an
  unsupported type (.ico, .svg); images: `<img src>` (not data: URLs, not declared smaller than 64 px);
- colours: `theme-color` first, then hex and rgb() colours of inline `style` attributes and `<style>`
  declaration blocks, most frequent first (ties: first seen); near-neutral colours (channel spread < 16:
  white, black, greys) are skipped; at most `COLORS_MAX`, as upper-case `#RRGGBB`;
- category: a keyword classifier over the text (see `classify`).
"""

from __future__ import annotations

import codecs
import re
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

PARSE_MAX_BYTES = 1024 * 1024  # only the first MiB of a page is read and parsed
TITLE_MAX = 200
DESCRIPTION_MAX = 1_000
TEXT_MAX = 20_000  # visible text kept for the classifier
HEADINGS_MAX = 20
HEADING_MAX = 200
CSS_MAX = 200_000  # characters of inline CSS looked at for colours
COLOR_TOKENS_MAX = 5_000
COLORS_MAX = 5
IMAGES_SEEN_MAX = 50
URL_MAX = 2_000
MIN_IMAGE_SIDE = 64
NEUTRAL_SPREAD = 16
UNSUPPORTED_IMAGE_SUFFIXES = (".ico", ".svg", ".svgz", ".bmp", ".tif", ".tiff", ".avif", ".heic")

_SKIP_TEXT = {"script", "style", "noscript", "template", "svg", "head", "title"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_SPACES = re.compile(r"\s+")
_HEX = re.compile(r"#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})(?![0-9a-fA-F])")
_RGB = re.compile(r"rgba?\(\s*(\d{1,3})\s*[, ]\s*(\d{1,3})\s*[, ]\s*(\d{1,3})")
_BLOCK = re.compile(r"\{([^{}]*)\}")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
_WORD = re.compile(r"[a-z][a-z0-9]+")


@dataclass
class Page:
    """What the parser collected (raw, bounded)."""

    base_url: str
    title: str = ""
    meta: dict[str, str] = field(default_factory=dict)  # lower-case name/property -> first content
    icons: list[tuple[str, str]] = field(default_factory=list)  # (rel, href) in document order
    images: list[str] = field(default_factory=list)  # absolute img URLs
    headings: list[str] = field(default_factory=list)
    text: str = ""
    css: str = ""  # declarations only: style attributes and the inside of <style> blocks


@dataclass(frozen=True)
class Facts:
    title: str | None
    description: str | None
    logo_url: str | None
    image_urls: tuple[str, ...]
    colors: tuple[str, ...]
    category: str
    keywords: tuple[str, ...]  # the category keywords found, most frequent first (for hashtags)


def _clean(text: str, limit: int) -> str:
    return _SPACES.sub(" ", text).strip()[:limit]


def absolute(base: str, href: str | None) -> str | None:
    """An http(s) URL for `href` relative to `base`, or None (data:, javascript:, other schemes, too long)."""
    if not href:
        return None
    href = href.strip()
    if not href or len(href) > URL_MAX or href.lower().startswith(("data:", "javascript:", "blob:")):
        return None
    try:
        url = urljoin(base, href)
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > URL_MAX:
        return None
    return url


class _Parser(HTMLParser):
    def __init__(self, base_url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page(base_url=base_url)
        self._base_set = False
        self._stack: list[str] = []
        self._skip = 0  # open elements of _SKIP_TEXT on the stack
        self._title: list[str] = []
        self._heading: list[str] | None = None
        self._text: list[str] = []
        self._text_len = 0
        self._css: list[str] = []
        self._css_len = 0

    # -- helpers
    def _absolute(self, href: str | None) -> str | None:
        return absolute(self.page.base_url, href)

    def _add_css(self, text: str) -> None:
        room = CSS_MAX - self._css_len
        if room > 0 and text:
            self._css.append(text[:room])
            self._css_len += min(len(text), room)

    def _push(self, tag: str) -> None:
        self._stack.append(tag)
        self._skip += tag in _SKIP_TEXT
        if len(self._stack) > 200:  # unclosed tags of a broken page: forget the oldest
            dropped, self._stack = self._stack[:100], self._stack[100:]
            self._skip -= sum(t in _SKIP_TEXT for t in dropped)

    def _pop(self) -> str:
        tag = self._stack.pop()
        self._skip -= tag in _SKIP_TEXT
        return tag

    # -- events
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        if "style" in a:
            self._add_css(a["style"])
        if tag == "body" and "head" in self._stack:  # </head> may be omitted
            self._stack = [t for t in self._stack if t != "head"]
            self._skip = sum(t in _SKIP_TEXT for t in self._stack)
        if tag == "base" and not self._base_set and a.get("href"):
            url = self._absolute(a["href"])
            if url:
                self.page.base_url, self._base_set = url, True
        elif tag == "meta":
            key = (a.get("property") or a.get("name") or "").strip().lower()
            if key and key not in self.page.meta and len(self.page.meta) < 100:
                self.page.meta[key] = a.get("content", "")[:URL_MAX]
        elif tag == "link":
            rels = a.get("rel", "").lower().split()
            rel = next((r for r in ("apple-touch-icon", "icon") if r in rels), None)
            url = self._absolute(a.get("href"))
            if rel and url and len(self.page.icons) < 20:
                self.page.icons.append((rel, url))
        elif tag == "img" and len(self.page.images) < IMAGES_SEEN_MAX:
            url = self._absolute(a.get("src"))
            if url and not _declared_small(a.get("width"), a.get("height")):
                self.page.images.append(url)
        if tag in ("h1", "h2") and self._heading is None:
            self._heading = []
        if tag not in _VOID:
            self._push(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self._stack and self._stack[-1] == tag:
            self._pop()

    def handle_endtag(self, tag: str) -> None:
        if tag in ("h1", "h2") and self._heading is not None:
            text = _clean(" ".join(self._heading), HEADING_MAX)
            if text and len(self.page.headings) < HEADINGS_MAX:
                self.page.headings.append(text)
            self._heading = None
        if tag in self._stack:
            while self._stack:
                if self._pop() == tag:
                    break

    def handle_data(self, data: str) -> None:
        current = self._stack[-1] if self._stack else ""
        if current == "title":
            if sum(map(len, self._title)) < 1_000:
                self._title.append(data)
            return
        if current == "style":
            for block in _BLOCK.findall(data):
                self._add_css(block)
            return
        if self._skip:
            return
        if self._heading is not None:
            self._heading.append(data)
        if self._text_len < TEXT_MAX:
            piece = data[: TEXT_MAX - self._text_len]
            self._text.append(piece)
            self._text_len += len(piece)

    def finish(self) -> Page:
        self.close()
        self.page.title = _clean(" ".join(self._title), TITLE_MAX)
        self.page.text = _clean(" ".join(self._text), TEXT_MAX)
        self.page.css = "\n".join(self._css)
        return self.page


def _declared_small(width: str | None, height: str | None) -> bool:
    for value in (width, height):
        digits = (value or "").strip().removesuffix("px")
        if digits.isdigit() and int(digits) < MIN_IMAGE_SIDE:
            return True
    return False


def decode(head: bytes) -> str:
    """Bytes -> text: the charset a `<meta>` names in the first 2 KiB, else UTF-8; bad bytes are replaced."""
    match = _CHARSET.search(head[:2048])
    encoding = "utf-8"
    if match:
        try:
            encoding = codecs.lookup(match.group(1).decode("ascii")).name
        except LookupError:
            encoding = "utf-8"
    return head.decode(encoding, errors="replace")


def parse(html: bytes, url: str) -> Page:
    parser = _Parser(url)
    parser.feed(decode(html[:PARSE_MAX_BYTES]))
    return parser.finish()


# -- colours ----------------------------------------------------------------------------------------------------

def _hex(r: int, g: int, b: int) -> str:
    return f"#{r:02X}{g:02X}{b:02X}"


def color_value(text: str) -> str | None:
    """`#abc`, `#aabbcc` or `rgb(r, g, b)` -> `#RRGGBB`; anything else -> None."""
    text = text.strip()
    match = _HEX.fullmatch(text)
    if match:
        digits = match.group(1)
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        return "#" + digits.upper()
    match = _RGB.match(text)
    if match:
        channels = [int(v) for v in match.groups()]
        if all(0 <= c <= 255 for c in channels):
            return _hex(*channels)
    return None


def _neutral(color: str) -> bool:
    channels = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    return max(channels) - min(channels) < NEUTRAL_SPREAD


def extract_colors(page: Page) -> list[str]:
    found: list[str] = []
    theme = color_value(page.meta.get("theme-color", ""))
    if theme:
        found.append(theme)
    counts: Counter[str] = Counter()
    first_seen: dict[str, int] = {}
    tokens = 0
    for match in re.finditer(rf"{_HEX.pattern}|{_RGB.pattern}", page.css):
        tokens += 1
        if tokens > COLOR_TOKENS_MAX:
            break
        color = color_value(match.group(0))
        if color is None or _neutral(color):
            continue
        counts[color] += 1
        first_seen.setdefault(color, len(first_seen))
    for color in sorted(counts, key=lambda c: (-counts[c], first_seen[c])):
        if color not in found:
            found.append(color)
    return found[:COLORS_MAX]


# -- category ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Category:
    label: str
    hashtags: tuple[str, ...]
    keywords: frozenset[str]


def _category(label: str, hashtags: tuple[str, ...], words: str) -> Category:
    return Category(label, hashtags, frozenset(words.split()))


# In this order: a tie goes to the earlier category.
CATEGORIES: tuple[Category, ...] = (
    _category("Food & Beverage", ("food", "foodie"),
              "coffee cafe restaurant bakery food menu pizza burger drinks wine beer brewery roastery roasters "
              "espresso tea kitchen chef dining bistro catering dessert cake pastry brunch"),
    _category("Retail & E-commerce", ("shopsmall", "shoplocal"),
              "shop store boutique products cart sale collection clothing fashion apparel shoes jewelry jewellery "
              "gifts checkout"),
    _category("Beauty & Personal Care", ("beauty", "selfcare"),
              "salon spa beauty hair nails skincare makeup barber cosmetics massage lashes"),
    _category("Health & Wellness", ("health", "wellness"),
              "clinic health wellness therapy dental dentist doctor medical physiotherapy nutrition meditation "
              "pharmacy"),
    _category("Fitness & Sports", ("fitness", "sport"),
              "gym fitness workout trainer sports crossfit pilates yoga running climbing hiking outdoor outdoors"),
    _category("Technology & Software", ("tech", "software"),
              "software app apps cloud platform saas api developers data ai technology digital startup security"),
    _category("Education & Training", ("education", "learning"),
              "school courses course learning education academy students tutoring classes university lessons"),
    _category("Travel & Hospitality", ("travel", "hospitality"),
              "hotel travel tours booking resort vacation hostel trip destinations rooms guesthouse"),
    _category("Real Estate", ("realestate", "property"),
              "apartments homes property realty estate rent rental mortgage listings realtor"),
    _category("Home Services", ("homeservices", "local"),
              "plumbing plumber cleaning repair renovation roofing electrician landscaping gardening hvac movers"),
    _category("Professional Services", ("business", "consulting"),
              "consulting consultancy law lawyer attorney accounting accountant agency marketing finance insurance "
              "advisory"),
    _category("Arts & Entertainment", ("art", "creative"),
              "music art artist gallery theatre theater events concert photography film festival"),
    _category("Automotive", ("auto", "cars"),
              "car cars auto automotive garage dealership vehicles tires tyres mechanic"),
    _category("Nonprofit & Community", ("community", "nonprofit"),
              "charity nonprofit donate donation volunteer volunteers foundation"),
    _category("Pets", ("pets", "petlovers"),
              "pet pets dog dogs cat cats veterinary vet grooming puppy"),
)
OTHER = Category("Other", ("smallbusiness", "local"), frozenset())
BY_LABEL = {c.label: c for c in (*CATEGORIES, OTHER)}
MIN_SCORE = 3
# Title and meta description speak for the whole site; headings for a section; body text for itself.
WEIGHTS = {"title": 3, "description": 3, "headings": 2, "text": 1}


def classify(title: str, description: str, headings: list[str], text: str) -> tuple[Category, list[str]]:
    """The category whose keywords score highest (each occurrence weighted by where it appears, see
    `WEIGHTS`); below `MIN_SCORE` the category is `Other`. Returns it with its matched keywords, most
    frequent first."""
    weighted: Counter[str] = Counter()
    for part, value in (("title", title), ("description", description), ("headings", " ".join(headings)),
                        ("text", text)):
        for word in _WORD.findall(value.lower()):
            weighted[word] += WEIGHTS[part]
    best, best_score = OTHER, 0
    for category in CATEGORIES:
        score = sum(weighted[k] for k in category.keywords)
        if score > best_score:
            best, best_score = category, score
    if best_score < MIN_SCORE:
        return OTHER, []
    matched = sorted((k for k in best.keywords if weighted[k]), key=lambda k: (-weighted[k], k))
    return best, matched


# -- facts ------------------------------------------------------------------------------------------------------

def _image_ok(url: str) -> bool:
    return not urlsplit(url).path.lower().endswith(UNSUPPORTED_IMAGE_SUFFIXES)


def facts(page: Page, images_max: int) -> Facts:
    meta = page.meta
    title = _clean(meta.get("og:site_name") or page.title or meta.get("og:title", ""), TITLE_MAX) or None
    description = _clean(meta.get("description") or meta.get("og:description")
                         or meta.get("twitter:description", ""), DESCRIPTION_MAX) or None
    candidates = [absolute(page.base_url, meta.get(k)) for k in ("og:image", "og:image:secure_url", "og:image:url",
                                                           "twitter:image", "twitter:image:src")]
    candidates += [url for rel in ("apple-touch-icon", "icon") for r, url in page.icons if r == rel]
    logo = next((u for u in candidates if u and _image_ok(u)), None)
    images: list[str] = []
    for url in page.images:
        if url != logo and url not in images and _image_ok(url):
            images.append(url)
        if len(images) == images_max:
            break
    category, keywords = classify(title or "", description or "", page.headings, page.text)
    return Facts(title=title, description=description, logo_url=logo, image_urls=tuple(images),
                 colors=tuple(extract_colors(page)), category=category.label, keywords=tuple(keywords[:10]))
