"""Post metrics requests of LinkedIn and TikTok (issue 34), answered by respx; neither network publishes a
machine-readable description, so every asserted field follows its reference page, as of 2026-11-28:

- LinkedIn Member Post Statistics,
  https://learn.microsoft.com/en-us/linkedin/marketing/community-management/members/post-statistics:
  `GET /rest/memberCreatorPostAnalytics` with `q=entity`, `entity` a share or ugcPost URN (Rest.li 2.0:
  `(share:urn%3Ali%3Ashare%3A…)` / `(ugc:…)`), `queryType` IMPRESSION | MEMBERS_REACHED | RESHARE | REACTION |
  COMMENT, `aggregation` TOTAL; permission `r_member_postAnalytics`; answer `{paging, elements: [{count,
  metricType}]}` (`metricType` a plain string since 202605, the `CreatorPostAnalyticsMetricTypeV1` union before).
- LinkedIn Organization Share Statistics,
  https://learn.microsoft.com/en-us/linkedin/marketing/community-management/organizations/share-statistics:
  `GET /rest/organizationalEntityShareStatistics?q=organizationalEntity&organizationalEntity={org}` with
  `shares=List(…)` or `ugcPosts=List(…)`; permission `rw_organization_admin`; answer `elements[]` with
  `totalShareStatistics` (uniqueImpressionsCount, clickCount, engagement, likeCount, commentCount, shareCount,
  impressionCount), `share` / `ugcPost` and `organizationalEntity`. Both need `LinkedIn-Version` and
  `X-Restli-Protocol-Version: 2.0.0`; a refusal is `{"status": 403, "serviceErrorCode": 100, "code":
  "ACCESS_DENIED", "message": …}`.
- TikTok Query Videos, https://developers.tiktok.com/doc/tiktok-api-v2-video-query: `POST /v2/video/query/` with
  `fields` in the query and `{"filters": {"video_ids": […]}}`, `Content-Type: application/json`, scope
  `video.list`; answer `{"data": {"videos": [{id, …}]}, "error": {"code": "ok", …}}`. Errors
  (https://developers.tiktok.com/doc/tiktok-api-v2-error-handling): `scope_not_authorized` 401,
  `scope_permission_missed` 400, `rate_limit_exceeded` 429, `access_token_invalid` 401, `invalid_params` 400.
  Get Post Status (https://developers.tiktok.com/doc/content-posting-api-reference-get-video-status):
  `publicaly_available_post_id` is empty until moderation is done, and always for a post nobody else can see.

End to end: the worker publishes through the real adapter, the collection tick reads the post, and an account
connected before the permission was asked for is refused once (`permission_missing`, one notification) and
then skipped. Both backends."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import respx
from sqlmodel import select

from providers import declared_scopes, linkedin, tiktok
from providers.base import Account, Connection, ProviderError
from providers.linkedin import VERSION
from providers.metrics import SUPPORT
from server.worker import Worker
from storage.tables.analytics import MetricSnapshot, PostMetricsState
from storage.tables.brands import Brand
from storage.tables.notifications import Notification
from tests.networks.cases.linkedin import API as LI_API
from tests.networks.cases.linkedin import ORG, SHARE, LinkedInCase
from tests.networks.cases.linkedin import TOKEN as LI_TOKEN
from tests.networks.cases.tiktok import API as TT_API
from tests.networks.cases.tiktok import OK, TikTokCase
from tests.networks.cases.tiktok import TOKEN as TT_TOKEN
from tests.networks.contract import serve_media
from tests.networks.support import Flow, assert_no_secrets
from tools.analytics import collect
from tools.operator import actions as operator

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
PERSON = "urn:li:person:782bbtaQ"
UGC = "urn:li:ugcPost:7000000000000000077"
VIDEO_ID = "7388000000000000042"
PUBLISH_ID = "v_pub_url~v2.7388"
MEMBER_COUNTS = {"IMPRESSION": 1204, "MEMBERS_REACHED": 800, "RESHARE": 3, "REACTION": 41, "COMMENT": 7}
ORG_TOTALS = {"uniqueImpressionsCount": 310, "shareCount": 3, "engagement": 0.0611, "clickCount": 12,
              "likeCount": 25, "impressionCount": 720, "commentCount": 4}
ACCESS_DENIED = {"status": 403, "serviceErrorCode": 100, "code": "ACCESS_DENIED",
                 "message": "Not enough permissions to access: memberCreatorPostAnalytics.GET.20260701"}
VIDEO = {"id": VIDEO_ID, "view_count": 5120, "like_count": 210, "comment_count": 14, "share_count": 9}


def _member() -> Account:
    base = LinkedInCase().account()
    return Account(integration_id="int_li_member", platform="linkedin", status="connected",
                   provider_account_id=PERSON, credentials=base.credentials, state={"username": "Ada"})


def _member_answer(request: httpx.Request, *, union: bool = False) -> httpx.Response:
    kind = request.url.params["queryType"]
    metric: Any = {"com.linkedin.adsexternalapi.memberanalytics.v1.CreatorPostAnalyticsMetricTypeV1": kind} \
        if union else kind
    return httpx.Response(200, json={"paging": {"start": 0, "count": 10, "links": []},
                                     "elements": [{"count": MEMBER_COUNTS[kind], "metricType": metric,
                                                   "targetEntity": {"share": SHARE}}]})


def _li_headers(request: httpx.Request) -> None:
    assert request.method == "GET"
    assert request.headers["authorization"] == f"Bearer {LI_TOKEN}"
    assert request.headers["linkedin-version"] == VERSION
    assert request.headers["x-restli-protocol-version"] == "2.0.0"


@pytest.mark.parametrize("union", [False, True], ids=["metricType-string", "metricType-union"])
async def test_linkedin_member_post_statistics(union) -> None:
    with respx.mock(assert_all_called=True) as router:
        route = router.get(host="linkedin-api.test", path="/rest/memberCreatorPostAnalytics").mock(
            side_effect=lambda request: _member_answer(request, union=union))
        got = await LinkedInCase().provider().post_metrics(_member(), SHARE, published_at=NOW, now=NOW)
    requests = [c.request for c in route.calls]
    assert [r.url.params["queryType"] for r in requests] == list(linkedin.MEMBER_METRICS)
    for request in requests:
        _li_headers(request)
        assert request.url.raw_path.decode() == (
            "/rest/memberCreatorPostAnalytics?q=entity&entity=(share:urn%3Ali%3Ashare%3A7000000000000000042)"
            f"&queryType={request.url.params['queryType']}&aggregation=TOTAL")
    assert got.values == {"impressions": 1204, "likes": 41, "reposts": 3, "replies": 7} and not got.gone
    assert got.raw == MEMBER_COUNTS  # LinkedIn's own names, MEMBERS_REACHED included
    assert set(got.values) <= set(SUPPORT["linkedin"].fields)


async def test_linkedin_member_ugc_post_and_an_unreported_metric() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.params["queryType"] == "MEMBERS_REACHED":  # nothing reported: null, never 0
            return httpx.Response(200, json={"paging": {"start": 0, "count": 10, "links": []}, "elements": []})
        return _member_answer(request)

    with respx.mock(assert_all_called=True) as router:
        route = router.get(host="linkedin-api.test", path="/rest/memberCreatorPostAnalytics").mock(side_effect=answer)
        got = await LinkedInCase().provider().post_metrics(_member(), UGC, published_at=NOW, now=NOW)
    assert "entity=(ugc:urn%3Ali%3AugcPost%3A7000000000000000077)" in route.calls[0].request.url.raw_path.decode()
    assert "MEMBERS_REACHED" not in got.raw and got.values["impressions"] == 1204


@pytest.mark.parametrize(("urn", "param", "key"), [(SHARE, "shares", "share"), (UGC, "ugcPosts", "ugcPost")])
async def test_linkedin_organization_share_statistics(urn, param, key) -> None:
    answer = {"paging": {"count": 10, "start": 0, "links": []},
              "elements": [{"totalShareStatistics": ORG_TOTALS, key: urn, "organizationalEntity": ORG}]}
    with respx.mock(assert_all_called=True) as router:
        route = router.get(host="linkedin-api.test", path="/rest/organizationalEntityShareStatistics").respond(
            200, json=answer)
        got = await LinkedInCase().provider().post_metrics(LinkedInCase().account(), urn, published_at=NOW, now=NOW)
    [call] = route.calls
    _li_headers(call.request)
    encoded = urn.replace(":", "%3A")
    assert call.request.url.raw_path.decode() == (
        "/rest/organizationalEntityShareStatistics?q=organizationalEntity"
        f"&organizationalEntity=urn%3Ali%3Aorganization%3A5515715&{param}=List({encoded})")
    assert got.values == {"impressions": 720, "likes": 25, "reposts": 3, "replies": 4, "link_clicks": 12}
    assert set(got.values) == set(SUPPORT["linkedin"].fields)
    assert got.raw["engagement"] == 0.0611 and got.raw["uniqueImpressionsCount"] == 310


async def test_linkedin_organization_post_without_activity_counts_zero() -> None:
    """The reference leaves a post with no actions or impressions out of the answer: its counts are 0."""
    with respx.mock(assert_all_called=True) as router:
        router.get(host="linkedin-api.test", path="/rest/organizationalEntityShareStatistics").respond(
            200, json={"paging": {"count": 10, "start": 0, "links": []}, "elements": []})
        got = await LinkedInCase().provider().post_metrics(LinkedInCase().account(), SHARE, published_at=NOW,
                                                           now=NOW)
    assert got.values == dict.fromkeys(SUPPORT["linkedin"].fields, 0) and not got.gone


def test_linkedin_metrics_permissions_per_account_kind() -> None:
    assert declared_scopes("linkedin", _member())["post_metrics"] == ("r_member_postAnalytics",)
    assert declared_scopes("linkedin", LinkedInCase().account())["post_metrics"] == ("rw_organization_admin",)
    # Community Management permissions: LinkedIn refuses the whole authorisation for a scope the app was not
    # granted, so the default connect cannot ask for them (docs/networks.md, LinkedIn)
    assert not {"r_member_postAnalytics", "rw_organization_admin"} & set(linkedin.SCOPES)


@pytest.mark.parametrize(("account", "status", "body", "outcome"), [
    (_member(), 403, ACCESS_DENIED, "rejected"),
    (LinkedInCase().account(), 403, {**ACCESS_DENIED, "message": "Not enough permissions to access: "
                                     "organizationalEntityShareStatistics.GET.20260701"}, "rejected"),
    (_member(), 429, {"status": 429, "message": "Resource level throttle APPLICATION DAY limit for calls to this "
                                                "resource is reached."}, "rate_limited"),
    (LinkedInCase().account(), 404, {"status": 404, "message": "Not Found"}, "gone"),
    (_member(), 400, {"status": 400, "code": "ILLEGAL_ARGUMENT", "message": "Invalid param"}, "malformed"),
    (_member(), 401, {"status": 401, "code": "EXPIRED_ACCESS_TOKEN", "message": "expired"}, "reauth_required"),
], ids=["member-403", "org-403", "429", "404-gone", "400-not-a-refusal", "401"])
async def test_linkedin_refusals(account, status, body, outcome) -> None:
    with respx.mock(assert_all_called=True) as router:
        router.get(host="linkedin-api.test").respond(status, json=body)
        try:
            got = await LinkedInCase().provider().post_metrics(account, SHARE, published_at=NOW, now=NOW)
        except ProviderError as exc:
            assert exc.kind == outcome, exc
            assert_no_secrets([exc.message, exc.safe_reason or ""], LinkedInCase().secrets)
        else:
            assert outcome == "gone" and got.gone


def _tt_answer(videos: list[dict[str, Any]]) -> dict[str, Any]:
    return {"data": {"videos": videos}, "error": OK}


def _check_query(request: httpx.Request, video_id: str) -> None:
    assert request.method == "POST" and request.url.path == "/v2/video/query/"
    assert request.url.params["fields"] == "id,view_count,like_count,comment_count,share_count"
    assert request.headers["authorization"] == f"Bearer {TT_TOKEN}"
    assert request.headers["content-type"] == "application/json"
    assert json.loads(request.content) == {"filters": {"video_ids": [video_id]}}


async def test_tiktok_video_query() -> None:
    with respx.mock(assert_all_called=True) as router:
        route = router.post(f"{TT_API}/v2/video/query/").respond(200, json=_tt_answer([VIDEO]))
        got = await TikTokCase().provider().post_metrics(TikTokCase().account(), VIDEO_ID, published_at=NOW,
                                                         now=NOW)
    _check_query(route.calls[0].request, VIDEO_ID)
    assert got.values == {"video_views": 5120, "likes": 210, "replies": 14, "reposts": 9} and not got.gone
    assert set(got.values) == set(SUPPORT["tiktok"].fields)
    assert got.raw == {"view_count": 5120, "like_count": 210, "comment_count": 14, "share_count": 9}


async def test_tiktok_post_public_since_publishing_is_read_by_its_new_video_id() -> None:
    """Published while in moderation: the stored ID is the publish ID; status/fetch now names the video."""
    with respx.mock(assert_all_called=True) as router:
        status = router.post(f"{TT_API}/v2/post/publish/status/fetch/").respond(200, json={"data": {
            "status": "PUBLISH_COMPLETE", "publicaly_available_post_id": [int(VIDEO_ID)]}, "error": OK})
        query = router.post(f"{TT_API}/v2/video/query/").respond(200, json=_tt_answer([VIDEO]))
        got = await TikTokCase().provider().post_metrics(TikTokCase().account(), PUBLISH_ID, published_at=NOW,
                                                         now=NOW)
    assert json.loads(status.calls[0].request.content) == {"publish_id": PUBLISH_ID}
    _check_query(query.calls[0].request, VIDEO_ID)
    assert got.values["video_views"] == 5120


@pytest.mark.parametrize("data", [
    {"status": "PUBLISH_COMPLETE", "publicaly_available_post_id": []},  # SELF_ONLY, or moderation not done
    {"status": "PROCESSING_DOWNLOAD"},
], ids=["no-public-id", "still-processing"])
async def test_tiktok_post_without_a_video_id_finds_nothing_this_time(data) -> None:
    with respx.mock(assert_all_called=True) as router:
        router.post(f"{TT_API}/v2/post/publish/status/fetch/").respond(200, json={"data": data, "error": OK})
        got = await TikTokCase().provider().post_metrics(TikTokCase().account(), PUBLISH_ID, published_at=NOW,
                                                         now=NOW)
    assert got.values == {} and got.raw == {} and not got.gone  # not an error, not gone: no reading yet


@pytest.mark.parametrize(("status", "body", "outcome"), [
    (200, _tt_answer([]), "gone"),
    (401, {"data": {}, "error": {"code": "scope_not_authorized", "message": "The user did not authorize the scope "
                                 "required for completing this request.", "log_id": "202611281200"}}, "rejected"),
    (400, {"data": {}, "error": {"code": "scope_permission_missed", "message": "some fields need additional scopes",
                                 "log_id": "202611281200"}}, "rejected"),
    (429, {"data": {}, "error": {"code": "rate_limit_exceeded", "message": "The API rate limit was exceeded.",
                                 "log_id": "202611281200"}}, "rate_limited"),
    (401, {"data": {}, "error": {"code": "access_token_invalid", "message": "Access token is invalid",
                                 "log_id": "202611281200"}}, "reauth_required"),
    (400, {"data": {}, "error": {"code": "invalid_params", "message": "bad", "log_id": "1"}}, "malformed"),
], ids=["not-in-answer-gone", "scope-not-authorized", "scope-permission-missed", "429", "token", "400"])
async def test_tiktok_refusals(status, body, outcome) -> None:
    with respx.mock(assert_all_called=True) as router:
        router.post(f"{TT_API}/v2/video/query/").respond(status, json=body, headers={"retry-after": "60"})
        try:
            got = await TikTokCase().provider().post_metrics(TikTokCase().account(), VIDEO_ID, published_at=NOW,
                                                             now=NOW)
        except ProviderError as exc:
            assert exc.kind == outcome, exc
            if outcome == "rate_limited":
                assert exc.retry_after == 60
            assert_no_secrets([exc.message, exc.safe_reason or ""], TikTokCase().secrets)
        else:
            assert outcome == "gone" and got.gone


def test_tiktok_connect_asks_for_video_list() -> None:
    from tools.networks.networks import NETWORKS

    assert "video.list" in tiktok.SCOPES and tiktok.NEEDED_SCOPES["post_metrics"] == ("video.list", "video.publish")
    assert NETWORKS["tiktok"].scope_param == "user.info.basic,video.publish,video.upload,video.list"


# End to end: the worker publishes through the adapter, the collection tick reads the post.

def _mock_metrics(router: respx.MockRouter, case: Any, *, refused: bool) -> respx.Route:
    if case.platform == "linkedin":
        answer = httpx.Response(403, json=ACCESS_DENIED) if refused else httpx.Response(200, json={
            "paging": {"count": 10, "start": 0, "links": []},
            "elements": [{"totalShareStatistics": ORG_TOTALS, "share": SHARE, "organizationalEntity": ORG}]})
        return router.get(f"{LI_API}/rest/organizationalEntityShareStatistics", name="metrics").mock(
            return_value=answer)
    answer = httpx.Response(401, json={"data": {}, "error": {"code": "scope_not_authorized", "message": "no",
                                                              "log_id": "1"}}) if refused \
        else httpx.Response(200, json=_tt_answer([VIDEO]))
    return router.post(f"{TT_API}/v2/video/query/", name="metrics").mock(return_value=answer)


async def _published(env, case) -> tuple[Flow, str]:
    flow = await Flow(env).setup()
    account = case.account()
    env.rt.providers[case.provider_name] = case.provider()
    async with env.db.session(write=True) as s:
        brand = await s.get(Brand, flow.brand.id)
        integration = await operator.connect_integration(
            s, env.clock.now(), brand, case.platform, provider=case.provider_name, settings=env.rt.settings,
            connection=Connection(provider_account_id=account.provider_account_id, username="roastery",
                                  display_name="Roastery", credentials=account.credentials, state=account.state))
    settings = await case.draft_settings(env, flow)
    item = await flow.draft(case.post(case.text_kind).text, **{f"{case.platform}_settings": settings})
    schedule_id = await flow.schedule(item, [integration.id])
    env.clock.advance(minutes=5)
    router = respx.mock(assert_all_called=False, assert_all_mocked=True)
    serve_media(router)
    with router:
        case.mock_publish(router, case.text_kind)
        case.mock_refresh(router, ok=True)
        assert await Worker(env.rt, owner="w1").run_once() >= 1
    out = await flow.outcome(schedule_id)
    [publication] = [p for p in out["publications"] if p["integration_id"] == integration.id]
    assert publication["status"] == "published" and publication["publish_id"] == case.published_id()
    return flow, publication["id"]


@pytest.mark.parametrize("case", [LinkedInCase(), TikTokCase()], ids=lambda c: c.platform)
async def test_published_post_is_read_through_the_adapter(env, case) -> None:
    flow, publication_id = await _published(env, case)
    env.clock.advance(hours=1)
    with respx.mock(assert_all_mocked=True) as router:
        route = _mock_metrics(router, case, refused=False)
        assert await collect.collect_due(env.rt, "w1") == 1
    assert route.call_count == 1
    got = await env.call("get_publication_metrics", flow.key, brand_id=flow.brand.id, publication_id=publication_id)
    assert got.status == 200, got.body
    latest = {k: v for k, v in got.body["data"]["latest"].items() if v is not None}
    assert set(latest) == set(SUPPORT[case.platform].fields)
    assert_no_secrets([json.dumps(got.body)], case.secrets)


@pytest.mark.parametrize("case", [LinkedInCase(), TikTokCase()], ids=lambda c: c.platform)
async def test_account_connected_before_the_permission_is_refused_once_then_skipped(env, case) -> None:
    _, publication_id = await _published(env, case)
    env.clock.advance(hours=1)
    with respx.mock(assert_all_mocked=True) as router:
        route = _mock_metrics(router, case, refused=True)
        assert await collect.collect_due(env.rt, "w1") == 0
        env.clock.advance(days=40)
        assert await collect.collect_due(env.rt, "w1") == 0  # skipped: not asked again
    assert route.call_count == 1
    async with env.db.session(write=False) as s:
        row = await s.get(PostMetricsState, publication_id)
        notes = (await s.exec(select(Notification).where(Notification.type == "metrics_permission_missing"))).all()
        readings = (await s.exec(select(MetricSnapshot).where(MetricSnapshot.publication_id == publication_id))).all()
    assert row is not None and row.status == "permission_missing" and row.next_due_at is None
    assert notes and len({n.user_id for n in notes}) == len(notes) and not readings
    assert_no_secrets([str(n.model_dump()) for n in notes], case.secrets)

