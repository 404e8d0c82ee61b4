"""POST /v1/brands/{brand_id}/content-items: the strict body, every rule with its code and field path, and
proof that a refused request wrote nothing and a created draft scheduled and called nothing."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from schemas.platforms import MAIN_SETTINGS_KEYS, SETTINGS_KEYS
from tests.content.conftest import Content, direct, full_body

pytestmark = pytest.mark.anyio


async def test_create_full_draft(content: Content) -> None:
    env, c = content.env, content
    body = full_body(c)
    before = await env.row_counts()
    resp = await c.create(body)
    assert resp.status_code == 201, resp.json()
    assert "idempotency-replayed" not in resp.headers
    data = resp.json()["data"]
    item = data["content_item"]
    assert item["id"].startswith("ci_") and item["brand_id"] == c.brand_id
    assert item["name"] == "Autumn launch"  # trimmed
    assert item["label_ids"] == c.labels
    assert item["intended_integration_ids"] == body["intended_integration_ids"]
    assert item["thumbnail_media_id"] == c.media["img1"] and item["thumbnail_timestamp"] == 1.5
    assert item["copy_mode"] == "per_platform" and item["single_copy"] is None
    # copy as sent; only platforms with copy appear; a missing title is null
    assert set(item["platform_copy"]) == {"instagram", "threads", "pinterest", "google_business"}
    assert item["platform_copy"]["google_business"] == {"caption": "Open late this week", "hashtags": [],
                                                        "title": None}
    for key in SETTINGS_KEYS:
        assert key in item, key
        for name, value in body[key].items():
            assert item[key][name] == value, (key, name)
    # defaults apply to omitted settings fields
    assert item["tiktok_settings"]["agreed_to_terms"] is False and item["instagram_settings"]["trial_reel"] is None
    assert item["youtube_settings"]["notify_subscribers"] is False
    # captions and hashtags come only from copy
    assert all("caption" not in item[k] and "hashtags" not in item[k] for k in SETTINGS_KEYS)
    assert data["outcome"] == "created"
    assert data["intended_integration_ids"] == body["intended_integration_ids"]
    assert data["next_actions"] == [{"action": "preflight_content", "integration_ids": body["intended_integration_ids"]}]
    assert data["links"]["targets"] == {"href": f"/v1/brands/{c.brand_id}/targets",
                                        "required_scopes": ["integrations:read"]}
    assert data["links"]["preflight"] == {"href": f"/v1/brands/{c.brand_id}/content-items/{item['id']}/preflight",
                                          "method": "POST", "required_scopes": ["schedule:write"]}
    # a draft: one item and its label links; no Schedule, run or job; no provider call
    after = await env.row_counts()
    changed = {t: after[t] - before[t] for t in after if after[t] != before[t]}
    assert changed == {"content_items": 1, "content_item_labels": 2}
    assert env.sandbox.calls == []


async def test_minimal_draft_and_response_presence_rules(content: Content) -> None:
    item = await content.created({"name": "Just a name"})
    for key in MAIN_SETTINGS_KEYS:
        assert item[key] is None  # always present
    for key in set(SETTINGS_KEYS) - set(MAIN_SETTINGS_KEYS):
        assert key not in item  # present only for items that have them
    assert item["copy_mode"] == "single" and item["single_copy"] is None and item["platform_copy"] is None
    assert item["label_ids"] == [] and item["intended_integration_ids"] == []
    assert item["thumbnail_media_id"] is None and item["thumbnail_timestamp"] == 0
    # a platform without a thread has no thread_parts
    x = await content.created({"name": "x", "x_settings": {}, "threads_settings": {}})
    assert x["x_settings"] == {"media_ids": []} and "thread_parts" not in x["threads_settings"]
    assert "bluesky_settings" not in x


async def test_idempotent_create(content: Content) -> None:
    env, c = content.env, content
    body = {"name": "Once", "single_copy": {"caption": "hello", "hashtags": ["a"]}}
    first = await c.create(body, key="draft-1")
    assert first.status_code == 201
    again = await c.create(body, key="draft-1")
    assert again.status_code == 200 and again.headers["idempotency-replayed"] == "true"
    assert again.json()["data"] == first.json()["data"]  # same resource, outcome stays created
    # the body field is the same key
    same = await env.rest.post(c.url(), json={**body, "idempotency_key": "draft-1"}, headers=c.headers())
    assert same.status_code == 200 and same.json()["data"]["content_item"]["id"] == first.json()["data"][
        "content_item"]["id"]
    before = await env.row_counts()
    other = await c.create({**body, "name": "Twice"}, key="draft-1")
    assert other.status_code == 409 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_CONFLICT"
    assert await env.row_counts() == before


def _set(path: str, value: Any) -> Callable[[dict, Content], dict]:
    """body mutation: set a dotted path (list indexes as numbers) to value (a callable gets the fixture)."""

    def mutate(body: dict, c: Content) -> dict:
        body = copy.deepcopy(body)
        node = body
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
        node[parts[-1]] = value(c) if callable(value) else value
        return body

    return mutate


def _media(*names: str) -> Callable[[Content], list[str]]:
    return lambda c: [c.media[n] for n in names]


def _ints(*platforms: str) -> Callable[[Content], list[str]]:
    return lambda c: sorted(c.integrations[p].id for p in platforms)


BASE = {"name": "Draft"}
PER_PLATFORM = {"name": "Draft", "copy_mode": "per_platform"}

# (id, base body, mutation, status, error code, field_path, issue code)
REFUSALS: list[tuple[str, dict, Callable, int, str, str, str]] = [
    ("unknown key", BASE, _set("foo", 1), 400, "MALFORMED_REQUEST", "$.foo", "UNKNOWN_FIELD"),
    ("camelCase key", BASE, _set("copyMode", "single"), 400, "MALFORMED_REQUEST", "$.copyMode", "CAMEL_CASE_KEY"),
    ("nested camelCase key", BASE, _set("tiktok_settings.privacyLevel", "SELF_ONLY"), 400, "MALFORMED_REQUEST",
     "$.tiktok_settings.privacyLevel", "CAMEL_CASE_KEY"),
    ("caption in settings", BASE, _set("instagram_settings.caption", "hi"), 400, "MALFORMED_REQUEST",
     "$.instagram_settings.caption", "UNKNOWN_FIELD"),
    ("unknown platform copy key", PER_PLATFORM, _set("platform_copy.myspace", {"caption": "x"}), 400,
     "MALFORMED_REQUEST", "$.platform_copy.myspace", "UNKNOWN_FIELD"),
    ("missing name", {}, _set("copy_mode", "single"), 400, "MALFORMED_REQUEST", "$.name", "REQUIRED"),
    ("blank name", BASE, _set("name", "   "), 400, "MALFORMED_REQUEST", "$.name", "TOO_SHORT"),
    ("long name", BASE, _set("name", " " + "n" * 501), 400, "MALFORMED_REQUEST", "$.name", "TOO_LONG"),
    ("name not a string", BASE, _set("name", 5), 400, "MALFORMED_REQUEST", "$.name", "INVALID_VALUE"),
    ("bad copy mode", BASE, _set("copy_mode", "both"), 400, "MALFORMED_REQUEST", "$.copy_mode", "NOT_ALLOWED"),
    ("padded integration ID", BASE,
     _set("intended_integration_ids", lambda c: [" " + c.integrations["tiktok"].id]), 400, "MALFORMED_REQUEST",
     "$.intended_integration_ids[0]", "INVALID_FORMAT"),
    ("lower-case label ID", BASE, _set("label_ids", lambda c: [c.labels[0].lower()]), 400, "MALFORMED_REQUEST",
     "$.label_ids[0]", "INVALID_FORMAT"),
    ("padded media ID", BASE, _set("instagram_settings.media_ids", lambda c: [c.media["img1"] + " "]), 400,
     "MALFORMED_REQUEST", "$.instagram_settings.media_ids[0]", "INVALID_FORMAT"),
    ("padded thumbnail ID", BASE, _set("thumbnail_media_id", lambda c: "\t" + c.media["img1"]), 400,
     "MALFORMED_REQUEST", "$.thumbnail_media_id", "INVALID_FORMAT"),
    ("duplicate integration IDs", BASE,
     _set("intended_integration_ids", lambda c: [c.integrations["tiktok"].id] * 2), 400, "MALFORMED_REQUEST",
     "$.intended_integration_ids[1]", "DUPLICATE"),
    ("unsorted integration IDs", BASE,
     _set("intended_integration_ids", lambda c: _ints("tiktok", "x")(c)[::-1]), 400, "MALFORMED_REQUEST",
     "$.intended_integration_ids[1]", "NOT_ASCENDING"),
    ("duplicate label IDs", BASE, _set("label_ids", lambda c: [c.labels[0], c.labels[0]]), 400,
     "MALFORMED_REQUEST", "$.label_ids[1]", "DUPLICATE"),
    ("unsorted label IDs", BASE, _set("label_ids", lambda c: c.labels[::-1]), 400, "MALFORMED_REQUEST",
     "$.label_ids[1]", "NOT_ASCENDING"),
    ("duplicate media IDs", BASE, _set("instagram_settings.media_ids", _media("img1", "img1")), 400,
     "MALFORMED_REQUEST", "$.instagram_settings.media_ids[1]", "DUPLICATE"),
    ("21 intended integrations", BASE,
     _set("intended_integration_ids", [f"int_01J{n:023d}" for n in range(21)]), 400, "MALFORMED_REQUEST",
     "$.intended_integration_ids", "TOO_MANY_ITEMS"),
    ("51 labels", BASE, _set("label_ids", [f"lbl_01J{n:023d}" for n in range(51)]), 400, "MALFORMED_REQUEST",
     "$.label_ids", "TOO_MANY_ITEMS"),
    ("platform copy in single mode", BASE, _set("platform_copy", {"x": {"caption": "hi"}}), 400,
     "MALFORMED_REQUEST", "$.platform_copy", "NOT_ALLOWED"),
    ("single copy in per-platform mode", PER_PLATFORM, _set("single_copy", {"caption": "hi"}), 400,
     "MALFORMED_REQUEST", "$.single_copy", "NOT_ALLOWED"),
    ("hashtag with #", BASE, _set("single_copy", {"caption": "c", "hashtags": ["a", "b", "#c"]}), 400,
     "MALFORMED_REQUEST", "$.single_copy.hashtags[2]", "LEADING_HASH"),
    ("hashtag with space", PER_PLATFORM, _set("platform_copy.x", {"hashtags": ["two words"]}), 400,
     "MALFORMED_REQUEST", "$.platform_copy.x.hashtags[0]", "INVALID_FORMAT"),
    ("duplicate hashtags", BASE, _set("single_copy", {"hashtags": ["a", "a"]}), 400, "MALFORMED_REQUEST",
     "$.single_copy.hashtags[1]", "DUPLICATE"),
    ("threads copy over 500 emoji bytes", PER_PLATFORM, _set("platform_copy.threads", {"caption": "😀" * 126}), 400,
     "MALFORMED_REQUEST", "$.platform_copy.threads.caption", "TOO_LONG"),
    ("threads copy with 6 links", PER_PLATFORM,
     _set("platform_copy.threads", {"caption": " ".join(f"https://e.com/{n}" for n in range(6))}), 400,
     "MALFORMED_REQUEST", "$.platform_copy.threads.caption", "TOO_MANY_LINKS"),
    ("single copy too long for Threads", {**BASE, "threads_settings": {}},
     _set("single_copy", {"caption": "a" * 501}), 400, "MALFORMED_REQUEST", "$.single_copy.caption", "TOO_LONG"),
    ("pinterest copy over 800", PER_PLATFORM, _set("platform_copy.pinterest", {"caption": "p" * 801}), 400,
     "MALFORMED_REQUEST", "$.platform_copy.pinterest.caption", "TOO_LONG"),
    ("commercial content without types", BASE, _set("tiktok_settings", {"is_commercial_content": True}), 400,
     "MALFORMED_REQUEST", "$.tiktok_settings.commercial_types", "REQUIRED"),
    ("commercial types without commercial content", BASE, _set("tiktok_settings", {"commercial_types": ["YOUR_BRAND"]}),
     400, "MALFORMED_REQUEST", "$.tiktok_settings.commercial_types", "NOT_ALLOWED"),
    ("unknown TikTok privacy", BASE, _set("tiktok_settings", {"privacy_level": "FRIENDS"}), 400,
     "MALFORMED_REQUEST", "$.tiktok_settings.privacy_level", "NOT_ALLOWED"),
    ("unknown post type", BASE, _set("instagram_settings", {"post_type": "CAROUSEL"}), 400, "MALFORMED_REQUEST",
     "$.instagram_settings.post_type", "NOT_ALLOWED"),
    ("25 X thread parts", BASE, _set("x_settings", {"thread_parts": [{"text": "t"}] * 25}), 400,
     "MALFORMED_REQUEST", "$.x_settings.thread_parts", "TOO_MANY_ITEMS"),
    ("5 media in an X part", BASE,
     _set("x_settings", lambda c: {"thread_parts": [{"text": "t", "media_ids": _media(
         "img1", "img2", "img3", "img4", "img5")(c)}]}), 400, "MALFORMED_REQUEST",
     "$.x_settings.thread_parts[0].media_ids", "TOO_MANY_ITEMS"),
    ("empty thread", BASE, _set("bluesky_settings", {"thread_parts": []}), 400, "MALFORMED_REQUEST",
     "$.bluesky_settings.thread_parts", "TOO_FEW_ITEMS"),
    ("Bluesky part alt_text for other media", BASE,
     _set("bluesky_settings", lambda c: {"media_ids": [c.media["img1"]], "thread_parts": [
         {"text": "t", "media_ids": [c.media["img2"]], "alt_text": {c.media["img1"]: "no"}}]}), 400,
     "MALFORMED_REQUEST", "$.bluesky_settings.thread_parts[0].alt_text.{img1}", "NOT_IN_MEDIA_IDS"),
    ("Bluesky alt_text for other media", BASE,
     _set("bluesky_settings", lambda c: {"media_ids": [c.media["img1"]], "alt_text": {c.media["img2"]: "no"}}), 400,
     "MALFORMED_REQUEST", "$.bluesky_settings.alt_text.{img2}", "NOT_IN_MEDIA_IDS"),
    ("Tumblr alt_text without media", BASE, _set("tumblr_settings", lambda c: {"alt_text": {c.media["img1"]: "x"}}),
     400, "MALFORMED_REQUEST", "$.tumblr_settings.alt_text.{img1}", "NOT_IN_MEDIA_IDS"),
    ("10 Threads parts", BASE, _set("threads_settings", {"thread_parts": [{"text": "t"}] * 10}), 400,
     "MALFORMED_REQUEST", "$.threads_settings.thread_parts", "TOO_MANY_ITEMS"),
    ("media in a Threads part", BASE,
     _set("threads_settings", lambda c: {"thread_parts": [{"text": "t", "media_ids": [c.media["img1"]]}]}), 400,
     "MALFORMED_REQUEST", "$.threads_settings.thread_parts[0].media_ids", "UNKNOWN_FIELD"),
    ("Threads carousel of one", BASE,
     _set("threads_settings", lambda c: {"post_type": "TH_CAROUSEL", "media_ids": [c.media["img1"]]}), 400,
     "MALFORMED_REQUEST", "$.threads_settings.media_ids", "MEDIA_COUNT"),
    ("Threads text post with media", BASE,
     _set("threads_settings", lambda c: {"post_type": "TH_TEXT", "media_ids": [c.media["img1"]]}), 400,
     "MALFORMED_REQUEST", "$.threads_settings.media_ids", "MEDIA_COUNT_OR_NOT_ALLOWED"),
    ("Threads topic tag with #", BASE, _set("threads_settings", {"topic_tag": "#coffee"}), 400, "MALFORMED_REQUEST",
     "$.threads_settings.topic_tag", "INVALID_FORMAT"),
    ("Pin without media", BASE, _set("pinterest_settings", {"board_id": "b"}), 400, "MALFORMED_REQUEST",
     "$.pinterest_settings.media_ids", "MEDIA_COUNT"),
    ("Pin with 6 images", BASE,
     _set("pinterest_settings", (lambda c: {"media_ids": _media(
         "img1", "img2", "img3", "img4", "img5", "img6")(c)})), 400, "MALFORMED_REQUEST",
     "$.pinterest_settings.media_ids", "TOO_MANY_ITEMS"),
    ("negative thumbnail timestamp", BASE, _set("thumbnail_timestamp", -0.5), 400, "MALFORMED_REQUEST",
     "$.thumbnail_timestamp", "OUT_OF_RANGE"),
    ("thumbnail timestamp as text", BASE, _set("thumbnail_timestamp", "1"), 400, "MALFORMED_REQUEST",
     "$.thumbnail_timestamp", "INVALID_VALUE"),
    # data-dependent: 422
    ("integration of another brand", BASE,
     _set("intended_integration_ids", lambda c: [c.other_brand["integration"]]), 422, "DOMAIN_VALIDATION_FAILED",
     "$.intended_integration_ids[0]", "NOT_FOUND"),
    ("unknown integration", BASE, _set("intended_integration_ids", ["int_01J00000000000000000000000"]), 422,
     "DOMAIN_VALIDATION_FAILED", "$.intended_integration_ids[0]", "NOT_FOUND"),
    ("label of another brand", BASE, _set("label_ids", lambda c: [c.other_brand["label"]]), 422,
     "DOMAIN_VALIDATION_FAILED", "$.label_ids[0]", "NOT_FOUND"),
    ("media still processing", BASE, _set("instagram_settings.media_ids", _media("img1", "processing")), 422,
     "DOMAIN_VALIDATION_FAILED", "$.instagram_settings.media_ids[1]", "MEDIA_NOT_READY"),
    ("failed media", BASE, _set("facebook_settings.media_ids", _media("failed")), 422, "DOMAIN_VALIDATION_FAILED",
     "$.facebook_settings.media_ids[0]", "MEDIA_FAILED"),
    ("media of another brand", BASE, _set("instagram_settings.media_ids", lambda c: [c.other_brand["media"]]), 422,
     "DOMAIN_VALIDATION_FAILED", "$.instagram_settings.media_ids[0]", "NOT_FOUND"),
    ("media in a thread part not ready", BASE,
     _set("x_settings", lambda c: {"thread_parts": [{"text": "t", "media_ids": [c.media["processing"]]}]}), 422,
     "DOMAIN_VALIDATION_FAILED", "$.x_settings.thread_parts[0].media_ids[0]", "MEDIA_NOT_READY"),
    ("thumbnail of another brand", BASE, _set("thumbnail_media_id", lambda c: c.other_brand["media"]), 422,
     "DOMAIN_VALIDATION_FAILED", "$.thumbnail_media_id", "NOT_FOUND"),
    ("thumbnail not ready", BASE, _set("thumbnail_media_id", lambda c: c.media["processing"]), 422,
     "DOMAIN_VALIDATION_FAILED", "$.thumbnail_media_id", "MEDIA_NOT_READY"),
    ("Pin with a video and an image", BASE,
     _set("pinterest_settings", lambda c: {"media_ids": _media("vid", "img1")(c), "post_type": "PIN_VIDEO"}), 422,
     "DOMAIN_VALIDATION_FAILED", "$.pinterest_settings.media_ids", "MEDIA_KIND"),
    ("Pin with two videos", BASE,
     _set("pinterest_settings", lambda c: {"media_ids": _media("vid", "vid2")(c), "post_type": "PIN_VIDEO"}), 422,
     "DOMAIN_VALIDATION_FAILED", "$.pinterest_settings.media_ids", "MEDIA_KIND"),
    ("video Pin typed as image", BASE,
     _set("pinterest_settings", lambda c: {"media_ids": _media("vid")(c), "post_type": "PIN_IMAGE"}), 422,
     "DOMAIN_VALIDATION_FAILED", "$.pinterest_settings.post_type", "POST_TYPE_MISMATCH"),
    ("Threads image post with a video", BASE,
     _set("threads_settings", lambda c: {"post_type": "TH_IMAGE", "media_ids": _media("vid")(c)}), 422,
     "DOMAIN_VALIDATION_FAILED", "$.threads_settings.media_ids[0]", "MEDIA_KIND"),
]


def _expand(path: str, c: Content) -> str:
    for name, mid in c.media.items():
        path = path.replace("{" + name + "}", mid)
    return path


@pytest.mark.parametrize(("base", "mutate", "status", "code", "path", "issue_code"),
                         [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
async def test_refusals_write_nothing(content: Content, base, mutate, status, code, path, issue_code) -> None:
    env, c = content.env, content
    body = mutate(copy.deepcopy(base), c)
    before = await env.row_counts()
    resp = await c.create(body, key="refused")
    err = resp.json()["error"]
    assert resp.status_code == status, err
    assert err["code"] == code, err
    expected_path = _expand(path, c)
    matching = [i for i in err["issues"] if i["field_path"] == expected_path]
    assert matching, (expected_path, err["issues"])
    if issue_code == "MEDIA_COUNT_OR_NOT_ALLOWED":
        assert matching[0]["code"] == "NOT_ALLOWED"
    else:
        assert matching[0]["code"] == issue_code, matching
    assert await env.row_counts() == before
    assert env.sandbox.calls == []
    # a refused request does not use up the idempotency key
    ok = await c.create({"name": "fixed"}, key="refused")
    assert ok.status_code == 201


async def test_boundaries_are_accepted(content: Content) -> None:
    c = content
    m = c.media
    ok = [
        {"name": "n" * 500},
        {"name": "x", "copy_mode": "per_platform", "platform_copy": {"threads": {"caption": "😀" * 125},
                                                                     "pinterest": {"caption": "p" * 800}}},
        {"name": "x", "copy_mode": "per_platform",
         "platform_copy": {"threads": {"caption": " ".join(f"https://e.com/{n}" for n in range(5))}}},
        {"name": "x", "x_settings": {"thread_parts": [{"text": "t", "media_ids": [m["img1"], m["img2"], m["img3"],
                                                                                    m["img4"]]}] * 24}},
        {"name": "x", "threads_settings": {"thread_parts": [{"text": "t"}] * 9}},
        {"name": "x", "threads_settings": {"post_type": "TH_IMAGE", "media_ids": [m["img1"]]}},
        {"name": "x", "threads_settings": {"post_type": "TH_VIDEO", "media_ids": [m["vid"]]}},
        {"name": "x", "pinterest_settings": {"media_ids": [m["vid"]], "post_type": "PIN_VIDEO"}},
        {"name": "x", "pinterest_settings": {"media_ids": [m[f"img{n}"] for n in range(1, 6)]}},
        {"name": "x", "intended_integration_ids": sorted(i.id for i in c.integrations.values())},
        {"name": "x", "thumbnail_timestamp": 0},
        {"name": "x", "tiktok_settings": {"is_commercial_content": True, "commercial_types": ["BRANDED_CONTENT",
                                                                                           "YOUR_BRAND"]}},
    ]
    for body in ok:
        resp = await c.create(body)
        assert resp.status_code == 201, (body, resp.json())


async def test_many_issues_are_reported_together(content: Content) -> None:
    c = content
    resp = await c.create({"name": "x", "single_copy": {"hashtags": ["#a", "#b"]}, "label_ids": [c.labels[1],
                                                                                              c.labels[0]]})
    paths = {i["field_path"] for i in resp.json()["error"]["issues"]}
    assert paths == {"$.single_copy.hashtags[0]", "$.single_copy.hashtags[1]", "$.label_ids[1]"}


async def test_direct_dispatch_refuses_the_same_way(content: Content) -> None:
    """The MCP adapter's path (flat arguments) gets the same code and field paths as REST."""
    env, c = content.env, content
    out = await direct(env, "create_content_item", c.secret, {"brand_id": c.brand_id, "name": "x",
                                                              "copyMode": "single", "label_ids": c.labels[::-1]})
    assert out.status == 400
    assert {i["field_path"] for i in out.body["error"]["issues"]} == {"$.copyMode", "$.label_ids[1]"}
    out = await direct(env, "create_content_item", c.secret, {"brand_id": c.brand_id, "name": "x",
                                                              "label_ids": [c.other_brand["label"]]})
    assert out.status == 422 and out.body["error"]["issues"][0]["field_path"] == "$.label_ids[0]"


async def test_other_brand_and_scope(content: Content) -> None:
    env, c = content.env, content
    resp = await env.rest.post(c.url(), json={"name": "x"}, headers=env.auth(c.world.key_b_only))
    assert resp.status_code == 404
    reader = await env.key(c.world.ws, scopes=["posts:read"], name="reader")
    resp = await env.rest.post(c.url(), json={"name": "x"}, headers=env.auth(reader))
    assert resp.status_code == 403 and resp.json()["error"]["details"]["required_scopes"] == ["posts:write"]


async def test_created_by_is_the_callers_user(content: Content) -> None:
    env, c = content.env, content
    resp = await c.create({"name": "older"}, variant="older")
    assert resp.status_code == 201
    item = resp.json()["data"]
    assert item["created_by"] == env.key_row(c.secret).user_id
