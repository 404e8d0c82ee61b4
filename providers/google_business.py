"""Google Business Profile "What's new" posts through the My Business API v4 `localPosts`, with a Google OAuth
user token (providers/google.py) that manages the location.

- Post: `POST /v4/accounts/{a}/locations/{l}/localPosts` with `topicType=STANDARD`, `summary` (the copy,
  up to 1,500 characters), `languageCode`, optional `media` (`mediaFormat=PHOTO`, `sourceUrl`) and
  `callToAction` (`actionType`, `url`). Answer: the LocalPost (`name` …/localPosts/{id}, `state`, `searchUrl`);
  `state=REJECTED` is a refusal.
- Account: the location is `accounts/{a}/locations/{l}`. At connect the account's locations are listed
  (Account Management `GET /v1/accounts`, Business Information `GET /v1/{account}/locations?readMask=name,title`);
  several: the first is connected and the others recorded as `candidates` for `integrations select-account`.
- Exactly-once: no idempotency key. `find_post_matching` lists the location's posts (`GET …/localPosts`) and
  recognises one created since the run began with exactly the post's summary.
- Errors: Google's error reasons (quota → rate_limited), then the status rules.

Bases: `SOCIALPUB_GBP_API_URL` (default https://mybusiness.googleapis.com), `SOCIALPUB_GBP_ACCOUNTS_URL`
(https://mybusinessaccountmanagement.googleapis.com), `SOCIALPUB_GBP_INFO_URL`
(https://mybusinessbusinessinformation.googleapis.com).
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import httpx

from providers import google
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
from providers.http import DEFAULT_TIMEOUT, call, json_body, new_client
from schemas.time import parse_timestamp

NETWORK = "Google Business Profile"
API_URL = os.environ.get("SOCIALPUB_GBP_API_URL", "https://mybusiness.googleapis.com").rstrip("/")
ACCOUNTS_URL = os.environ.get("SOCIALPUB_GBP_ACCOUNTS_URL",
                              "https://mybusinessaccountmanagement.googleapis.com").rstrip("/")
INFO_URL = os.environ.get("SOCIALPUB_GBP_INFO_URL", "https://mybusinessbusinessinformation.googleapis.com").rstrip("/")
SCOPES = ("https://www.googleapis.com/auth/business.manage",)
SUMMARY_MAX = 1500
RECENT_MAX = 100
LOCATIONS_MAX = 100
_classify = google.classifier(NETWORK, {"INVALID_ARGUMENT": "the post was not accepted (Google rejects phone "
                                                            "numbers and some links in posts)"})


def _token(account: Account) -> str:
    token = (account.credentials or {}).get("access_token")
    if not isinstance(token, str) or not token:
        raise ProviderError("reauth_required", "Google Business Profile account has no access token")
    return token


async def verify(server: str, token: str) -> Connection:
    """The locations the authorising user manages; the first is connected, all are candidates."""
    headers = {"Authorization": f"Bearer {token}"}
    async with new_client(ACCOUNTS_URL, headers=headers) as client:
        body = json_body(await call(client, "GET", "/v1/accounts", network=NETWORK, classify=_classify,
                                    params={"pageSize": "20"}), NETWORK)
    accounts = [a for a in (body.get("accounts") or []) if isinstance(a, dict)
                and str(a.get("name") or "").startswith("accounts/")] if isinstance(body, dict) else []
    found: list[dict[str, str]] = []
    async with new_client(INFO_URL, headers=headers) as client:
        for acc in accounts[:20]:
            body = json_body(await call(client, "GET", f"/v1/{acc['name']}/locations", network=NETWORK,
                                        classify=_classify, params={"readMask": "name,title",
                                                                    "pageSize": str(LOCATIONS_MAX)}), NETWORK)
            for loc in (body.get("locations") or []) if isinstance(body, dict) else []:
                name = str(loc.get("name") or "") if isinstance(loc, dict) else ""
                if name.startswith("locations/"):
                    found.append({"id": f"{acc['name']}/{name}"[:200], "username": str(loc.get("title") or "")[:200]})
    if not found:
        raise ProviderError("rejected", "no Business Profile location",
                            safe_reason="the Google account manages no Business Profile location")
    first = found[0]
    return Connection(provider_account_id=first["id"], username=first["username"] or None,
                      display_name=first["username"] or None, credentials={},
                      state={"username": first["username"], "candidates": found[:50]})


# The scope every operation needs: business.manage, the only OAuth scope of the Business Profile APIs
# (https://developers.google.com/my-business/content/implement-oauth and each method's Authorization section,
# e.g. https://developers.google.com/my-business/reference/rest/v4/accounts.locations.localPosts/create).
_MANAGE = ("https://www.googleapis.com/auth/business.manage",)
NEEDED_SCOPES: dict[str, tuple[str, ...]] = {
    "publish:GBP_UPDATE": _MANAGE,
    "find_post": _MANAGE,
    "delete_post": _MANAGE,
    "check": _MANAGE,
}


class GoogleBusinessProvider:
    name = "google_business"
    needed_scopes = NEEDED_SCOPES
    tokeninfo_url = google.TOKENINFO_URL
    info_url = INFO_URL

    def __init__(self, *, api_url: str = API_URL, token_url: str = google.TOKEN_URL,
                 timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> None:
        self.api_url, self.token_url, self.timeout = api_url.rstrip("/"), token_url, timeout

    def _client(self, account: Account) -> httpx.AsyncClient:
        return new_client(self.api_url, headers={"Authorization": f"Bearer {_token(account)}"}, timeout=self.timeout)

    @staticmethod
    def _location(account: Account) -> str:
        location = account.provider_account_id or ""
        parts = location.split("/")
        if len(parts) != 4 or parts[0] != "accounts" or parts[2] != "locations" or not all(parts):
            raise ProviderError("reauth_required", "Google Business Profile account has no location")
        return location

    async def check(self, account: Account) -> CheckResult:
        """Google's `tokeninfo` (granted scopes, expiry; providers/google.py) and the location itself
        (Business Information `GET /v1/locations/{id}?readMask=name,title`,
        https://developers.google.com/my-business/reference/businessinformation/rest/v1/locations/get)."""
        result = recorded(account.credentials)
        try:
            token, location = _token(account), self._location(account)
        except ProviderError as exc:
            result.failed(exc)
            return result
        await google.tokeninfo(result, token, NETWORK, self.tokeninfo_url)
        if result.token_valid is False:
            return result
        async def lookup() -> Any:
            async with new_client(self.info_url, headers={"Authorization": f"Bearer {token}"},
                                  timeout=self.timeout) as client:
                return json_body(await call(client, "GET", "/v1/" + "/".join(location.split("/")[2:]),
                                            network=NETWORK, classify=_classify,
                                            params={"readMask": "name,title"}), NETWORK)
        found = await probe(result, lookup())
        if isinstance(found, dict):
            result.token_valid = result.token_valid is not False
            result.reachable = True
            result.account = str(found.get("title") or location)[:200]
        return result

    async def dynamic_options(self, account: Account, kind: str, *, refresh: bool) -> Options:
        raise ProviderError("rejected", f"Google Business Profile has no dynamic options ({kind})")

    def local_post(self, post: PostRequest) -> dict[str, Any]:
        settings = post.settings or {}
        body: dict[str, Any] = {"languageCode": str(settings.get("language_code") or "en"), "topicType": "STANDARD",
                                "summary": post.text[:SUMMARY_MAX]}
        photos = [m for m in post.media if str(m.get("content_type") or "").startswith("image/")][:10]
        if photos:
            body["media"] = [{"mediaFormat": "PHOTO", "sourceUrl": m["url"]} for m in photos]
        link = settings.get("link")
        if isinstance(link, str) and link:
            body["callToAction"] = {"actionType": str(settings.get("action_type") or "LEARN_MORE"), "url": link}
        return body

    async def publish(self, account: Account, post: PostRequest) -> PostResult:
        if not post.text.strip():
            raise ProviderError("rejected", "Google Business post without text",
                                safe_reason=f"{NETWORK} refused the post: an update needs text.")
        async with self._client(account) as client:
            created = json_body(await call(client, "POST", f"/v4/{self._location(account)}/localPosts",
                                           network=NETWORK, classify=_classify, json=self.local_post(post)), NETWORK)
        if not isinstance(created, dict) or not str(created.get("name") or "").startswith(self._location(account)):
            raise ProviderError("malformed", "Google Business Profile answered without the post's name")
        if created.get("state") == "REJECTED":
            raise ProviderError("rejected", "Google Business Profile post REJECTED",
                                safe_reason=f"{NETWORK} refused the post: Google rejected it (its content policy).")
        link = created.get("searchUrl")
        return PostResult(publish_id=str(created["name"]), permalink_url=link if isinstance(link, str) else None)

    async def find_post(self, account: Account, idempotency_token: str) -> PostResult | None:
        return None  # no idempotency key: the worker asks find_post_matching with the post

    async def find_post_matching(self, account: Account, post: PostRequest, since: datetime) -> PostResult | None:
        async with self._client(account) as client:
            body = json_body(await call(client, "GET", f"/v4/{self._location(account)}/localPosts", network=NETWORK,
                                        classify=_classify, params={"pageSize": str(RECENT_MAX)}), NETWORK)
        items = body.get("localPosts", []) if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise ProviderError("malformed", "Google Business Profile localPosts answered an unexpected shape")
        want = post.text[:SUMMARY_MAX]
        for item in items:
            if not isinstance(item, dict) or not item.get("name") or item.get("summary") != want:
                continue
            try:
                recent = parse_timestamp(str(item.get("createTime"))) >= since
            except ValueError:
                recent = False
            if recent:
                link = item.get("searchUrl")
                return PostResult(publish_id=str(item["name"]), permalink_url=link if isinstance(link, str) else None)
        return None

    async def delete_post(self, account: Account, publish_id: str) -> None:
        if not publish_id.startswith(f"{self._location(account)}/localPosts/"):
            raise ProviderError("rejected", "not a post of this location")
        async with self._client(account) as client:
            try:
                await call(client, "DELETE", f"/v4/{publish_id}", network=NETWORK, classify=_classify)
            except ProviderError as exc:
                if "404" not in exc.message:
                    raise

    async def refresh_credentials(self, account: Account, now: datetime) -> dict[str, Any] | None:
        return await google.refresh(dict(account.credentials or {}), now, NETWORK, self.token_url)
