"""Post metrics requests of the Meta networks (issue 34): Instagram, Facebook Pages and Threads, answered by respx.

Graph requests (Instagram, Facebook) also go through the autouse validation against facebook-business's node and
edge descriptions (tests/providers/descriptions.py: IGMedia/PagePost `get_insights`, the IGMedia, PagePost and
AdVideo fields); Threads has no machine-readable description (UNDESCRIBED). The answers are shaped as each
reference shows (cited in providers/metrics.SUPPORT and the adapters' docstrings):
- Instagram Media Insights, https://developers.facebook.com/docs/instagram-platform/reference/instagram-media/insights
  (`{"data": [{"name", "period": "lifetime", "values": [{"value"}], "title", "description", "id"}]}`);
- Page Post Insights, https://developers.facebook.com/docs/graph-api/reference/page-post/insights/ (same shape),
  and the Page post's `reactions`/`comments` summaries and `shares` (https://developers.facebook.com/docs/graph-api/reference/post/);
- Threads Insights API, https://developers.facebook.com/docs/threads/insights (same shape).
Errors as the Graph API's "Handling Errors" page shows them (`{"error": {"message", "type", "code",
"error_subcode", "fbtrace_id"}}`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import respx
from facebook_business.adobjects.instagraminsightsresult import InstagramInsightsResult

from providers import facebook, instagram, threads
from providers.base import ProviderError
from providers.metrics import SUPPORT
from tests.networks.cases.facebook import API as FB_API
from tests.networks.cases.facebook import PAGE, PAGE_TOKEN, USER_TOKEN, FacebookCase
from tests.networks.cases.instagram import API as IG_API
from tests.networks.cases.instagram import TOKEN as IG_TOKEN
from tests.networks.cases.instagram import InstagramCase
from tests.networks.cases.threads import API as TH_API
from tests.networks.cases.threads import TOKEN as TH_TOKEN
from tests.networks.cases.threads import ThreadsCase

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
IG_MEDIA = "17895695668004550"
FB_POST = f"{PAGE}_122100000000000001"
FB_VIDEO = "1300000000000001"
TH_MEDIA = "18050206876707110"


def insights(object_id: str, values: dict[str, int]) -> dict[str, Any]:
    """An insights answer as the references show it: one entry per metric, a lifetime value."""
    return {"data": [{"name": name, "period": "lifetime", "values": [{"value": value}], "title": name.title(),
                      "description": f"{name} of the post", "id": f"{object_id}/insights/{name}/lifetime"}
                     for name, value in values.items()]}


def graph_error(code: int, message: str, subcode: int | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message, "type": "OAuthException", "code": code,
                             "fbtrace_id": "AbCdEfGhIjK"}
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}


def metrics_of(query: str) -> list[str]:
    return query.split(",")


# -- Instagram -------------------------------------------------------------------------------------------------------
REEL_INSIGHTS = {"views": 5400, "reach": 3100, "likes": 320, "comments": 18, "saved": 41, "shares": 27,
                 "total_interactions": 406, "ig_reels_avg_watch_time": 6350, "ig_reels_video_view_total_time": 34290000}


async def test_instagram_reel_reads_its_product_types_insights() -> None:
    case = InstagramCase()
    with respx.mock(assert_all_called=True) as router:
        media = router.get(f"{IG_API}/{IG_MEDIA}").respond(200, json={"media_product_type": "REELS",
                                                                      "id": IG_MEDIA})
        read = router.get(f"{IG_API}/{IG_MEDIA}/insights").respond(200, json=insights(IG_MEDIA, REEL_INSIGHTS))
        got = await case.provider().post_metrics(case.account(), IG_MEDIA, published_at=NOW - timedelta(days=1),
                                                 now=NOW)
    assert media.calls[0].request.url.params["fields"] == "media_product_type"
    request = read.calls[0].request
    assert request.method == "GET" and request.headers["authorization"] == f"Bearer {IG_TOKEN}"
    assert IG_TOKEN not in str(request.url)
    asked = metrics_of(request.url.params["metric"])
    assert asked == list(instagram.INSIGHT_METRICS["REELS"])
    # the pinned Graph version (v22.0+) refuses the retired metrics; every one asked is in the SDK's enum
    assert not {"impressions", "plays", "video_views"} & set(asked)
    assert set(asked) <= set(vars(InstagramInsightsResult.Metric).values())
    assert got.values == {"impressions": 5400, "likes": 320, "replies": 18, "saves": 41, "reposts": 27,
                          "watch_time_seconds": 34290}
    assert set(got.values) == set(SUPPORT["instagram"].fields) and not got.gone
    assert got.raw["reach"] == 3100 and got.raw["ig_reels_avg_watch_time"] == 6350


@pytest.mark.parametrize(("kind", "expected"), [
    ("FEED", ["views", "reach", "likes", "comments", "saved", "shares", "total_interactions"]),
    ("STORY", ["views", "reach", "replies", "shares", "total_interactions"]),
])
async def test_instagram_asks_each_product_type_its_metrics(kind: str, expected: list[str]) -> None:
    case = InstagramCase()
    answer = {name: 5 for name in expected}
    with respx.mock(assert_all_called=True) as router:
        router.get(f"{IG_API}/{IG_MEDIA}").respond(200, json={"media_product_type": kind, "id": IG_MEDIA})
        read = router.get(f"{IG_API}/{IG_MEDIA}/insights").respond(200, json=insights(IG_MEDIA, answer))
        got = await case.provider().post_metrics(case.account(), IG_MEDIA, published_at=NOW - timedelta(hours=6),
                                                 now=NOW)
    assert metrics_of(read.calls[0].request.url.params["metric"]) == expected
    assert got.values["impressions"] == 5 and got.values["replies"] == 5 and "watch_time_seconds" not in got.values


async def test_instagram_story_past_a_day_is_gone_without_asking_insights() -> None:
    case = InstagramCase()
    with respx.mock(assert_all_called=True) as router:
        router.get(f"{IG_API}/{IG_MEDIA}").respond(200, json={"media_product_type": "STORY", "id": IG_MEDIA})
        got = await case.provider().post_metrics(case.account(), IG_MEDIA, published_at=NOW - timedelta(days=3),
                                                 now=NOW)
        assert got.gone and len(router.calls) == 1


async def test_instagram_story_with_too_few_viewers_is_an_empty_reading() -> None:
    case = InstagramCase()
    with respx.mock(assert_all_called=True) as router:
        router.get(f"{IG_API}/{IG_MEDIA}").respond(200, json={"media_product_type": "STORY", "id": IG_MEDIA})
        router.get(f"{IG_API}/{IG_MEDIA}/insights").respond(400, json=graph_error(
            10, "(#10) Not enough viewers for the media to show insights"))
        got = await case.provider().post_metrics(case.account(), IG_MEDIA, published_at=NOW - timedelta(hours=2),
                                                 now=NOW)
    assert got.values == {} and not got.gone


# -- Facebook Pages ----------------------------------------------------------------------------------------------------
POST_COUNTS = {"shares": {"count": 4},
               "reactions": {"data": [], "summary": {"total_count": 57, "viewer_reaction": "NONE"}},
               "comments": {"data": [], "summary": {"order": "ranked", "total_count": 9, "can_comment": True}},
               "id": FB_POST}


async def test_facebook_post_reads_counts_and_views() -> None:
    case = FacebookCase()
    with respx.mock(assert_all_called=True) as router:
        fields = router.get(f"{FB_API}/{FB_POST}").respond(200, json=POST_COUNTS)
        read = router.get(f"{FB_API}/{FB_POST}/insights").respond(
            200, json={**insights(FB_POST, {"post_media_view": 2300}),
                       "paging": {"previous": f"{FB_API}/{FB_POST}/insights?since=1", "next": f"{FB_API}/x"}})
        got = await case.provider().post_metrics(case.account(), FB_POST, published_at=NOW - timedelta(days=1),
                                                 now=NOW)
    for route in (fields, read):  # the Page token, in a header
        assert route.calls[0].request.headers["authorization"] == f"Bearer {PAGE_TOKEN}"
        assert USER_TOKEN not in str(route.calls[0].request.headers) and PAGE_TOKEN not in str(route.calls[0].request.url)
    assert fields.calls[0].request.url.params["fields"] == facebook.POST_FIELDS
    params = read.calls[0].request.url.params
    assert params["metric"] == "post_media_view" and params["period"] == "lifetime"
    assert "post_impressions" not in params["metric"]  # removed for every version on 2025-11-15
    assert got.values == {"impressions": 2300, "likes": 57, "replies": 9, "reposts": 4}
    assert set(got.values) == set(SUPPORT["facebook"].fields) and not got.gone


async def test_facebook_video_reads_its_page_post() -> None:
    case = FacebookCase()
    with respx.mock(assert_all_called=True) as router:
        video = router.get(f"{FB_API}/{FB_VIDEO}").respond(200, json={"post_id": FB_POST, "id": FB_VIDEO})
        router.get(f"{FB_API}/{FB_POST}").respond(200, json={k: v for k, v in POST_COUNTS.items() if k != "shares"})
        router.get(f"{FB_API}/{FB_POST}/insights").respond(200, json=insights(FB_POST, {"post_media_view": 80}))
        got = await case.provider().post_metrics(case.account(), FB_VIDEO, published_at=NOW, now=NOW)
    assert video.calls[0].request.url.params["fields"] == "post_id"
    # nobody shared: Facebook leaves `shares` out, and the reading says nothing rather than 0
    assert got.values == {"impressions": 80, "likes": 57, "replies": 9}


async def test_facebook_story_has_no_page_post_to_read() -> None:
    case = FacebookCase()
    with respx.mock(assert_all_called=True) as router:
        router.get(f"{FB_API}/{FB_VIDEO}").respond(400, json=graph_error(
            100, "(#100) Tried accessing nonexisting field (post_id) on node type (Photo)"))
        got = await case.provider().post_metrics(case.account(), FB_VIDEO, published_at=NOW, now=NOW)
    assert got.gone  # readings stop rather than retrying a request that cannot succeed


async def test_facebook_retired_metric_keeps_the_counts() -> None:
    case = FacebookCase()
    with respx.mock(assert_all_called=True) as router:
        router.get(f"{FB_API}/{FB_POST}").respond(200, json=POST_COUNTS)
        router.get(f"{FB_API}/{FB_POST}/insights").respond(400, json=graph_error(
            100, "(#100) The value must be a valid insights metric"))
        got = await case.provider().post_metrics(case.account(), FB_POST, published_at=NOW, now=NOW)
    assert got.values == {"likes": 57, "replies": 9, "reposts": 4}


# -- Threads ------------------------------------------------------------------------------------------------------------
async def test_threads_reads_the_media_insights() -> None:
    case = ThreadsCase()
    answer = {"views": 900, "likes": 44, "replies": 6, "reposts": 3, "quotes": 2, "shares": 5}
    with respx.mock(assert_all_called=True) as router:
        read = router.get(f"{TH_API}/v1.0/{TH_MEDIA}/insights").respond(200, json=insights(TH_MEDIA, answer))
        got = await case.provider().post_metrics(case.account(), TH_MEDIA, published_at=NOW, now=NOW)
    request = read.calls[0].request
    assert request.method == "GET" and request.headers["authorization"] == f"Bearer {TH_TOKEN}"
    assert request.url.params["metric"] == "views,likes,replies,reposts,quotes,shares"
    assert got.values == {"impressions": 900, "likes": 44, "replies": 6, "reposts": 3}
    assert got.raw["quotes"] == 2 and got.raw["shares"] == 5
    assert set(got.values) == set(SUPPORT["threads"].fields)


# -- what each needs, and the refusals ---------------------------------------------------------------------------------
def test_connect_asks_the_insights_permission_each_read_needs() -> None:
    """A new connect grants it; an account connected before lacks it, so its first read is refused once
    (permission_missing) and `integrations check` names it."""
    from tools.networks.networks import NETWORKS

    for module, permission in ((instagram, "instagram_manage_insights"), (facebook, "read_insights"),
                               (threads, "threads_manage_insights")):
        name = module.NETWORK.lower()
        assert permission in NETWORKS[name].scopes, name
        needed = module.NEEDED_SCOPES["post_metrics"]
        assert permission in needed and set(needed) <= set(module.SCOPES), name


# The Graph error codes (Handling Errors; each insights reference): 10 and 200-299 missing permission, 4/17/32/613
# and HTTP 429 rate limits, 100 with subcode 33 or HTTP 404 a post the network no longer has, 190 a dead token.
REFUSALS = [
    (10, "(#10) Application does not have permission for this action", None, 400, "rejected"),
    (200, "(#200) Requires read_insights permission", None, 403, "rejected"),
    (4, "(#4) Application request limit reached", None, 400, "rate_limited"),
    (17, "(#17) User request limit reached", None, 400, "rate_limited"),
    (32, "(#32) Page request limit reached", None, 400, "rate_limited"),
    (613, "(#613) Calls to this api have exceeded the rate limit.", None, 400, "rate_limited"),
    (0, "", None, 429, "rate_limited"),
    (100, "Unsupported get request. Object with ID '1' does not exist, cannot be loaded due to missing "
          "permissions, or does not support this operation.", 33, 400, "gone"),
    (0, "", None, 404, "gone"),
    (190, "Error validating access token: Session has expired", 463, 400, "reauth_required"),
    (100, "(#100) Invalid parameter", None, 400, "malformed"),
]


def _route(router: respx.MockRouter, platform: str, response: httpx.Response) -> None:
    """The network's metrics read answers `response` (Instagram's and Facebook's first read included)."""
    if platform == "threads":
        router.get(f"{TH_API}/v1.0/{TH_MEDIA}/insights").mock(return_value=response)
    elif platform == "instagram":
        router.get(f"{IG_API}/{IG_MEDIA}").mock(return_value=response)
    else:
        router.get(f"{FB_API}/{FB_POST}").mock(return_value=response)


@pytest.mark.parametrize("case", [InstagramCase(), FacebookCase(), ThreadsCase()], ids=lambda c: c.platform)
@pytest.mark.parametrize(("code", "message", "subcode", "status", "outcome"), REFUSALS,
                         ids=[f"{r[3]}-{r[0]}-{r[4]}" for r in REFUSALS])
async def test_refusals_are_classified(case: Any, code: int, message: str, subcode: int | None, status: int,
                                       outcome: str) -> None:
    publish_id = {"instagram": IG_MEDIA, "facebook": FB_POST, "threads": TH_MEDIA}[case.platform]
    body = graph_error(code, message, subcode) if code else {}
    headers = {"retry-after": "120"} if status == 429 else {}
    with respx.mock(assert_all_called=True) as router:
        _route(router, case.platform, httpx.Response(status, json=body, headers=headers))
        try:
            got = await case.provider().post_metrics(case.account(), publish_id, published_at=NOW, now=NOW)
        except ProviderError as exc:
            assert exc.kind == outcome, exc.message
            if outcome == "rejected":  # our sentence, never the network's body
                assert exc.safe_reason and "insights permission" in exc.safe_reason
            if status == 429:
                assert exc.retry_after == 120
        else:
            assert outcome == "gone" and got.gone


async def test_permission_missing_on_the_insights_read_itself() -> None:
    """Instagram's and Facebook's first read may pass while the insights edge refuses: still `rejected`."""
    ig, fb = InstagramCase(), FacebookCase()
    with respx.mock(assert_all_called=True) as router:
        router.get(f"{IG_API}/{IG_MEDIA}").respond(200, json={"media_product_type": "FEED", "id": IG_MEDIA})
        router.get(f"{IG_API}/{IG_MEDIA}/insights").respond(403, json=graph_error(
            10, "(#10) Application does not have permission for this action"))
        router.get(f"{FB_API}/{FB_POST}").respond(200, json=POST_COUNTS)
        router.get(f"{FB_API}/{FB_POST}/insights").respond(400, json=graph_error(
            200, "(#200) Requires read_insights permission"))
        for case, publish_id in ((ig, IG_MEDIA), (fb, FB_POST)):
            with pytest.raises(ProviderError) as err:
                await case.provider().post_metrics(case.account(), publish_id, published_at=NOW, now=NOW)
            assert err.value.kind == "rejected"


async def test_malformed_insights_answer_is_refused() -> None:
    case = ThreadsCase()
    with respx.mock() as router:
        router.get(f"{TH_API}/v1.0/{TH_MEDIA}/insights").respond(200, json={"views": 3})
        with pytest.raises(ProviderError) as err:
            await case.provider().post_metrics(case.account(), TH_MEDIA, published_at=NOW, now=NOW)
    assert err.value.kind == "malformed"
