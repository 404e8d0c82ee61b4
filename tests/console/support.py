"""Helpers of the console tests: users, a browser-like client per user, CSRF tokens from pages."""

from __future__ import annotations

import re
from typing import Any

import httpx

from server.console import identity
from storage.tables.accounts import Workspace

PASSWORD = "correct horse battery staple"
X_POST = {"name": "Hello", "copy_mode": "single",
          "single_copy": {"caption": "Fresh roast today", "hashtags": [], "title": None}, "x_settings": {}}


async def make_user(env: Any, ws: Workspace, email: str, role: str = "admin") -> Any:
    async with env.db.session(write=True) as s:
        _user, login = await identity.create_user(s, env.clock.now(), ws, email, PASSWORD, role=role)
    return login


def client(env: Any, base_url: str = "http://testserver") -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=env.app), base_url=base_url)


def csrf_of(html: str) -> str:
    return value_of(html, "csrf")


def value_of(html: str, name: str) -> str:
    """The value of the page's input field `name` (as written in the HTML: entities not decoded)."""
    found = re.search(f'name="{name}" value="([^"]+)"', html)
    assert found, f"the page has no {name} field"
    return found.group(1)


async def sign_in(browser: httpx.AsyncClient, email: str, password: str = PASSWORD) -> httpx.Response:
    page = await browser.get("/console/sign-in")
    return await browser.post("/console/sign-in", data={"csrf": csrf_of(page.text), "email": email,
                                                        "password": password})


async def signed_in(env: Any, email: str, base_url: str = "http://testserver") -> httpx.AsyncClient:
    browser = client(env, base_url)
    resp = await sign_in(browser, email)
    assert resp.status_code == 303 and resp.headers["location"] == "/console/", resp.text
    return browser


async def held_schedule(env: Any, brand: Any, key: str, integration_id: str, at: str) -> str:
    resp = await env.rest.post(f"/v1/brands/{brand.id}/content-items", json=X_POST, headers=env.auth(key))
    assert resp.status_code == 201, resp.text
    item = resp.json()["data"]["content_item"]["id"]
    resp = await env.rest.post(f"/v1/brands/{brand.id}/schedules", headers=env.auth(key, Idempotency_Key="held-1"),
                               json={"content_item_id": item, "integration_ids": [integration_id],
                                     "scheduled_at": at, "approval_status": "pending_review"})
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]["schedule"]["id"]
