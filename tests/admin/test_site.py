"""Website extraction (tools.admin.site): pure, deterministic, bounded, and never runs what a page contains."""

from __future__ import annotations

import time

from tools.admin import site as admin_site
from tools.admin.site import classify, color_value, decode, extract_colors, facts, parse


def page_facts(html: str, url: str = "https://bean.example/shop/") -> admin_site.Facts:
    return facts(parse(html.encode(), url), 3)


def test_title_description_and_logo_precedence() -> None:
    f = page_facts("""<html><head><title> Bean
        There </title><meta property="og:title" content="OG title">
        <meta property="og:description" content="From OG."><meta name="twitter:image" content="/tw.jpg">
        <link rel="apple-touch-icon" href="/touch.png"></head><body></body></html>""")
    assert f.title == "Bean There" and f.description == "From OG."
    assert f.logo_url == "https://bean.example/tw.jpg"
    f = page_facts("""<head><meta property="og:site_name" content="Site name"><title>T</title>
        <meta name="description" content="Meta wins."><meta property="og:description" content="OG loses.">
        <link rel="icon" href="favicon.ico"><link rel="shortcut icon" href="logo.png"></head>""")
    assert f.title == "Site name" and f.description == "Meta wins."
    assert f.logo_url == "https://bean.example/shop/logo.png"  # .ico is not an importable type


def test_urls_are_resolved_and_filtered() -> None:
    f = page_facts("""<head><base href="https://cdn.example/assets/"></head><body>
        <img src="a.png"><img src="a.png"><img src="javascript:alert(1)"><img src="data:image/png;base64,AA">
        <img src="ftp://x.example/b.png"><img src="/c.svg"><img src="small.png" width="32">
        <img src="d.jpg" height="63px"><img src="e.webp" width="640"><img src="f.gif"><img src="g.png">
        </body>""")
    assert f.image_urls == ("https://cdn.example/assets/a.png", "https://cdn.example/assets/e.webp",
                            "https://cdn.example/assets/f.gif")
    assert f.logo_url is None


def test_scripts_styles_and_hidden_text_are_not_text() -> None:
    page = parse(b"""<html><head><title>Gym</title><script>var t = "coffee coffee coffee coffee";</script>
        </head><body><noscript>coffee coffee coffee</noscript><template>coffee coffee</template>
        <p>Our gym and fitness classes. Workout with a trainer.</p><script>document.write('cafe')</script>
        </body></html>""", "https://gym.example/")
    assert "coffee" not in page.text and "cafe" not in page.text
    assert page.text == "Our gym and fitness classes. Workout with a trainer."
    html = "<title>Gym</title><p>Our gym and fitness classes. Workout with a trainer.</p>"
    assert page_facts(html).category == "Fitness & Sports"


def test_colours() -> None:
    assert color_value("#abc") == "#AABBCC" and color_value("#A1b2C3") == "#A1B2C3"
    assert color_value("rgb(255, 0, 10)") == "#FF000A" and color_value("rgba(1,2,3,0.5)") == "#010203"
    assert color_value("rgb(256, 0, 0)") is None and color_value("red") is None and color_value("#abcd") is None
    page = parse(b"""<head><meta name="theme-color" content="#123"><style>
        #bad .x { color: #ff0000 } .y { background: #00ff00; border-color: #ff0000 } .z{color:#FFFFFF}
        @media (min-width: 1px) { .w { color: rgb(0, 0, 255) } } .v { color: #11223344 }
        </style></head><body><p style="color: #00ff00; background:#0f0">x</p><p style="color:#777">y</p></body>""",
                 "https://x.example/")
    # theme colour first; then by frequency (green 3, red 2, blue 1); greys, 8-digit hex and selectors skipped
    assert extract_colors(page) == ["#112233", "#00FF00", "#FF0000", "#0000FF"]


def test_colours_are_bounded() -> None:
    css = "".join(f'<p style="color:#{i:06x}">.</p>' for i in range(0x100000, 0x100000 + 5000 * 97, 97))
    page = parse(css.encode(), "https://x.example/")
    assert len(extract_colors(page)) == admin_site.COLORS_MAX


def test_classifier_is_deterministic_and_weighted() -> None:
    category, words = classify("Bean There Coffee", "Roastery and cafe", [], "menu")
    assert category.label == "Food & Beverage" and words[:2] == ["cafe", "coffee"]
    assert classify("Hello", "", [], "welcome to our page")[0].label == "Other"
    # one body mention is below the threshold; in the title it counts three times
    assert classify("", "", [], "hotel")[0].label == "Other"
    assert classify("Hotel", "", [], "")[0].label == "Travel & Hospitality"
    # ties go to the earlier category of the table
    assert classify("", "", [], "coffee coffee coffee shop shop shop")[0].label == "Food & Beverage"


def test_charset_and_bad_bytes() -> None:
    html = '<meta charset="iso-8859-1"><title>Caf\xe9</title>'.encode("latin-1")
    assert decode(html).endswith("Café</title>")
    assert parse(b"<title>\xff\xfe ok</title>", "https://x.example/").title == "\ufffd\ufffd ok"
    assert decode(b'<meta charset="no-such-codec"><p>x</p>').endswith("<p>x</p>")


def test_broken_and_hostile_markup() -> None:
    # unclosed tags, stray closers, a missing </head>, an unterminated comment: still parsed, bounded
    page = parse(b"<html><head><title>Broken</title><body><div><p>text <b>bold</div></span><!-- never ends",
                 "https://x.example/")
    assert page.title == "Broken" and page.text.startswith("text bold")
    deep = b"<div>" * 50_000 + b"deep" + b"</div>" * 50_000
    started = time.monotonic()
    page = parse(deep, "https://x.example/")
    assert "deep" in page.text and time.monotonic() - started < 10
    huge = b"<p>" + b"coffee " * 400_000 + b"</p>"  # 2.8 MB: only the first MiB is read
    page = parse(huge, "https://x.example/")
    assert len(page.text) <= admin_site.TEXT_MAX
