"""Helpers of the console tests: users, a browser-like client per user, CSRF tokens from pages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import httpx
from argon2 import PasswordHasher
from argon2.exceptions import VerifyMismatchError

from server.console import identity
from storage.tables.accounts import Workspace

PASSWORD = "correct horse battery staple"
X_POST = {"name": "Hello", "copy_mode": "single",
          "single_copy": {"caption": "Fresh roast today", "hashtags": [], "title": None}, "x_settings": {}}


# A password hash or verify costs ~0.2 s of CPU (argon2id at the product's parameters, p=4): the in-process console
# tests made ~150 hashes and ~360 verifies per run, most of them set-up (users, sign-ins) or throttle tests'
# guesses. Inside `reusing_password_work` the work is done once per process by the product's own hasher and then
# reused: hashing PASSWORD gives the first hash made of it (every user shares that salt), and verifying a hash and
# password seen before answers as argon2 did then (verify is a pure function: a match returns True, a mismatch
# raises VerifyMismatchError again). Every outcome is the one argon2 gives; only its cost is paid once. The product
# paths that set a password (invitations, `users create`, resets) hash afresh.
_HASHES: dict[tuple[Any, ...], str] = {}
_VERIFIED: dict[tuple[str | bytes, str | bytes], bool] = {}


@contextmanager
def reusing_password_work() -> Iterator[None]:
    real_hash, real_verify = PasswordHasher.hash, PasswordHasher.verify

    def hash_once(self: PasswordHasher, password: str | bytes, *, salt: bytes | None = None) -> str:
        if password != PASSWORD or salt is not None:
            return real_hash(self, password, salt=salt)
        key = (self.type, self.time_cost, self.memory_cost, self.parallelism, self.hash_len, self.salt_len)
        if key not in _HASHES:
            _HASHES[key] = real_hash(self, password)
        return _HASHES[key]

    def verify_once(self: PasswordHasher, hash: str | bytes, password: str | bytes) -> Literal[True]:
        if (hash, password) not in _VERIFIED:
            try:
                real_verify(self, hash, password)  # an invalid hash raises InvalidHashError: nothing remembered
            except VerifyMismatchError:
                _VERIFIED[hash, password] = False
                raise
            _VERIFIED[hash, password] = True
        if not _VERIFIED[hash, password]:
            raise VerifyMismatchError
        return True

    PasswordHasher.hash, PasswordHasher.verify = hash_once, verify_once
    try:
        yield
    finally:
        PasswordHasher.hash, PasswordHasher.verify = real_hash, real_verify


async def make_user(env: Any, ws: Workspace, email: str, role: str = "admin") -> Any:
    with reusing_password_work():
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
    with reusing_password_work():
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
