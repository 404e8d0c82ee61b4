"""The console's sign-in throttle keys on the client address as resolved through the trusted proxies only
(`SOCIALPUB_TRUSTED_PROXIES` / `serve --forwarded-allow-ips`), and on the account in a way that wrong
passwords from one place never lock out the right password from another (docs/decisions.md, "Sign-in
throttle"). In-process through the app's ASGI surface with a chosen peer address; the same through a real
`socialpub serve` in tests/operations/test_trusted_proxies.py."""

from __future__ import annotations

import httpx
import pytest

from tests.console.support import PASSWORD, csrf_of, make_user, reusing_password_work

pytestmark = pytest.mark.anyio

PROXY = "10.0.0.1"


def browser(env, peer: str, forwarded_for: str | None = None) -> httpx.AsyncClient:
    """A browser whose TCP peer (as the server sees it) is `peer`, optionally sending X-Forwarded-For."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=env.app, client=(peer, 40000)),
                             base_url="http://testserver", headers=headers)


async def attempt(b: httpx.AsyncClient, email: str, password: str, forwarded_for: str | None = None) -> int:
    page = await b.get("/console/sign-in")
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    with reusing_password_work():  # tests/console/support.py: argon2's answers, its cost paid once
        resp = await b.post("/console/sign-in", headers=headers,
                            data={"csrf": csrf_of(page.text), "email": email, "password": password})
    return resp.status_code


async def _users(env) -> None:
    ws = await env.workspace("Workspace A")
    await make_user(env, ws, "admin@a.example", "admin")
    await make_user(env, ws, "member@a.example", "member")


async def test_behind_a_trusted_proxy_each_client_has_its_own_budget(env_factory) -> None:
    async with env_factory(trusted_proxies=("10.0.0.0/24",)) as env:
        await _users(env)
        attacker = browser(env, PROXY)
        # 30 wrong attempts over many accounts exhaust the attacker's address budget, whatever it prepends
        # to X-Forwarded-For: the proxy appends the real peer, and that is the address that counts.
        for n in range(30):
            spoof = f"192.0.2.{n}, 203.0.113.5"
            assert await attempt(attacker, f"nobody{n}@a.example", "wrong password!", spoof) == 401, n
        assert await attempt(attacker, "admin@a.example", PASSWORD, "192.0.2.99, 203.0.113.5") == 429
        # another user behind the same proxy is unaffected: the proxy's address is no shared bucket
        assert await attempt(browser(env, PROXY), "admin@a.example", PASSWORD, "203.0.113.6") == 303
        # the same header from a peer outside the trusted range is ignored: it counts as that peer
        outsider = browser(env, "198.51.100.7")
        for n in range(30):
            assert await attempt(outsider, f"nobody{n}@a.example", "wrong password!", "203.0.113.6") == 401
        assert await attempt(outsider, "member@a.example", PASSWORD, "203.0.113.77") == 429
        assert await attempt(browser(env, PROXY), "member@a.example", PASSWORD, "203.0.113.6") == 303


async def test_a_spoofed_header_from_an_untrusted_address_is_ignored(env) -> None:
    await _users(env)
    outsider = browser(env, "198.51.100.7")
    for n in range(30):  # a new X-Forwarded-For on every attempt does not buy a new budget
        assert await attempt(outsider, f"nobody{n}@a.example", "wrong password!", f"203.0.113.{n}") == 401, n
    assert await attempt(outsider, "admin@a.example", PASSWORD, "203.0.113.200") == 429
    assert await attempt(browser(env, "198.51.100.8"), "admin@a.example", PASSWORD) == 303


async def test_wrong_passwords_elsewhere_never_lock_out_the_right_one(env) -> None:
    await _users(env)
    attacker = browser(env, "198.51.100.7")
    for _ in range(5):
        assert await attempt(attacker, "admin@a.example", "wrong password!") == 401
    resp_status = await attempt(attacker, "admin@a.example", PASSWORD)
    assert resp_status == 429  # this address has had its guesses at this account
    assert await attempt(browser(env, "203.0.113.9"), "admin@a.example", PASSWORD) == 303

    # Many addresses, one wrong guess each: past 10 failures in 5 minutes the account is under attack, and then
    # an address may try it only if it has not failed on it in the last 15 minutes: a second guess from any
    # of them waits, a first guess from a fresh address (the real user's) is still judged on its password.
    for n in range(10, 20):
        assert await attempt(browser(env, f"198.51.100.{n}"), "member@a.example", "wrong password!") == 401, n
    for n in range(10, 20):
        assert await attempt(browser(env, f"198.51.100.{n}"), "member@a.example", "wrong password!") == 429, n
    assert await attempt(browser(env, "198.51.100.50"), "member@a.example", "wrong password!") == 401
    assert await attempt(browser(env, "198.51.100.50"), "member@a.example", PASSWORD) == 429
    assert await attempt(browser(env, "203.0.113.9"), "member@a.example", PASSWORD) == 303
    env.clock.advance(minutes=15)  # an address that failed is fresh again 15 minutes later
    assert await attempt(browser(env, "198.51.100.10"), "member@a.example", PASSWORD) == 303
    # a right password is no failure: the same address signs in again as often as it likes
    for _ in range(8):
        assert await attempt(browser(env, "203.0.113.9"), "member@a.example", PASSWORD) == 303
