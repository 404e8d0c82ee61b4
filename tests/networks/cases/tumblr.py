"""The Tumblr contract case. Facts from the Tumblr API v2 reference (https://www.tumblr.com/docs/en/api/v2:
"Create/Reblog a Post (Neue Post Format)" `POST /v2/blog/{blog-identifier}/posts` with `content`, `tags` (a
comma-separated string) and `state`, answered 201 `{"meta", "response": {"id"}}`; "/posts" `GET
/v2/blog/{blog-identifier}/posts?npf=true` → `response.posts[]` with `id_string`, `timestamp` and NPF `content`;
OAuth2 `POST /v2/oauth2/token` with `grant_type=refresh_token`, `client_id`, `client_secret`) and the NPF
specification (https://www.tumblr.com/docs/npf).

NPF_BLOCKS below is transcribed from the NPF specification's tables (each content block type's required
properties; a media object requires `url`), and every request's `content` is validated against it."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

import httpx
import respx

from providers.base import Account, PostRequest
from providers.tumblr import TumblrProvider
from tests.networks.contract import image

API = "https://tumblr.test"
BLOG = "t:roastery-uuid-0001"
TOKEN = "tumblr-access-token-SECRET"
REFRESH = "tumblr-refresh-token-SECRET"
CLIENT_SECRET = "tumblr-client-secret-SECRET"
POST_ID = "7380000000000000001"

# NPF content block type -> (required, allowed) properties.
NPF_BLOCKS = {
    "text": ({"type", "text"}, {"type", "text", "subtype", "indent_level", "formatting"}),
    "image": ({"type", "media"}, {"type", "media", "alt_text", "caption", "colors", "feedback_token", "attribution"}),
    "link": ({"type", "url"}, {"type", "url", "title", "description", "author", "site_name", "display_url",
                               "poster"}),
    "video": ({"type"}, {"type", "url", "media", "provider", "embed_html", "embed_iframe", "poster"}),
}
TEXT_SUBTYPES = {"heading1", "heading2", "quirky", "quote", "indented", "chat", "ordered-list-item",
                 "unordered-list-item"}


def valid_npf(content: Any) -> None:
    assert isinstance(content, list) and content
    for block in content:
        required, allowed = NPF_BLOCKS[block["type"]]
        assert required <= set(block) <= allowed, block
        if block["type"] == "text" and "subtype" in block:
            assert block["subtype"] in TEXT_SUBTYPES
        media = block.get("media")
        for obj in media if isinstance(media, list) else [media] if media else []:
            assert isinstance(obj.get("url"), str), obj  # a media object requires url
        if block["type"] == "video":
            assert "url" in block or "media" in block


def _json(request: httpx.Request) -> Any:
    return json.loads(request.content)


class TumblrCase:
    platform = "tumblr"
    provider_name = "tumblr"
    supports = {"text", "media"}
    secrets = [TOKEN, REFRESH, CLIENT_SECRET]
    processed_before_write = True
    text_kind = "text"

    def provider(self) -> TumblrProvider:
        return TumblrProvider(api_url=API)

    def account(self) -> Account:
        return Account(integration_id="int_tb", platform="tumblr", status="connected", provider_account_id=BLOG,
                       state={"username": "roastery"},
                       credentials={"access_token": TOKEN, "refresh_token": REFRESH, "client_id": "tb-consumer",
                                    "client_secret": CLIENT_SECRET, "expires_at": "2026-01-01T00:00:00Z"})

    def post(self, kind: str) -> PostRequest:
        return PostRequest(platform="tumblr", post_type="TB_PHOTO" if kind == "media" else "TB_TEXT",
                           text="Spring roast is here #coffee", title="Spring roast",
                           media=[image()] if kind == "media" else [], idempotency_token="tok_1",
                           settings={"title": "Spring roast", "tags": ["coffee", "spring roast"]})

    async def draft_settings(self, env: Any, flow: Any) -> dict[str, Any]:
        return {"post_type": "TB_TEXT", "title": "Spring roast", "tags": ["coffee", "spring roast"]}

    def mock_publish(self, router: respx.MockRouter, kind: str, *, processing: str = "ok") -> None:
        router.post(f"{API}/v2/blog/{BLOG}/posts", name="create").mock(return_value=httpx.Response(201, json={
            "meta": {"status": 201, "msg": "Created"},
            "response": {"id": POST_ID, "state": "published", "display_text": "Posted to roastery"}}))

    def check_publish(self, router: respx.MockRouter, kind: str, post: PostRequest, result: Any) -> None:
        request = router.routes["create"].calls[0].request
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["content-type"] == "application/json"
        body = _json(request)
        valid_npf(body["content"])
        texts: list[dict[str, Any]] = [{"type": "text", "subtype": "heading1", "text": "Spring roast"},
                                       {"type": "text", "text": post.text}]
        if kind == "media":
            m = post.media[0]
            texts.append({"type": "image", "media": [{"url": m["url"], "type": "image/png", "width": 1, "height": 1}]})
        assert body == {"content": texts, "state": "published", "tags": "coffee,spring roast"}
        assert result.publish_id == POST_ID and result.permalink_url == self.permalink(POST_ID)

    def published_id(self) -> str:
        return POST_ID

    def permalink(self, post_id: str) -> str:
        return f"https://www.tumblr.com/roastery/{post_id}"

    def first_write(self) -> str:
        return "create"

    def mock_recent(self, router: respx.MockRouter, post: PostRequest, *, present: bool) -> None:
        def item(post_id: str, timestamp: int, text: str) -> dict[str, Any]:
            return {"id": int(post_id), "id_string": post_id, "timestamp": timestamp, "type": "blocks",
                    "content": [{"type": "text", "subtype": "heading1", "text": "Spring roast"},
                                {"type": "text", "text": text}], "layout": []}
        posts = [item("7379999999999999998", 1796083320, "Another roast"),
                 item("7000000000000000001", 1577836800, post.text)]  # the same post in 2020, before the run
        if present:
            posts.insert(0, item("7380000000000000042", 1796083260, post.text))
        router.get(f"{API}/v2/blog/{BLOG}/posts", name="recent").mock(return_value=httpx.Response(200, json={
            "meta": {"status": 200, "msg": "OK"}, "response": {"posts": posts, "total_posts": len(posts)}}))

    def check_recent(self, router: respx.MockRouter) -> None:
        request = router.routes["recent"].calls[0].request
        assert parse_qs(request.url.query.decode()) == {"npf": ["true"], "limit": ["20"]}
        assert request.headers["authorization"] == f"Bearer {TOKEN}"

    def recovered_id(self) -> str:
        return "7380000000000000042"

    def mock_refresh(self, router: respx.MockRouter, *, ok: bool) -> None:
        answer = httpx.Response(200, json={"access_token": "tumblr-new-access", "expires_in": 2520,
                                           "token_type": "bearer", "scope": "basic write offline_access",
                                           "refresh_token": "tumblr-new-refresh"}) \
            if ok else httpx.Response(400, json={"error": "invalid_grant", "error_description": "expired"})
        router.post(f"{API}/v2/oauth2/token", name="token").mock(return_value=answer)

    def check_refresh(self, router: respx.MockRouter, fresh: dict[str, Any]) -> None:
        form = {k: v[0] for k, v in parse_qs(router.routes["token"].calls[0].request.content.decode()).items()}
        assert form == {"grant_type": "refresh_token", "refresh_token": REFRESH, "client_id": "tb-consumer",
                        "client_secret": CLIENT_SECRET}
        assert fresh["access_token"] == "tumblr-new-access" and fresh["refresh_token"] == "tumblr-new-refresh"

    def processing_failure_words(self) -> str:
        return ""
