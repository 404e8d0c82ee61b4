"""Helpers of the real-network tests: a running mastodon-mock server (a real Mastodon-shaped HTTP server from
PyPI, on 127.0.0.1), secrets the tests plant and then look for, and the draft → preflight → approved Schedule
flow through the public routes."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from tests.support import Env

MASTODON_TOKEN = "alice_token"  # a seeded account of mastodon-mock's default seed
# Secrets planted in the accounts of these tests: no response body and no log line may contain them.
TELEGRAM_BOT_TOKEN = "123456789:AAH-planted-secret-bot-token_x9"
DISCORD_WEBHOOK = "https://discord.com/api/webhooks/223344556677889900/planted-secret-webhook-token_q7"
# What the adapter calls for it: the same webhook on the pinned API version (the OpenAPI server /api/v10).
DISCORD_ENDPOINT = "https://discord.com/api/v10/webhooks/223344556677889900/planted-secret-webhook-token_q7"
TELEGRAM_API = "https://telegram.test"


@pytest.fixture(scope="session")
def mastodon_server() -> Any:
    """mastodon-mock in a thread (uvicorn, free port). Skips with the reason when it cannot start."""
    try:
        from mastodon_mock.testing import MockServer
    except ImportError as exc:  # pragma: no cover - installed by the test extra
        pytest.skip(f"mastodon-mock is not installed ({exc}); pip install -e '.[test]'")
    server = MockServer()
    try:
        server.start()
    except (RuntimeError, TimeoutError) as exc:  # pragma: no cover
        pytest.skip(f"mastodon-mock could not start: {exc}")
    yield server
    server.stop()


def mastodon_url(server: Any) -> str:
    return server.base_url


def fault(server: Any, rule: dict[str, Any]) -> None:
    httpx.post(f"{server.base_url}/api/v1/_mock/faults", json=rule).raise_for_status()


def clear_faults(server: Any) -> None:
    httpx.delete(f"{server.base_url}/api/v1/_mock/faults").raise_for_status()


def status_of(server: Any, status_id: str) -> dict[str, Any]:
    resp = httpx.get(f"{server.base_url}/api/v1/statuses/{status_id}",
                     headers={"Authorization": f"Bearer {MASTODON_TOKEN}"})
    resp.raise_for_status()
    return resp.json()


def statuses_of_alice(server: Any) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {MASTODON_TOKEN}"}
    me = httpx.get(f"{server.base_url}/api/v1/accounts/verify_credentials", headers=headers).json()
    return httpx.get(f"{server.base_url}/api/v1/accounts/{me['id']}/statuses", headers=headers,
                     params={"limit": 40}).json()


class Flow:
    """A workspace, a brand and a full-scope key; drafts, preflight and approved Schedules through REST."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.bodies: list[str] = []  # every response body read, for the secret grep

    async def setup(self) -> Flow:
        self.ws = await self.env.workspace()
        self.brand = await self.env.brand(self.ws)
        self.key = await self.env.key(self.ws, role="admin")
        return self

    async def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        resp = await self.env.rest.request(method, path, headers=self.env.auth(self.key, **kwargs.pop("headers", {})),
                                           **kwargs)
        self.bodies.append(resp.text)
        assert resp.status_code < 300, (path, resp.status_code, resp.text)
        return resp.json()

    async def draft(self, caption: str, **settings: Any) -> str:
        body = {"name": "Launch", "copy_mode": "single",
                "single_copy": {"caption": caption, "hashtags": [], "title": None}, **settings}
        out = await self.request("POST", f"/v1/brands/{self.brand.id}/content-items", json=body)
        return out["data"]["content_item"]["id"]

    async def preflight(self, item_id: str, integration_ids: list[str]) -> dict[str, Any]:
        return (await self.request("POST", f"/v1/brands/{self.brand.id}/content-items/{item_id}/preflight",
                                   json={"integration_ids": integration_ids}))["data"]

    async def schedule(self, item_id: str, integration_ids: list[str]) -> str:
        when = self.env.clock.now().replace(microsecond=0)
        from datetime import timedelta

        out = await self.env.call("create_schedule", self.key, idempotency_key=f"k-{uuid.uuid4()}",
                                  brand_id=self.brand.id, content_item_id=item_id,
                                  scheduled_at=(when + timedelta(minutes=5)).isoformat().replace("+00:00", "Z"),
                                  integration_ids=integration_ids, approval_status="approved")
        self.bodies.append(str(out.body))
        assert out.status == 201 and out.body is not None, out.body
        return out.body["data"]["schedule"]["id"]

    async def outcome(self, schedule_id: str) -> dict[str, Any]:
        """The schedule, its receipt, History and Publications after the run, as clients read them."""
        b = self.brand.id
        return {
            "schedule": (await self.request("GET", f"/v1/brands/{b}/schedules/{schedule_id}"))["data"],
            "receipt": (await self.request("GET", f"/v1/brands/{b}/schedules/{schedule_id}/receipt"))["data"],
            "history": (await self.request("GET", f"/v1/brands/{b}/history"))["data"],
            "publications": (await self.request("GET", f"/v1/brands/{b}/publications"))["data"],
            "targets": (await self.request("GET", f"/v1/brands/{b}/targets"))["data"],
        }


def assert_no_secrets(texts: list[str], secrets: list[str]) -> None:
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"a planted secret leaked: {secret[:6]}… in {text[:200]}"
