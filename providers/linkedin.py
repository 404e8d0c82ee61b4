"""LinkedIn through the Posts API (Community Management), as a member or an organization the member
administers. Every call carries `LinkedIn-Version: YYYYMM` and `X-Restli-Protocol-Version: 2.0.0`.

- Posts: `POST /rest/posts` (JSON `author`, `commentary`, `visibility` PUBLIC|CONNECTIONS, `distribution`
  `{feedDistribution: MAIN_FEED}`, `lifecycleState: PUBLISHED`, `content`) → 201 with the post URN in the
  `x-restli-id` header; permalink `https://www.linkedin.com/feed/update/{urn}`. The commentary is LinkedIn's
  "little text" format: reserved characters are escaped and `#tag` becomes a hashtag template.
- LI_IMAGE: each image `POST /rest/images?action=initializeUpload` (`owner`) → `uploadUrl` + `image` URN, then a
  `PUT` of the bytes to `uploadUrl`; one image is `content.media`, several `content.multiImage.images`.
- LI_VIDEO: `POST /rest/videos?action=initializeUpload` (`owner`, `fileSizeBytes`) → `uploadInstructions`
  (byte ranges and URLs) and `uploadToken`; each part `PUT` (its `ETag` kept), then
  `POST /rest/videos?action=finalizeUpload` (`uploadedPartIds`); `GET /rest/videos/{urn}` is polled with bounded
  backoff until `AVAILABLE` before the post is made; `PROCESSING_FAILED` is a rejection naming LinkedIn's reason,
  still processing when the budget is spent is transient.
- LI_ARTICLE: `content.article` with `source` (`original_url`), `title` and an optional thumbnail image.
- Exactly-once: LinkedIn has no idempotency key. It refuses a post whose content duplicates a recent one with a
  422 naming the existing post (`Content is a duplicate of urn:li:share:…`): that post is taken as the earlier
  attempt's. An organization's posts can also be read (`GET /rest/posts?q=author`, `r_organization_social`):
  `find_post_matching` recognises an exact commentary match since the run began. A member's posts cannot be
  read without a restricted permission, so for members only LinkedIn's duplicate refusal protects a retry.
- Metrics (providers/metrics.py): a member's post through Member Post Statistics
  (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/members/post-statistics):
  `GET /rest/memberCreatorPostAnalytics?q=entity&entity=(share:{urn})` (or `(ugc:{urn})` for a ugcPost) with
  `queryType` IMPRESSION | MEMBERS_REACHED | RESHARE | REACTION | COMMENT and `aggregation=TOTAL`, one call per
  type, each answering `elements[{count, metricType}]` (`r_member_postAnalytics`). An organization's post
  through Organization Share Statistics
  (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/organizations/share-statistics):
  `GET /rest/organizationalEntityShareStatistics?q=organizationalEntity&organizationalEntity={org}` with
  `shares=List({urn})` or `ugcPosts=List({urn})` → `elements[].totalShareStatistics` (`rw_organization_admin`,
  lifetime counts over a rolling 12 months; a post with no activity is left out of the answer: its counts are
  0). Rest.li 2.0 query syntax: the URNs percent-encoded inside unencoded `(`, `:`, `,`, `)`. 403 (ACCESS_DENIED:
  the permission was not granted) is a refusal, so the collector stops the account's readings once; 404 is a
  post LinkedIn no longer has; 429 waits.
- Tokens: 60-day access tokens. Apps LinkedIn enabled for refresh tokens get one (a year): refreshed a week ahead
  (`POST /oauth/v2/accessToken`, `grant_type=refresh_token`). Without one, the token tick sends a reconnect
  notice a week before expiry (`reconnect_notice_ahead`) and marks the account expired once the token is.

Bases: `SOCIALPUB_LINKEDIN_API_URL` (https://api.linkedin.com), `SOCIALPUB_LINKEDIN_OAUTH_URL`
(https://www.linkedin.com/oauth/v2); `SOCIALPUB_LINKEDIN_VERSION` (the version and its
sunset are declared in providers/versions.py); `SOCIALPUB_LINKEDIN_SCOPES`
(space-separated) replaces the default scopes, e.g. to add the organization ones.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import anyio
import httpx

from providers import versions
from providers.base import (
    Account,
    CheckResult,
    Connection,
    Options,
    PostRequest,
    PostResult,
    ProviderError,
    probe,
    recorded,
)
from providers.http import DEFAULT_TIMEOUT, call, download, json_body, new_client
from providers.metrics import SUPPORT, PostMetrics, from_raw, number
from providers.oauth import refresh_due, token_request
from schemas.time import iso, parse_timestamp

NETWORK = "LinkedIn"
API_URL = os.environ.get("SOCIALPUB_LINKEDIN_API_URL", "https://api.linkedin.com").rstrip("/")
OAUTH_URL = os.environ.get("SOCIALPUB_LINKEDIN_OAUTH_URL", "https://www.linkedin.com/oauth/v2").rstrip("/")
AUTHORIZE_URL = f"{OAUTH_URL}/authorization"
TOKEN_URL = f"{OAUTH_URL}/accessToken"
VERSION = versions.LINKEDIN.version  # one place: providers/versions.py (with its published sunset)
# A member's posts (Share on LinkedIn + Sign In with OpenID Connect). Organization pages need the Community
# Management API's scopes too: r_organization_social w_organization_social rw_organization_admin; so do post
# metrics (r_member_postAnalytics for a member, rw_organization_admin for an organization). LinkedIn refuses the
# whole authorisation when a scope is not one the app was granted, hence they are not in the default.
SCOPES = tuple((os.environ.get("SOCIALPUB_LINKEDIN_SCOPES") or "openid profile w_member_social").split())
PROCESSING_BUDGET = 240.0
MAX_POLLS = 60
POLL_MIN, POLL_MAX = 2.0, 30.0
RECENT_MAX = 50
REFRESH_AHEAD = timedelta(days=7)
_RESERVED = re.compile(r"([\\|{}@\[\]()<>*_~])")
_HASHTAG = re.compile(r"(?<![\w#])#(\w+)")
_DUPLICATE = re.compile(r"duplicate of (urn:li:(?:share|ugcPost):\d+)")
MEMBER_METRICS = ("IMPRESSION", "MEMBERS_REACHED", "RESHARE", "REACTION", "COMMENT")  # Member Post Statistics
MEMBER_COMMON = {"IMPRESSION": "impressions", "REACTION": "likes", "RESHARE": "reposts", "COMMENT": "replies"}
ORGANIZATION_COMMON = {"impressionCount": "impressions", "likeCount": "likes", "shareCount": "reposts",
                       "commentCount": "replies", "clickCount": "link_clicks"}
_POST_URN = re.compile(r"urn:li:(share|ugcPost):\d{1,30}")


def little_text(text: str) -> str:
    """The post text in LinkedIn's little text format: reserved characters escaped, `#tag` a hashtag template
    (an unescaped reserved character makes LinkedIn cut the commentary)."""
    out, last = [], 0
    for match in _HASHTAG.finditer(text):
        out.append(_RESERVED.sub(r"\\\1", text[last:match.start()]).replace("#", "\\#"))
        out.append("{hashtag|\\#|" + _RESERVED.sub(r"\\\1", match.group(1)) + "}")
        last = match.end()
    out.append(_RESERVED.sub(r"\\\1", text[last:]).replace("#", "\\#"))
    return "".join(out)


class _Duplicate(Exception):
    def __init__(self, urn: str) -> None:
        super().__init__(urn)
        self.urn = urn


def _classify(response: httpx.Response) -> ProviderError | None:
    if response.status_code == 422:
        try:
            message = str(response.json().get("message") or "")
        except (ValueError, AttributeError):
            message = ""
        found = _DUPLICATE.search(message)
        if found:
            raise _Duplicate(found.group(1))
        return ProviderError("rejected", f"LinkedIn answered 422 to {response.request.url.path}",
                             safe_reason="LinkedIn refused the post: its content was not accepted.")
    return None


def _metrics_classify(response: httpx.Response) -> ProviderError | None:
    """A metrics read: 403 is the permission not granted (the collector's `permission_missing`), 404 a post
    LinkedIn no longer has (the caller's `gone`), 429 and 5xx the usual; any other refusal is our request's fault,
    not the account's, so it must not stop the account's readings."""
    status, where = response.status_code, f"LinkedIn answered {response.status_code} to {response.request.url.path}"
    if status == 403:
        return ProviderError("rejected", where, safe_reason="LinkedIn refused to share the post's statistics: the "
                                                            "account did not grant the permission to read them.")
    if 400 <= status < 500 and status not in (401, 429):  # 404 included: post_metrics reads it as gone
        return ProviderError("malformed", where)
    return None


def _restli(urn: str) -> str:
    """A URN as a Rest.li 2.0 query value: percent-encoded, so its colons are not read as the syntax's."""
    return quote(urn, safe="")


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "LinkedIn-Version": VERSION, "X-Restli-Protocol-Version": "2.0.0"}


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "LinkedIn account has no access token")
    return token


def _value(response: httpx.Response, what: str, *keys: str) -> dict[str, Any]:
    body = json_body(response, NETWORK)
    value = body.get("value") if isinstance(body, dict) else None
    if not isinstance(value, dict) or not all(value.get(k) for k in keys):
        raise ProviderError("malformed", f"LinkedIn {what} answered without {', '.join(keys)}")
    return value


async def exchange_code(endpoint: str, client_id: str, client_secret: str | None, redirect_uri: str, code: str,
                        code_verifier: str) -> dict[str, Any]:
    """LinkedIn's code exchange (`POST /oauth/v2/accessToken`, client credentials in the form)."""
    return await token_request("POST", endpoint, network=NETWORK, refused_kind="rejected", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri, "client_id": client_id,
        "client_secret": client_secret or "", "code_verifier": code_verifier})


async def verify(server: str, token: str) -> Connection:
    """The member a token belongs to (`GET /v2/userinfo`, OpenID Connect) and, when the token carries the
    organization scopes, the organizations they administer (`GET /rest/organizationAcls`): candidates for
    `integrations select-account`."""
    async with new_client(server.rstrip("/"), headers=_headers(token)) as client:
        me = json_body(await call(client, "GET", "/v2/userinfo", network=NETWORK), NETWORK)
        if not isinstance(me, dict) or not me.get("sub"):
            raise ProviderError("malformed", "LinkedIn userinfo answered without sub")
        try:
            acls = json_body(await call(client, "GET", "/rest/organizationAcls", network=NETWORK, params={
                "q": "roleAssignee", "role": "ADMINISTRATOR", "state": "APPROVED", "count": "50"}), NETWORK)
        except ProviderError:
            acls = {}  # no organization scopes: the member only
    person = f"urn:li:person:{me['sub']}"
    name = str(me.get("name") or "")[:200]
    orgs = [str(e["organization"]) for e in (acls.get("elements") or []) if isinstance(e, dict)
            and str(e.get("organization") or "").startswith("urn:li:organization:")][:50] \
        if isinstance(acls, dict) else []
    picture = me.get("picture")
    return Connection(provider_account_id=person, username=name or None, display_name=name or None,
                      credentials={}, state={"username": name, "candidates": [
                          {"id": person, "username": name}, *({"id": o, "username": o} for o in orgs)]},
                      avatar_url=picture if isinstance(picture, str) else None)


# The scopes each operation needs: the Posts, Images and Videos APIs need w_member_social to post as a member and
# w_organization_social as an organization
# (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api#permissions,
# .../shares/images-api#permissions, .../shares/videos-api#permissions), deleting likewise; reading an
# organization's posts (`GET /rest/posts?q=author`) needs r_organization_social (a member's posts are not read);
# `GET /v2/userinfo` needs openid and profile
# (https://learn.microsoft.com/en-us/linkedin/consumer/integrations/self-serve/sign-in-with-linkedin-v2).
# Post metrics: a member's need r_member_postAnalytics (Member Post Statistics, "Permissions"), an organization's
# rw_organization_admin (Organization Share Statistics, "Permissions"); both are Community Management API
# permissions, which LinkedIn grants an app only after review, so the default SCOPES cannot ask for them.
def _needed(write: str, read: tuple[str, ...], metrics: str) -> dict[str, tuple[str, ...]]:
    return {**{f"publish:{t}": (write,) for t in ("LI_TEXT", "LI_IMAGE", "LI_VIDEO", "LI_ARTICLE")},
            "find_post": read, "delete_post": (write,), "check": ("openid", "profile"), "post_metrics": (metrics,)}


NEEDED_SCOPES: dict[str, tuple[str, ...]] = _needed("w_member_social", (), "r_member_postAnalytics")
NEEDED_SCOPES_ORGANIZATION: dict[str, tuple[str, ...]] = _needed("w_organization_social", ("r_organization_social",),
                                                                 "rw_organization_admin")
INTROSPECT_URL = f"{OAUTH_URL}/introspectToken"


class LinkedInProvider:
    name = "linkedin"
    metrics_fields = SUPPORT["linkedin"].fields
    needed_scopes = NEEDED_SCOPES
    introspect_url = INTROSPECT_URL
    refresh_ahead = REFRESH_AHEAD  # the token tick looks this far ahead for LinkedIn accounts
    reconnect_notice_ahead = REFRESH_AHEAD  # ... and sends a reconnect notice when it cannot refresh

    def __init__(self, *, api_url: str = API_URL, token_url: str = TOKEN_URL, timeout: httpx.Timeout = DEFAULT_TIMEOUT,
                 processing_budget: float = PROCESSING_BUDGET, poll_min: float = POLL_MIN) -> None:
        self.api_url, self.token_url, self.timeout = api_url.rstrip("/"), token_url, timeout
        self.processing_budget, self.poll_min = processing_budget, poll_min

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers=_headers(_token(account)), timeout=self.timeout)

    @staticmethod
    def needed_scopes_for(account: Account) -> dict[str, tuple[str, ...]]:
        """An organization account posts with the organization scopes, a member with the member ones."""
        author = account.provider_account_id or ""
        return NEEDED_SCOPES_ORGANIZATION if author.startswith("urn:li:organization:") else NEEDED_SCOPES

    async def check(self, account: Account) -> CheckResult:
        """LinkedIn's token introspection (`POST /oauth/v2/introspectToken` with the app's client credentials:
        `active`, `status`, `expires_at`, `scope` comma-separated,
        https://learn.microsoft.com/en-us/linkedin/shared/authentication/token-introspection) and the member who
        authorised (`GET /v2/userinfo`)."""
        result = recorded(account.credentials)
        creds = account.credentials or {}
        try:
            token = _token(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        if creds.get("client_id") and creds.get("client_secret"):
            async def introspect() -> Any:
                async with new_client(timeout=self.timeout) as client:
                    return json_body(await call(client, "POST", self.introspect_url, network=NETWORK, data={
                        "client_id": str(creds["client_id"]), "client_secret": str(creds["client_secret"]),
                        "token": token}), NETWORK)
            info = await probe(result, introspect())
            if isinstance(info, dict):
                result.token_valid = info.get("active") is True
                if isinstance(info.get("scope"), str):
                    result.granted_scopes = tuple(s for s in info["scope"].replace(",", " ").split() if s)
                    result.scopes_source = "introspected"
                if isinstance(info.get("expires_at"), int):
                    result.expires_at = iso(datetime.fromtimestamp(info["expires_at"], UTC))
                if not result.token_valid:
                    result.notes.append(f"LinkedIn says the token is {str(info.get('status') or 'inactive')[:20]}.")
                    return result
        async with self._client(account) as client:
            me = await probe(result, call(client, "GET", "/v2/userinfo", network=NETWORK))
        if me is not None:
            body = json_body(me, NETWORK)
            result.token_valid = result.token_valid is not False
            result.reachable = isinstance(body, dict) and bool(body.get("sub"))
            result.account = str(body.get("name") or body.get("sub"))[:200] if isinstance(body, dict) else None
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"LinkedIn has no dynamic options ({kind})")

    @staticmethod
    def _author(account: Account) -> str:
        author = account.provider_account_id or ""
        if not author.startswith(("urn:li:person:", "urn:li:organization:")):
            raise ProviderError("reauth_required", "LinkedIn account has no author URN")
        return author

    async def _put(self, token: str, url: str, data: bytes) -> httpx.Response:
        async with new_client(timeout=self.timeout, headers={"Authorization": f"Bearer {token}"}) as client:
            return await call(client, "PUT", url, network=NETWORK, content=data,
                              headers={"Content-Type": "application/octet-stream"})

    async def _image(self, client: httpx.AsyncClient, token: str, author: str, media: dict[str, Any]) -> str:
        value = _value(await call(client, "POST", "/rest/images", network=NETWORK, classify=_classify,
                                  params={"action": "initializeUpload"},
                                  json={"initializeUploadRequest": {"owner": author}}),
                       "image initializeUpload", "uploadUrl", "image")
        await self._put(token, str(value["uploadUrl"]), await download(str(media["url"]), NETWORK))
        return str(value["image"])

    async def _video(self, client: httpx.AsyncClient, token: str, author: str, media: dict[str, Any]) -> str:
        data = await download(str(media["url"]), NETWORK)
        value = _value(await call(client, "POST", "/rest/videos", network=NETWORK, classify=_classify,
                                  params={"action": "initializeUpload"}, json={"initializeUploadRequest": {
                                      "owner": author, "fileSizeBytes": len(data), "uploadCaptions": False,
                                      "uploadThumbnail": False}}), "video initializeUpload", "video")
        video, parts = str(value["video"]), value.get("uploadInstructions")
        if not isinstance(parts, list) or not parts:
            raise ProviderError("malformed", "LinkedIn video initializeUpload answered without upload instructions")
        etags = []
        for part in parts[:1000]:
            first, last = int(part.get("firstByte", 0)), int(part.get("lastByte", len(data) - 1))
            answer = await self._put(token, str(part.get("uploadUrl")), data[first:last + 1])
            etag = answer.headers.get("etag")
            if not etag:
                raise ProviderError("malformed", "LinkedIn video part upload answered without an ETag")
            etags.append(etag)
        await call(client, "POST", "/rest/videos", network=NETWORK, classify=_classify,
                   params={"action": "finalizeUpload"}, json={"finalizeUploadRequest": {
                       "video": video, "uploadToken": str(value.get("uploadToken") or ""), "uploadedPartIds": etags}})
        await self._available(client, video)
        return video

    async def _available(self, client: httpx.AsyncClient, video: str) -> None:
        waited, wait = 0.0, self.poll_min
        for _ in range(MAX_POLLS):
            body = json_body(await call(client, "GET", f"/rest/videos/{quote(video, safe='')}", network=NETWORK,
                                        classify=_classify), NETWORK)
            status = body.get("status") if isinstance(body, dict) else None
            if status == "AVAILABLE":
                return
            if status == "PROCESSING_FAILED":
                found = re.match(r"[A-Za-z0-9_ ]{1,80}", str(body.get("processingFailureReason") or ""))
                reason = found.group(0).strip() if found else ""
                raise ProviderError("rejected", f"LinkedIn video {video} processing failed",
                                    safe_reason="LinkedIn could not process the video" +
                                    (f": {reason}." if reason else "."))
            if status not in ("PROCESSING", "WAITING_UPLOAD", None):
                raise ProviderError("malformed", f"LinkedIn video status {str(status)[:40]}")
            if waited + wait > self.processing_budget:
                break
            await anyio.sleep(wait)
            waited += wait
            wait = min(max(wait * 2, self.poll_min), POLL_MAX)
        raise ProviderError("transient", f"LinkedIn video {video} still processing",
                            safe_reason="LinkedIn is still processing the video; it is tried again later.")

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        author, token, settings = self._author(account), _token(account), post.settings or {}
        post_type = post.post_type or "LI_TEXT"
        body: dict[str, Any] = {
            "author": author, "commentary": little_text(post.text),
            "visibility": "CONNECTIONS" if settings.get("visibility") == "CONNECTIONS" else "PUBLIC",
            "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [],
                             "thirdPartyDistributionChannels": []},
            "lifecycleState": "PUBLISHED", "isReshareDisabledByAuthor": False}
        async with self._client(account) as client:
            if post_type == "LI_ARTICLE":
                url = settings.get("original_url")
                if not url:
                    raise ProviderError("rejected", "LinkedIn article without original_url",
                                        safe_reason="LinkedIn refused the post: an article needs its URL.")
                article: dict[str, Any] = {"source": str(url)}
                if post.title or settings.get("title"):
                    article["title"] = str(settings.get("title") or post.title)[:400]
                if post.media:
                    article["thumbnail"] = await self._image(client, token, author, post.media[0])
                body["content"] = {"article": article}
            elif post_type == "LI_VIDEO" and post.media:
                video = await self._video(client, token, author, post.media[0])
                body["content"] = {"media": {"id": video, **({"title": post.title[:200]} if post.title else {})}}
            elif post.media:
                images = [await self._image(client, token, author, m) for m in post.media[:20]]
                body["content"] = {"media": {"id": images[0]}} if len(images) == 1 else \
                    {"multiImage": {"images": [{"id": i} for i in images]}}
            try:
                response = await call(client, "POST", "/rest/posts", network=NETWORK, classify=_classify, json=body)
            except _Duplicate as dup:  # LinkedIn already has this exact post: an earlier attempt's
                return PostResult(publish_id=dup.urn, permalink_url=self._permalink(dup.urn))
        urn = response.headers.get("x-restli-id")
        if not urn:
            raise ProviderError("malformed", "LinkedIn post answered without x-restli-id")
        return PostResult(publish_id=urn, permalink_url=self._permalink(urn))

    @staticmethod
    def _permalink(urn: str) -> str:
        return f"https://www.linkedin.com/feed/update/{urn}"

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        author = self._author(account)
        if not author.startswith("urn:li:organization:"):
            return None  # a member's posts cannot be read without a restricted permission (documented)
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", "/rest/posts", network=NETWORK, classify=_classify, params={
                "author": author, "q": "author", "count": str(RECENT_MAX), "sortBy": "LAST_MODIFIED"}), NETWORK)
        items = body.get("elements") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "LinkedIn posts list answered an unexpected shape")
        want, floor = little_text(post.text), since.timestamp() * 1000
        for item in items:
            if isinstance(item, dict) and item.get("id") and item.get("commentary") == want \
                    and float(item.get("createdAt") or 0) >= floor:
                return PostResult(publish_id=str(item["id"]), permalink_url=self._permalink(str(item["id"])))
        return None

    async def post_metrics(self, account: Account, publish_id: str, *, published_at: datetime,
                           now: datetime) -> PostMetrics:
        """The post's lifetime counts: Member Post Statistics for a member's post, Organization Share Statistics
        for an organization's (module docstring). A post LinkedIn answers 404 for is gone."""
        found = _POST_URN.fullmatch(publish_id)
        if not found:
            raise ProviderError("malformed", "LinkedIn post ID is not a share or ugcPost URN")
        author = self._author(account)
        try:
            async with self._client(account) as client:
                if author.startswith("urn:li:organization:"):
                    return await self._organization_metrics(client, author, publish_id, found.group(1))
                return await self._member_metrics(client, publish_id, found.group(1))
        except ProviderError as exc:
            if "answered 404" in exc.message:
                return PostMetrics(gone=True)
            raise

    async def _member_metrics(self, client: httpx.AsyncClient, urn: str, kind: str) -> PostMetrics:
        entity = f"({'share' if kind == 'share' else 'ugc'}:{_restli(urn)})"
        raw: dict[str, Any] = {}
        for query_type in MEMBER_METRICS:
            body = json_body(await call(
                client, "GET", f"/rest/memberCreatorPostAnalytics?q=entity&entity={entity}&queryType={query_type}"
                               "&aggregation=TOTAL", network=NETWORK, classify=_metrics_classify), NETWORK)
            elements = body.get("elements") if isinstance(body, dict) else None
            if not isinstance(elements, list):
                raise ProviderError("malformed", "LinkedIn memberCreatorPostAnalytics answered without elements")
            for element in elements[:10]:
                # `metricType` is a plain string since 202605, a union ({"com.linkedin...V1": "IMPRESSION"}) before
                kind_of = element.get("metricType") if isinstance(element, dict) else None
                if isinstance(kind_of, dict):
                    kind_of = next(iter(kind_of.values()), None)
                if kind_of in (query_type, None) and number(element.get("count")) is not None:
                    raw[query_type] = element["count"]  # no element: LinkedIn reported nothing, not 0
                    break
        return from_raw(raw, MEMBER_COMMON)

    async def _organization_metrics(self, client: httpx.AsyncClient, organization: str, urn: str,
                                    kind: str) -> PostMetrics:
        which = "shares" if kind == "share" else "ugcPosts"
        body = json_body(await call(
            client, "GET", f"/rest/organizationalEntityShareStatistics?q=organizationalEntity"
                           f"&organizationalEntity={_restli(organization)}&{which}=List({_restli(urn)})",
            network=NETWORK, classify=_metrics_classify), NETWORK)
        elements = body.get("elements") if isinstance(body, dict) else None
        if not isinstance(elements, list):
            raise ProviderError("malformed", "LinkedIn organizationalEntityShareStatistics answered without elements")
        key = "share" if kind == "share" else "ugcPost"
        for element in elements[:50]:
            if isinstance(element, dict) and element.get(key) in (urn, None):
                totals = element.get("totalShareStatistics")
                if not isinstance(totals, dict):
                    raise ProviderError("malformed", "LinkedIn share statistics answered without totals")
                return from_raw(totals, ORGANIZATION_COMMON)
        # Left out of the answer: the reference says a post without actions or impressions is not returned.
        return from_raw(dict.fromkeys(ORGANIZATION_COMMON, 0), ORGANIZATION_COMMON)

    async def delete_post(self, account: Account, publish_id: str) -> None:
        async with self._client(account) as client:
            try:
                await call(client, "DELETE", f"/rest/posts/{quote(publish_id, safe='')}", network=NETWORK,
                           headers={"X-RestLi-Method": "DELETE"})
            except ProviderError as exc:
                if "404" not in exc.message:
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        creds = dict(account.credentials or {})
        if creds.get("refresh_token"):
            if not refresh_due(creds, now, REFRESH_AHEAD):
                return None
            token = await token_request("POST", self.token_url, network=NETWORK, refused_kind="reauth_required",
                                        data={"grant_type": "refresh_token", "refresh_token": str(creds["refresh_token"]),
                                              "client_id": str(creds.get("client_id") or ""),
                                              "client_secret": str(creds.get("client_secret") or "")})
            fresh = {**creds, "access_token": token["access_token"]}
            if token.get("refresh_token"):
                fresh["refresh_token"] = token["refresh_token"]
            fresh["expires_at"] = iso(now + timedelta(seconds=int(token.get("expires_in") or 60 * 86400)))
            return fresh
        expires = creds.get("expires_at")
        if expires:
            try:
                expired = parse_timestamp(str(expires)) <= now
            except ValueError:
                expired = False
            if expired:  # nothing to refresh with: the member must authorise again
                raise ProviderError("reauth_required", "LinkedIn token expired without a refresh token",
                                    safe_reason="LinkedIn's authorisation expired; connect the account again.")
        return None  # the token tick sends the reconnect notice ahead of expiry (reconnect_notice_ahead)
