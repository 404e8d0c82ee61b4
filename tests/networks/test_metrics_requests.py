"""Post metrics requests (issue 34). X, Pinterest and YouTube answered by respx: every captured request goes
through the autouse validation against the network's own description (tests/providers/descriptions.py: X's and
Pinterest's OpenAPI extracts, YouTube's discovery document), and the answers are shaped as those descriptions show
(X PostPublicMetrics, Pinterest PinAnalyticsResponse, YouTube Video.statistics). Mastodon against mastodon-mock.
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

CASES = [
    (XCase(), "1800000000000000001", X_ANSWER,
     {"impressions": 1200, "likes": 40, "reposts": 3, "replies": 2, "saves": 5}),
    (PinterestCase(), "813744226420795884", PIN_ANSWER,
     {"impressions": 900, "likes": 6, "replies": 1, "saves": 8, "link_clicks": 12}),
    (YouTubeCase(), "Ks-_Mh1QhMc", YT_ANSWER, {"video_views": 5120, "likes": 210, "replies": 14}),
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
], ids=["x-gone", "x-forbidden", "x-429", "pin-gone", "pin-forbidden", "yt-gone", "yt-401"])
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
