"""providers/http.py: every failure becomes the same error kind whichever adapter calls, and no body leaks."""

from __future__ import annotations

import httpx
import pytest

from providers.base import ProviderError
from providers.http import call, json_body, new_client, retry_after

SECRET_BODY = '{"error":"InvalidToken","message":"token sbx_secret_123 is bad"}'


def _client(status: int, headers: dict[str, str] | None = None, body: str = SECRET_BODY) -> httpx.AsyncClient:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers=headers or {}, text=body)
    return new_client("https://net.example", transport=httpx.MockTransport(handler))


@pytest.mark.anyio
@pytest.mark.parametrize(("status", "kind"), [(401, "reauth_required"), (429, "rate_limited"), (500, "transient"),
                                              (503, "unavailable"), (400, "rejected"), (403, "rejected")])
async def test_status_classification(status: int, kind: str) -> None:
    async with _client(status) as client:
        with pytest.raises(ProviderError) as info:
            await call(client, "POST", "/post", network="Example")
    assert info.value.kind == kind
    assert "sbx_secret_123" not in info.value.message and "sbx_secret_123" not in (info.value.safe_reason or "")
    assert "Example answered" in info.value.message and "/post" in info.value.message


@pytest.mark.anyio
async def test_success_and_custom_classifier() -> None:
    async with _client(200, body='{"ok": true}') as client:
        assert json_body(await call(client, "GET", "/x", network="Example"), "Example") == {"ok": True}
    async with _client(400) as client:
        def expired(response: httpx.Response) -> ProviderError | None:
            return ProviderError("reauth_required", "expired") if "InvalidToken" in response.text else None
        with pytest.raises(ProviderError) as info:
            await call(client, "GET", "/x", network="Example", classify=expired)
    assert info.value.kind == "reauth_required"


@pytest.mark.anyio
async def test_timeouts_and_transport_errors_are_transient() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)
    async with new_client("https://net.example", transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(ProviderError) as info:
            await call(client, "GET", "/x", network="Example")
    assert info.value.kind == "transient"

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)
    async with new_client("https://net.example", transport=httpx.MockTransport(refuse)) as client:
        with pytest.raises(ProviderError) as info:
            await call(client, "GET", "/x", network="Example")
    assert info.value.kind == "transient"


@pytest.mark.anyio
async def test_not_json_is_malformed() -> None:
    async with _client(200, body="<html>") as client:
        response = await call(client, "GET", "/x", network="Example")
    with pytest.raises(ProviderError) as info:
        json_body(response, "Example")
    assert info.value.kind == "malformed"


def test_retry_after_forms() -> None:
    request = httpx.Request("GET", "https://net.example/x")
    assert retry_after(httpx.Response(429, headers={"Retry-After": "7"}, request=request)) == 7
    assert retry_after(httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:10 GMT"},
                                      request=request), now=1445412480.0) == 10.0
    assert retry_after(httpx.Response(429, headers={"ratelimit-reset": "1000000100"}, request=request),
                       now=1000000000.0) == 100.0
    assert retry_after(httpx.Response(429, headers={"x-ratelimit-reset": "30"}, request=request), now=5.0) == 30.0
    assert retry_after(httpx.Response(429, headers={"Retry-After": "999999"}, request=request)) == 3600.0
    assert retry_after(httpx.Response(429, request=request)) is None
