"""The review console over HTTP (ASGI): the Review queue, the post as it will appear (preview cards whose counts
and blockers are preflight's), reject with a reason, edit through move-to-draft, and a failed run's outcome with
retry and permalinks. The browser flow is in tests/console/test_browser.py."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest

from schemas.ids import new_id
from schemas.time import iso
from tests.console.support import X_POST, csrf_of, held_schedule, make_user, signed_in
from tests.publishing.support import item_row, media_row, seed_schedule, set_provider_state
from tools.publishing import worker as publishing
from tools.services.redaction import SAFE_FAILURES

pytestmark = pytest.mark.anyio

AT = "2026-03-05T10:30:00.000Z"  # three days after tests.support.START
LATER = "2026-03-06T08:00:00.000Z"


async def _world(env):
    ws = await env.workspace("Workspace A")
    brand = await env.brand(ws, "Brand A")
    x = await env.integration(brand, "x", display_name="Acme on X")
    key = await env.key(ws, role="admin")
    await make_user(env, ws, "admin@a.example", "admin")
    await make_user(env, ws, "member@a.example", "member")
    return ws, brand, x, key


def cards_of(page: str) -> dict[str, str]:
    """platform -> the HTML of its preview card."""
    return {m.group(1): m.group(0) for m in re.finditer(
        r'<article class="pcard pcard-(\w+).*?</article>', page, re.S)}


def counts_of(card: str) -> list[tuple[int, int, str]]:
    return [(int(n), int(mx), how) for n, mx, how in re.findall(
        r'<span class="n">(\d+)</span> / (\d+) ([\w ]+)</p>', card)]


async def test_review_lists_held_posts_across_brands_soonest_first_with_a_count(env) -> None:
    ws, brand, x, key = await _world(env)
    other = await env.brand(ws, "Brand B")
    x_b = await env.integration(other, "x", display_name="B on X")
    late = await held_schedule(env, brand, key, x.id, LATER)
    resp = await env.rest.post(f"/v1/brands/{other.id}/content-items", json={**X_POST, "name": "B post"},
                               headers=env.auth(key))
    soon_b = (await env.rest.post(f"/v1/brands/{other.id}/schedules", headers=env.auth(key, Idempotency_Key="b1"),
                                  json={"content_item_id": resp.json()["data"]["content_item"]["id"],
                                        "integration_ids": [x_b.id], "scheduled_at": AT,
                                        "approval_status": "pending_review"})).json()["data"]["schedule"]["id"]
    admin = await signed_in(env, "admin@a.example")
    page = (await admin.get("/console/review")).text
    assert '<span class="count" aria-label="2 held">2</span>' in page  # in the navigation of every page
    assert '<span class="count" aria-label="2 held">2</span>' in (await admin.get("/console/workspace")).text
    assert page.index(f"/schedules/{soon_b}") < page.index(f"/schedules/{late}")  # soonest due first
    assert "Acme on X" in page and "B on X" in page and "Fresh roast today" in page
    assert "Thu 05 Mar 2026, 10:30 UTC" in page and 'title="2026-03-05 10:30 UTC"' in page
    assert "the API key “test key”" in page  # who created it
    only_b = (await admin.get(f"/console/review?brand={other.id}")).text
    assert f"/schedules/{soon_b}" in only_b and f"/schedules/{late}" not in only_b
    assert (await admin.get("/console/review?brand=brd_nope")).status_code == 404
    # approving from the queue comes back to it, one fewer
    form = {"csrf": csrf_of(page), "idempotency_key": "console-q1", "back": "review"}
    done = await admin.post(f"/console/brands/{other.id}/schedules/{soon_b}/approve", data=form)
    assert done.status_code == 303 and done.headers["location"] == "/console/review?notice=approved"
    after = (await admin.get("/console/review")).text
    assert f"/schedules/{soon_b}" not in after and '<span class="count" aria-label="1 held">1</span>' in after


async def test_a_member_reviews_but_cannot_approve(env) -> None:
    _, brand, x, key = await _world(env)
    sid = await held_schedule(env, brand, key, x.id, AT)
    member = await signed_in(env, "member@a.example")
    page = (await member.get("/console/review")).text
    assert f"/schedules/{sid}" in page and "Fresh roast today" in page
    assert "/approve" not in page and "Approving needs the publish authority" in page and "/reject" in page
    refused = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/approve",
                                data={"csrf": csrf_of(page), "idempotency_key": "console-m1", "back": "review"})
    assert refused.status_code == 403 and "INSUFFICIENT_SCOPE" in refused.text
    api = await env.rest.get(f"/v1/brands/{brand.id}/schedules/{sid}", headers=env.auth(key))
    assert api.json()["data"]["approval_status"] == "pending_review"


async def test_counts_and_blockers_shown_are_preflights(env) -> None:
    """A held post whose draft no longer passes (written directly, as after a rules change): each card shows the
    count preflight counted, the network's way, and each of preflight's blockers next to its field."""
    _ws, brand, x, key = await _world(env)
    bsky = await env.integration(brand, "bluesky", display_name="Acme on Bluesky")
    threads = await env.integration(brand, "threads", display_name="Acme on Threads")
    x_caption = "Café ☕ 日本語 https://example.com/a/very/long/path/that/counts/as/23 " + "a" * 250
    x_part = "Part two 日本 https://example.org"  # 9 + 4 + 1 + 23 weighted
    bsky_caption = "👨‍👩‍👧 family é"  # 1 + 9 graphemes
    bsky_part = "b" * 301
    th_caption = "👍 ok"  # the emoji counts as its 4 UTF-8 bytes
    now = env.clock.now()
    async with env.db.session(write=True) as s:
        item = item_row(brand, now, name="Counting", copy_mode="per_platform", settings={
            "x_settings": {"thread_parts": [{"text": x_part}]},
            "bluesky_settings": {"thread_parts": [{"text": bsky_part}]},
            "threads_settings": {}},
            platform_copy={"x": {"caption": x_caption, "hashtags": [], "title": None},
                           "bluesky": {"caption": bsky_caption, "hashtags": [], "title": None},
                           "threads": {"caption": th_caption, "hashtags": [], "title": None}})
        s.add(item)
    ids = sorted([x.id, bsky.id, threads.id])
    sid = await seed_schedule(env.db, brand, item.id, ids, now, at=now + timedelta(days=1),
                              approval_status="pending_review", key_id=env.key_row(key).id)
    preflight = (await env.rest.post(
        f"/v1/brands/{brand.id}/content-items/{item.id}/preflight", headers=env.auth(key),
        json={"integration_ids": ids, "scheduled_at": iso(now + timedelta(days=1)),
              "approval_status": "approved"})).json()["data"]
    blockers = preflight["blockers"]
    assert {b["code"] for b in blockers} == {"CAPTION_TOO_LONG", "THREAD_PART_TOO_LONG"}
    admin = await signed_in(env, "admin@a.example")
    page = (await admin.get(f"/console/brands/{brand.id}/schedules/{sid}")).text
    cards = cards_of(page)
    platform_of = {x.id: "x", bsky.id: "bluesky", threads.id: "threads"}
    for b in blockers:  # each blocker, in preflight's words, in the card of its account, once
        card = cards[platform_of[b["integration_id"]]]
        assert card.count(f'<li class="blocker">{html.escape(b["message"])}') == 1, b
        counted_match = re.search(r" is (\d+) ", b["message"])
        assert counted_match is not None
        counted = int(counted_match.group(1))
        assert counted in [n for n, _, _ in counts_of(card)]  # the number preflight counted, shown on the card
    assert page.count('<li class="blocker">') == len(blockers)
    x_counts = counts_of(cards["x"])
    assert x_counts[0][1:] == (280, "x weighted") and x_counts[0][0] > 280
    assert x_counts[1] == (37, 280, "x weighted")  # the thread part: 10 Latin, CJK 2 each, the link 23
    assert counts_of(cards["bluesky"])[0] == (10, 300, "graphemes")
    assert counts_of(cards["bluesky"])[1] == (301, 300, "graphemes")
    assert counts_of(cards["threads"])[0] == (7, 500, "threads")
    assert '<ol class="chain">' in cards["x"] and cards["x"].count('<li class="part">') == 2  # a thread as a chain
    assert '<a class="plink" href="https://example.org"' in cards["x"]


async def test_markup_in_names_captions_and_accounts_renders_as_text(env) -> None:
    _ws, brand, _, key = await _world(env)
    evil = '<img src=x onerror="alert(1)">'
    bsky = await env.integration(brand, "bluesky", display_name=f"Acme {evil}")
    item = (await env.rest.post(f"/v1/brands/{brand.id}/content-items", headers=env.auth(key), json={
        "name": f"Launch {evil}", "copy_mode": "single", "bluesky_settings": {},
        "single_copy": {"caption": f"Hello <script>alert(2)</script> {evil} #coffee", "hashtags": [],
                        "title": None}})).json()["data"]["content_item"]["id"]
    resp = await env.rest.post(f"/v1/brands/{brand.id}/schedules", headers=env.auth(key, Idempotency_Key="e1"),
                               json={"content_item_id": item, "integration_ids": [bsky.id], "scheduled_at": AT,
                                     "approval_status": "pending_review"})
    sid = resp.json()["data"]["schedule"]["id"]
    admin = await signed_in(env, "admin@a.example")
    for path in ["/console/review", f"/console/brands/{brand.id}/schedules/{sid}"]:
        page = (await admin.get(path)).text
        assert "<script>alert(2)" not in page and "<img src=x" not in page, path
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page and "Acme &lt;img src=x" in page, path
        assert "Launch &lt;img" in page, path
        card = cards_of(page)["bluesky"]
        assert "&lt;script&gt;" in card and '<span class="phashtag">#coffee</span>' in card


async def test_edit_moves_the_held_post_to_drafts_and_opens_the_composer(env) -> None:
    _, brand, x, key = await _world(env)
    sid = await held_schedule(env, brand, key, x.id, AT)
    item = (await env.rest.get(f"/v1/brands/{brand.id}/schedules/{sid}", headers=env.auth(key))).json()["data"][
        "content_item_id"]
    admin = await signed_in(env, "admin@a.example")
    page = (await admin.get(f"/console/brands/{brand.id}/schedules/{sid}")).text
    resp = await admin.post(f"/console/brands/{brand.id}/schedules/{sid}/edit",
                            data={"csrf": csrf_of(page), "idempotency_key": "console-e1"})
    assert resp.status_code == 303
    assert resp.headers["location"] == (f"/console/brands/{brand.id}/compose?content_item_id={item}"
                                        "&at=2026-03-05T10%3A30&notice=moved")  # the old time comes along
    gone = await env.rest.get(f"/v1/brands/{brand.id}/schedules/{sid}", headers=env.auth(key))
    assert gone.status_code == 404
    # the draft is editable again through the same route as REST (the composer's)
    edit = await env.rest.patch(f"/v1/brands/{brand.id}/content-items/{item}", headers=env.auth(key),
                                json={"name": "Edited"})
    assert edit.status_code == 200, edit.text


async def test_a_partly_failed_run_says_what_happened_with_retry_and_permalinks(env) -> None:
    _, brand, x, key = await _world(env)
    bsky = await env.integration(brand, "bluesky", display_name="Acme on Bluesky")
    item = (await env.rest.post(f"/v1/brands/{brand.id}/content-items", headers=env.auth(key), json={
        **X_POST, "bluesky_settings": {}})).json()["data"]["content_item"]["id"]
    ids = sorted([x.id, bsky.id])
    sid = (await env.rest.post(f"/v1/brands/{brand.id}/schedules", headers=env.auth(key, Idempotency_Key="f1"),
                               json={"content_item_id": item, "integration_ids": ids, "scheduled_at": AT,
                                     "approval_status": "approved"})).json()["data"]["schedule"]["id"]
    async with env.db.session(write=True) as s:
        await set_provider_state(s, x.id, {"faults": {"publish": "unavailable"}})
    env.clock.advance(days=3, hours=1, minutes=31)
    for _ in range(publishing.MAX_ATTEMPTS):
        await publishing.publish_due(env.rt, "w1")
        env.clock.advance(hours=1)
    state = (await env.rest.get(f"/v1/brands/{brand.id}/schedules/{sid}", headers=env.auth(key))).json()["data"]
    assert state["status"] == "partially_published"
    member = await signed_in(env, "member@a.example")
    page = (await member.get(f"/console/brands/{brand.id}/schedules/{sid}")).text
    assert "What happened" in page and html.escape(SAFE_FAILURES["unavailable"][0]) in page
    assert "Preflight (as if approved now)" not in page  # the run has executed
    row_match = re.search(r"<tr>\s*<td>Acme on Bluesky.*?</tr>", page, re.S)
    assert row_match is not None
    row = row_match.group(0)
    assert 'href="https://' in row and "open post" in row  # the permalink of what did publish
    assert "Retry" in page and "held for review" in page  # a member's retry waits for review
    retried = await member.post(f"/console/brands/{brand.id}/schedules/{sid}/retry", data={
        "csrf": csrf_of(page), "idempotency_key": "console-retry-1", "scheduled_at": "2026-03-09T12:00"})
    assert retried.status_code == 303 and retried.headers["location"].endswith("notice=retried")
    new_id = retried.headers["location"].split("/schedules/")[1].split("?")[0]
    new = (await env.rest.get(f"/v1/brands/{brand.id}/schedules/{new_id}", headers=env.auth(key))).json()["data"]
    assert new["integration_ids"] == [x.id] and new["approval_status"] == "pending_review"
    assert new["content_item_id"] == item and new["scheduled_at"] == "2026-03-09T12:00:00.000Z"
    bad = await member.post(f"/console/brands/{brand.id}/schedules/{new_id}/retry", data={
        "csrf": csrf_of(page), "scheduled_at": "2026-03-09T12:00"})
    assert bad.status_code == 409  # nothing ran: nothing to retry


async def test_media_shows_as_thumbnails_with_what_each_network_does_with_it(env) -> None:
    _, brand, x, key = await _world(env)
    insta = await env.integration(brand, "instagram", display_name="Acme on Instagram")
    now = env.clock.now()
    async with env.db.session(write=True) as s:
        fits, wide, video = media_row(brand, now), media_row(brand, now), media_row(brand, now, kind="video")
        wide.width, wide.height = 1080, 400  # 2.7:1, wider than Instagram's 1.91:1
        video.width, video.height = 1280, 720
        for m in (fits, wide, video):
            m.thumbnail_large_id = new_id("ast")
        s.add_all([fits, wide, video])
        item = item_row(brand, now, name="Media", settings={
            "instagram_settings": {"media_ids": [fits.id, wide.id], "post_type": "GRID_POST"},
            "x_settings": {"media_ids": [video.id]}})
        s.add(item)
    sid = await seed_schedule(env.db, brand, item.id, sorted([x.id, insta.id]), now, at=now + timedelta(days=1),
                              approval_status="pending_review", key_id=env.key_row(key).id)
    admin = await signed_in(env, "admin@a.example")
    page = await admin.get(f"/console/brands/{brand.id}/schedules/{sid}")
    cards = cards_of(page.text)
    media_url = env.rt.settings.resolved_media_url
    assert f'<img src="{media_url}/assets/{fits.thumbnail_large_id}"' in cards["instagram"]
    assert "Instagram takes it as it is (1080×1350)." in cards["instagram"]
    refused_match = re.search(r'<figure class="refused">.*?</figure>', cards["instagram"], re.S)
    assert refused_match is not None
    refused = refused_match.group(0)
    assert wide.thumbnail_large_id is not None and wide.thumbnail_large_id in refused and "Instagram refuses it as it is." in refused
    assert "padding to 1080×566 (29% border)" in refused and "No centre crop: " in refused  # repair options
    assert "aspect ratio is 1080:400" in refused  # the blocker, next to the file it concerns
    assert f"{video.thumbnail_large_id}" in cards["x"] and "(poster frame)" in cards["x"]
    assert "X takes it as it is (1280×720)." in cards["x"]
    assert "img-src 'self'" in page.headers["content-security-policy"]


async def test_thumbnails_on_a_media_host_of_their_own_are_allowed_by_the_pages_csp(env) -> None:
    from types import SimpleNamespace

    from server.console.pages.shared import Console

    def csp(**settings: str) -> str:
        rt = SimpleNamespace(settings=env.rt.settings.model_copy(update=settings), clock=env.clock)
        return Console(rt, None).media_headers().get("Content-Security-Policy", "same")  # pyright: ignore[reportArgumentType]  # a stand-in: media_headers reads only settings

    assert csp() == "same"  # media under the public URL: 'self' covers it
    assert "img-src 'self' https://cdn.example;" in csp(media_url="https://cdn.example/m")
    assert "default-src 'none'" in csp(media_url="https://cdn.example/m")
