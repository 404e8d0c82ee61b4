"""Bluesky post metrics (issue 34): `app.bsky.feed.getPosts` asked of the account's PDS with the `atproto-proxy`
header naming the Bluesky AppView (https://docs.bsky.app/docs/advanced-guides/api-directory).

Contract cases (respx): every captured query is validated against the official lexicon (tests/networks/lexicons/,
copied from bluesky-social/atproto with commit and date) and every answer fed to the adapter is first checked
against the lexicon's output schema, so the shapes are the lexicon's, not ours. The PDS's refusals to proxy are
the ones @atproto/pds answers (packages/pds/src/pipethrough.ts: InvalidRequest "No service configured for …",
"could not resolve proxy did"; UpstreamFailure)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import respx

from providers.base import Account, ProviderError
from providers.bluesky import APPVIEW, APPVIEW_REASON, BlueskyProvider
from providers.metrics import SUPPORT
from tests.networks.lexicon import Invalid, check_output, check_query

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
SERVICE = "https://pds.test"
DID = "did:plc:roastery0000000000000001"
URI = f"at://{DID}/app.bsky.feed.post/3lbsprtk2ds2a"
ACCESS = "bsky-access-jwt-SECRET"
GET_POSTS = f"{SERVICE}/xrpc/app.bsky.feed.getPosts"
GET_RECORD = f"{SERVICE}/xrpc/com.atproto.repo.getRecord"


def account() -> Account:
    far = int(time.time()) + 7200
    return Account(integration_id="int_bs", platform="bluesky", status="connected", provider_account_id=DID,
                   state={"service": SERVICE},
                   credentials={"service": SERVICE, "did": DID, "handle": "roastery.test", "app_password": "app-pw-SECRET",
                                "access_jwt": ACCESS, "refresh_jwt": "bsky-refresh-jwt-SECRET",
                                "access_expires_at": far, "refresh_expires_at": far + 86400})


def post_view(**counts: int) -> dict[str, Any]:
    """A postView as the lexicon describes it (app.bsky.feed.defs#postView)."""
    return {"uri": URI, "cid": "bafyreihw5ixmwbmsqfbu4zcaxtqllb2vy7pwatadfbmwyhpnfzkyvm2yke",
            "author": {"did": DID, "handle": "roastery.test", "displayName": "Roastery",
                       "createdAt": "2026-01-05T09:00:00.000Z"},
            "record": {"$type": "app.bsky.feed.post", "text": "New roast", "createdAt": "2026-11-26T12:00:00.000Z"},
            "indexedAt": "2026-11-26T12:00:01.000Z", **counts}


def answer(body: dict[str, Any]) -> httpx.Response:
    check_output(body, "app.bsky.feed.getPosts")  # the answer is shaped as the lexicon says, or the test is wrong
    return httpx.Response(200, json=body)


async def read() -> Any:
    return await BlueskyProvider().post_metrics(account(), URI, published_at=NOW - timedelta(days=2), now=NOW)


async def test_get_posts_through_the_pds_to_the_appview_follows_the_lexicon() -> None:
    body = {"posts": [post_view(likeCount=40, repostCount=3, replyCount=2, quoteCount=1, bookmarkCount=5)]}
    with respx.mock(assert_all_called=True) as router:
        route = router.get(GET_POSTS).mock(return_value=answer(body))
        got = await read()
    request = route.calls[0].request
    check_query(request, "app.bsky.feed.getPosts")
    assert request.url.params.get_list("uris") == [URI]
    assert request.headers["atproto-proxy"] == APPVIEW == "did:web:api.bsky.app#bsky_appview"
    assert request.headers["authorization"] == f"Bearer {ACCESS}"  # the app password session, nothing more
    assert got.values == {"likes": 40, "reposts": 3, "replies": 2, "saves": 5} and not got.gone
    assert set(got.values) == set(SUPPORT["bluesky"].fields)
    assert got.raw == {"likeCount": 40, "repostCount": 3, "replyCount": 2, "bookmarkCount": 5, "quoteCount": 1}


async def test_an_appview_without_bookmark_counts_leaves_saves_unreported() -> None:
    with respx.mock(assert_all_called=True) as router:
        router.get(GET_POSTS).mock(return_value=answer({"posts": [post_view(likeCount=7, repostCount=0,
                                                                            replyCount=1, quoteCount=0)]}))
        got = await read()
    assert got.values == {"likes": 7, "reposts": 0, "replies": 1}  # saves null, never 0


def test_the_validator_refuses_what_the_lexicon_refuses() -> None:
    with pytest.raises(Invalid):
        check_output({"posts": [{**post_view(), "likeCount": "40"}]}, "app.bsky.feed.getPosts")
    with pytest.raises(Invalid):
        check_output({"posts": [{k: v for k, v in post_view().items() if k != "cid"}]}, "app.bsky.feed.getPosts")
    with pytest.raises(Invalid):  # a definition not copied is never taken as valid unseen
        check_output({"posts": [{**post_view(), "viewer": {"like": "at://x"}}]}, "app.bsky.feed.getPosts")
    request = httpx.Request("GET", GET_POSTS, params={"uris": [URI] * 26})
    with pytest.raises(Invalid):
        check_query(request, "app.bsky.feed.getPosts")


async def test_no_view_of_a_deleted_post_is_gone() -> None:
    with respx.mock(assert_all_called=True) as router:
        router.get(GET_POSTS).mock(return_value=answer({"posts": []}))
        record = router.get(GET_RECORD).respond(400, json={"error": "RecordNotFound",
                                                           "message": "Could not locate record"})
        got = await read()
    assert got.gone
    assert record.calls[0].request.url.params["rkey"] == URI.rsplit("/", 1)[1]


async def test_no_view_of_a_post_still_in_the_repo_is_tried_again() -> None:
    with respx.mock(assert_all_called=True) as router:
        router.get(GET_POSTS).mock(return_value=answer({"posts": []}))
        router.get(GET_RECORD).respond(200, json={"uri": URI, "cid": "bafyrei", "value": {"text": "New roast"}})
        with pytest.raises(ProviderError) as err:
            await read()
    assert err.value.kind == "transient" and "not indexed" in (err.value.safe_reason or "")


@pytest.mark.parametrize(("status", "body"), [
    (400, {"error": "InvalidRequest", "message": "No service configured for app.bsky.feed.getPosts"}),
    (400, {"error": "InvalidRequest", "message": "could not resolve proxy did"}),
    (502, {"error": "UpstreamFailure", "message": "Upstream service unreachable"}),
    (501, {"error": "MethodNotImplemented", "message": "Method Not Implemented"}),
], ids=["no-service", "unresolvable", "upstream", "not-implemented"])
async def test_a_pds_that_cannot_proxy_is_unavailable_not_a_missing_permission(status, body) -> None:
    with respx.mock(assert_all_called=True) as router:
        router.get(GET_POSTS).respond(status, json=body)
        with pytest.raises(ProviderError) as err:
            await read()
    # not `rejected`: the metrics job would take that for a refused permission and stop the account's readings
    assert err.value.kind == "unavailable" and err.value.safe_reason == APPVIEW_REASON
    assert "SECRET" not in err.value.message


async def test_rate_limits_stay_rate_limits() -> None:
    with respx.mock(assert_all_called=True) as router:
        router.get(GET_POSTS).respond(429, json={"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"},
                                      headers={"ratelimit-reset": str(int(time.time()) + 60)})
        with pytest.raises(ProviderError) as err:
            await read()
    assert err.value.kind == "rate_limited" and err.value.retry_after


async def test_a_refused_session_is_renewed_once_then_read() -> None:
    fresh = "bsky-access-jwt-2"
    with respx.mock(assert_all_called=True) as router:
        posts = router.get(GET_POSTS)
        posts.side_effect = [httpx.Response(400, json={"error": "ExpiredToken", "message": "Token has expired"}),
                             answer({"posts": [post_view(likeCount=1, repostCount=0, replyCount=0)]})]
        router.post(f"{SERVICE}/xrpc/com.atproto.server.refreshSession").respond(200, json={
            "accessJwt": fresh, "refreshJwt": "bsky-refresh-jwt-2", "did": DID, "handle": "roastery.test"})
        acct = account()
        got = await BlueskyProvider().post_metrics(acct, URI, published_at=NOW, now=NOW)
    assert got.values["likes"] == 1 and posts.calls[1].request.headers["authorization"] == f"Bearer {fresh}"
    assert acct.credentials and acct.credentials["access_jwt"] == fresh
