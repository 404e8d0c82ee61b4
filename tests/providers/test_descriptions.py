"""The request validator of the contract suite (tests/providers/descriptions.py) refuses what each network's own
description refuses, and its autouse hook sees every request respx answers: a request with a field, an enum
value, a type, a path or a method the description does not have fails."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from providers.versions import GRAPH
from tests.providers.descriptions import Captured, problems


def _req(method: str, url: str, **kwargs) -> httpx.Request:
    return httpx.Request(method, url, **kwargs)


PIN = {"board_id": "549755885175", "media_source": {"source_type": "image_url", "url": "https://m.test/a.png"}}


@pytest.mark.parametrize(("request_", "words"), [
    (_req("POST", "https://api.x.com/2/tweets", json={"text": "hi", "colour": "red"}), "body.colour is not in"),
    (_req("POST", "https://api.x.com/2/media/upload/initialize", json={"media_type": "image/png", "total_bytes": 9,
                                                                      "media_category": "tweet_gif_image"}),
     "is not one of"),
    (_req("GET", "https://api.x.com/2/users/1/tweets?max_results=500"), "500 is greater than the maximum"),
    (_req("GET", "https://api.x.com/2/users/1/tweets?tweet.fields=created_at"), "'tweet.fields' is not in"),
    (_req("PATCH", "https://api.x.com/2/tweets"), "is not an operation of the x description"),
    (_req("POST", "https://api.pinterest.com/v5/pins", json={**PIN, "board_id": 549755885175}), "is not of type"),
    (_req("POST", "https://api.pinterest.com/v5/pins", json={**PIN, "media_source": {"source_type": "image_url"}}),
     "'url' is a required property"),
    (_req("POST", "https://api.pinterest.com/v5/oauth/token",
          data={"grant_type": "authorization_code", "code": "c", "redirect_uri": "https://a.test/cb",
                "code_verifier": "v"}), "body.code_verifier is not in"),
    (_req("POST", "https://discord.com/api/webhooks/1/tok", json={"content": "x"}), "not under the description"),
    (_req("POST", "https://discord.com/api/v10/webhooks/1/tok?wait=true", files={"files[0]": ("a.png", b"x")},
          data={"payload_json": json.dumps({"content": "x", "attachments": [{"id": 0}]})}), "not valid under any"),
    (_req("POST", "https://youtube.googleapis.com/upload/youtube/v3/videos?uploadType=resumable&part=snippet",
          json={"snippet": {"title": "t"}, "status": {"privacyStatus": "friends"}}), "'friends' is not one of"),
    (_req("GET", "https://youtube.googleapis.com/youtube/v3/videos?id=x"), "required query parameter 'part'"),
    (_req("GET", "https://mybusinessbusinessinformation.googleapis.com/v1/accounts/1/locations?pageSize=x"),
     "is not of type 'integer'"),
    (_req("POST", f"https://graph.facebook.com/{GRAPH.version}/1784/media", data={"image_url": "https://m.test/a.png",
                                                                     "caption": "x", "is_carousel_item": "maybe"}),
     "'is_carousel_item'='maybe' is not a bool"),
    (_req("POST", f"https://graph.facebook.com/{GRAPH.version}/104/video_reels", data={"upload_phase": "begin"}),
     "'upload_phase'='begin' is not a upload_phase_enum"),
    (_req("POST", f"https://graph.facebook.com/{GRAPH.version}/104/feed", data={"message": "x", "colour": "red"}),
     "'colour' is not a parameter of Page.create_feed"),
    (_req("GET", f"https://graph.facebook.com/{GRAPH.version}/1784/media?fields=id,likes_total"), "'likes_total' is not a field"),
    (_req("GET", "https://unknown-network.test/x"), "neither described"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_descriptions_refuse_a_bad_shape(request_: httpx.Request, words: str) -> None:
    found = problems(request_)
    assert any(words in p for p in found), found


@pytest.mark.parametrize("request_", [
    _req("POST", "https://api.x.com/2/tweets", json={"text": "hi", "reply": {"in_reply_to_tweet_id": "1"}}),
    _req("POST", "https://api.pinterest.com/v5/pins", json=PIN),
    _req("POST", "https://api.pinterest.com/v5/oauth/token", data={"grant_type": "refresh_token",
                                                                  "refresh_token": "r"}),
    _req("POST", "https://discord.com/api/v10/webhooks/1/tok?wait=true", files={"files[0]": ("a.png", b"x")},
         data={"payload_json": json.dumps({"content": "x", "attachments": [{"id": "0", "filename": "a.png"}]})}),
    _req("POST", "https://youtube.googleapis.com/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status",
         json={"snippet": {"title": "t"}, "status": {"privacyStatus": "unlisted"}}),
    _req("POST", f"https://graph.facebook.com/{GRAPH.version}/104/feed", data={"message": "x", "link": "https://a.test"}),
    _req("POST", f"https://graph.facebook.com/{GRAPH.version}/1784/media", data={"media_type": "CAROUSEL", "caption": "x",
                                                                    "children": "1,2"}),
], ids=lambda r: f"{r.method} {r.url.path}")
def test_the_descriptions_accept_the_documented_shape(request_: httpx.Request) -> None:
    assert problems(request_) == []


async def _send_bad_pin() -> None:
    with respx.mock(assert_all_called=False) as router:
        router.post("https://api.pinterest.com/v5/pins").respond(201, json={"id": "1"})
        async with httpx.AsyncClient() as client:
            await client.post("https://api.pinterest.com/v5/pins", json={**PIN, "note": "not a PinCreate field"})


@pytest.mark.anyio
async def test_the_autouse_hook_fails_a_test_whose_request_the_description_refuses(described_requests) -> None:
    """What every contract test gets: the request was answered (respx does not judge it), and the hook fails the
    test at its end. Checked here by hand so this test can show the failure and then pass."""
    await _send_bad_pin()
    assert len(described_requests.requests) == 1
    with pytest.raises(AssertionError, match=r"POST https://api.pinterest.com/v5/pins: .*body.note is not in"):
        described_requests.check()
    assert described_requests.requests == []  # nothing left for the teardown check


def test_an_unclassified_host_fails() -> None:
    captured = Captured()
    captured.requests.append(_req("GET", "https://new-network.test/v1/me"))
    with pytest.raises(AssertionError, match="neither described"):
        captured.check()
