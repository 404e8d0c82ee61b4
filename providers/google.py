"""What YouTube and Google Business Profile share: Google's OAuth 2.0 endpoints (authorization code with
`access_type=offline` and `prompt=consent`, so every consent returns a refresh token) and the classification of
Google API error bodies (`{"error": {"code", "status", "errors": [{"reason"}]}}`).

The endpoints are `SOCIALPUB_GOOGLE_AUTHORIZE_URL` (default https://accounts.google.com/o/oauth2/v2/auth) and
`SOCIALPUB_GOOGLE_TOKEN_URL` (default https://oauth2.googleapis.com/token). Google does not rotate refresh
tokens; a refused refresh (`invalid_grant`: revoked, or a testing-mode app's 7-day expiry) is reauth_required.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from providers.base import CheckResult, ProviderError, probe
from providers.http import call, json_body, new_client, retry_after
from providers.oauth import refresh_due, refreshed
from schemas.time import iso

AUTHORIZE_URL = os.environ.get("SOCIALPUB_GOOGLE_AUTHORIZE_URL", "https://accounts.google.com/o/oauth2/v2/auth")
TOKEN_URL = os.environ.get("SOCIALPUB_GOOGLE_TOKEN_URL", "https://oauth2.googleapis.com/token")
AUTHORIZE_PARAMS = {"access_type": "offline", "prompt": "consent"}
REFRESH_AHEAD = timedelta(minutes=10)  # Google access tokens last an hour
_RATE = {"quotaExceeded", "rateLimitExceeded", "userRateLimitExceeded", "dailyLimitExceeded", "RESOURCE_EXHAUSTED"}


def reasons(response: httpx.Response) -> set[str]:
    """The `errors[].reason` and `status` values of a Google error body (empty when it is not one)."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return set()
    if not isinstance(error, dict):
        return set()
    found = {str(e.get("reason")) for e in error.get("errors") or [] if isinstance(e, dict) and e.get("reason")}
    if error.get("status"):
        found.add(str(error["status"]))
    return found


def classifier(network: str, refusals: dict[str, str]) -> Any:
    """Google's error reasons first (quota → rate_limited; a known refusal → its sentence), else the status rules."""
    def classify(response: httpx.Response) -> ProviderError | None:
        found = reasons(response)
        where = f"{network} answered {response.status_code} ({','.join(sorted(found))[:80]}) to " \
                f"{response.request.url.path}"
        if found & _RATE:
            return ProviderError("rate_limited", where, retry_after=retry_after(response))
        for reason, sentence in refusals.items():
            if reason in found:
                return ProviderError("rejected", where, safe_reason=f"{network} refused the post: {sentence}.")
        return None
    return classify


async def refresh(credentials: dict[str, Any], now: datetime, network: str,
                  token_url: str = TOKEN_URL) -> dict[str, Any] | None:
    """Fresh Google credentials when the stored ones expire within REFRESH_AHEAD, else None."""
    if not refresh_due(credentials, now, REFRESH_AHEAD):
        return None
    return await refreshed(credentials, now, token_url, network=network)


TOKENINFO_URL = os.environ.get("SOCIALPUB_GOOGLE_TOKENINFO_URL", "https://oauth2.googleapis.com/tokeninfo")


async def tokeninfo(result: CheckResult, token: str, network: str, url: str = TOKENINFO_URL) -> None:
    """Google's token introspection (https://developers.google.com/identity/sign-in/web/backend-auth and
    https://cloud.google.com/docs/authentication/token-types#access-tokens: `tokeninfo` answers `scope`,
    space-separated, and `expires_in`), sent as a form POST so the token never sits in a URL. An unknown or expired
    token answers 400 `invalid_token`. Fills the CheckResult `result`; a failure is recorded on it."""
    def refused(response: httpx.Response) -> ProviderError | None:
        if response.status_code in (400, 401):
            return ProviderError("reauth_required", f"{network} tokeninfo answered {response.status_code}")
        return None

    async def ask() -> Any:
        async with new_client() as client:
            return json_body(await call(client, "POST", url, network=network, classify=refused,
                                        data={"access_token": token}), network)

    info = await probe(result, ask())
    if not isinstance(info, dict):
        return
    result.token_valid = True
    if isinstance(info.get("scope"), str):
        result.granted_scopes = tuple(info["scope"].split())
        result.scopes_source = "introspected"
    try:
        seconds = int(info["expires_in"])
    except (KeyError, TypeError, ValueError):
        return
    result.expires_at = iso(datetime.now(UTC) + timedelta(seconds=seconds))
