"""Post metrics requests (issue 34). X, Pinterest and YouTube answered by respx: every captured request goes
through the autouse validation against the network's own description (tests/providers/descriptions.py: X's and
Pinterest's OpenAPI extracts, YouTube's discovery document), and the answers are shaped as those descriptions show
(X PostPublicMetrics, Pinterest PinAnalyticsResponse, YouTube Video.statistics). Mastodon against mastodon-mock.
Tumblr publishes no machine-readable description: its answers follow api.md of github.com/tumblr/docs (commit
708be10, 2024-10-18), "/notes - Get notes for a specific Post" (parameters `id`, `mode`; response `total_notes`,
and `total_likes`/`total_reblogs` in `conversation` mode). Bluesky: tests/networks/test_bluesky_metrics.py.
The common set each adapter fills is the one providers/metrics.SUPPORT declares for its platform."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
import respx

from providers import adapter_class
from providers.base import ProviderError
from providers.metrics import SUPPORT
from tests.networks.cases.pinterest import PinterestCase
from tests.networks.cases.tumblr import BLOG, TumblrCase
from tests.networks.cases.x import XCase
from tests.networks.cases.youtube import YouTubeCase
from tests.networks.support import mastodon_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)

X_ANSWER = {"data": {"id": "1800000000000000001", "text": "New roast",
                     "public_metrics": {"repost_count": 3, "reply_count": 2, "like_count": 40, "quote_count": 1,
                                        "bookmark_count": 5, "impression_count": 1200}}}
PIN_ANSWER = {"all": {"lifetime_metrics": {"IMPRESSION": 900, "OUTBOUND_CLICK": 12, "PIN_CLICK": 30, "SAVE": 8,
                                           "TOTAL_COMMENTS": 1, "TOTAL_REACTIONS": 6},
                      "daily_metrics": [{"data_status": "READY", "date": "2026-11-27",
                                         "metrics": {"IMPRESSION": 900}}]}}
YT_ANSWER = {"kind": "youtube#videoListResponse", "items": [
    {"kind": "youtube#video", "id": "Ks-_Mh1QhMc",
     "statistics": {"viewCount": "5120", "likeCount": "210", "favoriteCount": "0", "commentCount": "14"}}]}
# The reference's example answer (api.md, /notes), in conversation mode: notes with commentary, the rest rolled up.
TUMBLR_ANSWER = {"meta": {"status": 200, "msg": "OK"}, "response": {
    "notes": [{"type": "reply", "timestamp": 1595527574, "blog_name": "test-blog", "blog_uuid": "t:abcd1234",
               "blog_url": "https://test-blog.tumblr.com/", "followed": False, "avatar_shape": "square",
               "reply_text": "Lovely"}],
    "rollup_notes": [{"type": "like", "timestamp": 1595527569, "blog_name": "other-blog", "blog_uuid": "t:efgh5678",
                      "blog_url": "https://other-blog.tumblr.com/", "followed": False, "avatar_shape": "square"}],
    "total_notes": 31, "total_likes": 22, "total_reblogs": 6,
    "_links": {"next": {"href": "/v2/blog/roastery/notes?id=7380000000000000001&mode=conversation&before_timestamp=1595527569",
                        "method": "GET", "query_params": {"mode": "conversation", "before_timestamp": "1595527569"}}}}}

CASES = [
    (XCase(), "1800000000000000001", X_ANSWER,
     {"impressions": 1200, "likes": 40, "reposts": 3, "replies": 2, "saves": 5}),
    (PinterestCase(), "813744226420795884", PIN_ANSWER,
     {"impressions": 900, "likes": 6, "replies": 1, "saves": 8, "link_clicks": 12}),
    (YouTubeCase(), "Ks-_Mh1QhMc", YT_ANSWER, {"video_views": 5120, "likes": 210, "replies": 14}),
    (TumblrCase(), "7380000000000000001", TUMBLR_ANSWER, {"likes": 22, "reposts": 6}),
]


@pytest.mark.parametrize(("case", "publish_id", "answer", "expected"), CASES, ids=[c.platform for c, *_ in CASES])
async def test_metrics_request_follows_the_description(case, publish_id, answer, expected) -> None:
    with respx.mock(assert_all_called=True) as router:
        route = router.route().respond(200, json=answer)
        got = await case.provider().post_metrics(case.account(), publish_id, published_at=NOW - timedelta(days=2),
                                                 now=NOW)
    request = route.calls[0].request
    assert request.method == "GET" and publish_id in request.url.path + str(request.url.params)
    assert got.values == expected and not got.gone
    assert set(expected) == set(SUPPORT[case.platform].fields)
    assert all(isinstance(v, int | float) for v in got.raw.values())
    if case.platform == "pinterest":
        # at most 90 days back, from the publishing date; the standard metric types
        assert request.url.params["start_date"] == "2026-11-26" and request.url.params["end_date"] == "2026-11-28"
        assert "IMPRESSION" in request.url.params["metric_types"].split(",")
    if case.platform == "x":
        assert request.url.params["post.fields"] == "public_metrics"
    if case.platform == "tumblr":
        # the blog's own notes endpoint, the post by `id`, the mode whose answer splits likes from reblogs; the
        # note total is kept raw, never passed off as likes
        assert request.url.path == f"/v2/blog/{BLOG}/notes"
        assert dict(request.url.params) == {"id": publish_id, "mode": "conversation"}
        assert request.headers["authorization"].startswith("Bearer ")
        assert got.raw == {"total_notes": 31, "total_likes": 22, "total_reblogs": 6}


async def test_pinterest_asks_at_most_90_days_back() -> None:
    case = PinterestCase()
    with respx.mock(assert_all_called=True) as router:
        route = router.route().respond(200, json=PIN_ANSWER)
        await case.provider().post_metrics(case.account(), "813744226420795884",
                                           published_at=NOW - timedelta(days=200), now=NOW)
    start = datetime.fromisoformat(route.calls[0].request.url.params["start_date"]).date()
    assert (NOW.date() - start).days <= 90


@pytest.mark.parametrize(("case", "publish_id", "status", "body", "outcome"), [
    (XCase(), "1800000000000000001", 200,
     {"errors": [{"resource_id": "1800000000000000001", "title": "Not Found Error", "type": "https://api.twitter.com/2/problems/resource-not-found"}]},
     "gone"),
    (XCase(), "1800000000000000001", 403, {"title": "Forbidden", "status": 403, "detail": "Forbidden"}, "rejected"),
    (XCase(), "1800000000000000001", 429, {"title": "Too Many Requests"}, "rate_limited"),
    (PinterestCase(), "813744226420795884", 404, {"code": 3, "message": "Pin not found."}, "gone"),
    (PinterestCase(), "813744226420795884", 403, {"code": 29, "message": "You are not permitted"}, "rejected"),
    (YouTubeCase(), "Ks-_Mh1QhMc", 200, {"kind": "youtube#videoListResponse", "items": []}, "gone"),
    (YouTubeCase(), "Ks-_Mh1QhMc", 401, {"error": {"code": 401}}, "reauth_required"),
    (TumblrCase(), "7380000000000000001", 404, {"meta": {"status": 404, "msg": "Not Found"}, "response": []},
     "gone"),
    (TumblrCase(), "7380000000000000001", 403, {"meta": {"status": 403, "msg": "Forbidden"}, "response": []},
     "rejected"),
    (TumblrCase(), "7380000000000000001", 429, {"meta": {"status": 429, "msg": "Limit Exceeded"}, "response": []},
     "rate_limited"),
    (TumblrCase(), "7380000000000000001", 401, {"meta": {"status": 401, "msg": "Unauthorized"}, "response": []},
     "reauth_required"),
], ids=["x-gone", "x-forbidden", "x-429", "pin-gone", "pin-forbidden", "yt-gone", "yt-401", "tb-gone",
        "tb-forbidden", "tb-429", "tb-401"])
async def test_refusals_are_classified(case, publish_id, status, body, outcome) -> None:
    with respx.mock(assert_all_called=True) as router:
        router.route().respond(status, json=body)
        try:
            got = await case.provider().post_metrics(case.account(), publish_id, published_at=NOW, now=NOW)
        except ProviderError as exc:
            assert exc.kind == outcome
        else:
            assert outcome == "gone" and got.gone


def test_every_supported_platform_has_a_reader_and_only_those() -> None:
    """providers/metrics.SUPPORT is the one table: its platforms' adapters read metrics and declare the same
    fields and the scopes the read needs; no other adapter claims to."""
    from providers import ADAPTERS

    for name in ADAPTERS:
        if name == "sandbox":
            continue
        cls = adapter_class(name)
        reads = callable(getattr(cls, "post_metrics", None))
        assert reads == (name in SUPPORT), name
        if reads:
            assert cls.metrics_fields == SUPPORT[name].fields
            assert "post_metrics" in cls.needed_scopes, name


@pytest.mark.usefixtures("loopback_allowed")  # mastodon-mock is on 127.0.0.1
async def test_mastodon_status_counts_from_mastodon_mock(mastodon_server) -> None:  # noqa: F811
    from providers.base import PostRequest
    from providers.mastodon import MastodonProvider
    from tests.networks.test_mastodon import account

    provider, acct = MastodonProvider(poll_seconds=0.01), account(mastodon_server)
    made = await provider.publish(acct, PostRequest(platform="mastodon", post_type="MA_POST", text="Fresh roast",
                                                    idempotency_token="tok-metrics-1"))
    got = await provider.post_metrics(acct, made.publish_id, published_at=NOW, now=NOW)
    assert set(got.values) == {"likes", "reposts", "replies"} and not got.gone
    assert got.values == {"likes": 0, "reposts": 0, "replies": 0}
    gone = await provider.post_metrics(acct, "999999999999", published_at=NOW, now=NOW)
    assert gone.gone


async def test_x_malformed_answer_is_refused() -> None:
    case = XCase()
    with respx.mock() as router:
        router.route().mock(return_value=httpx.Response(200, json={"data": {"id": "1"}}))
        with pytest.raises(ProviderError) as err:
            await case.provider().post_metrics(case.account(), "1", published_at=NOW, now=NOW)
    assert err.value.kind == "malformed"


async def test_tumblr_notes_without_totals_are_refused() -> None:
    case = TumblrCase()
    with respx.mock() as router:
        router.route().respond(200, json={"meta": {"status": 200, "msg": "OK"}, "response": {"notes": []}})
        with pytest.raises(ProviderError) as err:
            await case.provider().post_metrics(case.account(), "7380000000000000001", published_at=NOW, now=NOW)
    assert err.value.kind == "malformed"


def test_google_business_profile_says_why_it_has_no_metrics() -> None:
    """No current Business Profile API reports a local post's metrics (v4 localPosts.reportInsights was removed
    with the Performance API, which is per location): the capabilities say so, citing Google's change log."""
    from providers.metrics import NOT_OFFERED
    from tools.context.platforms import capabilities_document

    metrics = {p["key"]: p["metrics"] for p in capabilities_document()["platforms"]}
    shown = metrics["google_business"]
    assert shown["supported"] is False and shown["fields"] == []
    assert shown["source"] == NOT_OFFERED["google_business"].source
    assert shown["source"].startswith("https://developers.google.com/my-business/")
    assert "reportInsights" in shown["note"]
    assert not set(NOT_OFFERED) & set(SUPPORT)
    assert metrics["discord"] == {"supported": False, "fields": [], "source": None, "note": None}
    for platform in ("bluesky", "tumblr"):
        assert metrics[platform]["supported"] and metrics[platform]["fields"] == list(SUPPORT[platform].fields)
