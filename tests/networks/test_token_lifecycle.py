"""Token lifecycles as the networks document them (issue 28, item 5), on both backends:

- Instagram (Facebook Login path, graph.facebook.com): the code's short-lived user token ("expiring in hours") is
  exchanged at connect for a long-lived one, `GET /{version}/oauth/access_token?grant_type=fb_exchange_token&
  client_id&client_secret&fb_exchange_token` → `{access_token, token_type, expires_in}` (about 60 days). Facebook
  Login, "Long-Lived Access Tokens": https://developers.facebook.com/docs/facebook-login/guides/access-tokens/
  get-long-lived. No server-side refresh of a long-lived user token is documented, so when the exchange does not
  extend it the account gets a reconnect notice before it expires.
- Each network's refresh window is the adapter's own (`refresh_ahead`), not a global 30 minutes.
- The tick finds due accounts through the index `ix_integrations_refresh_due` (EXPLAIN on both backends)."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs

import httpx
import pytest
import respx
from sqlalchemy import text
from sqlmodel import select

from providers import instagram, linkedin, x
from providers.base import Connection
from schemas.time import iso
from storage import vault
from storage.tables.brands import Brand
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification
from tests.networks.support import Flow, assert_no_secrets
from tests.networks.test_connect_pages import _callback, _form, _row
from tools.networks import tokens
from tools.operator import actions as operator
from tools.services.accounts import store_credentials

pytestmark = pytest.mark.anyio
SECRET = "app-secret-SECRET"
SHORT, LONG, LONGER = "ig-short-lived-SECRET", "ig-long-lived-SECRET", "ig-exchanged-again-SECRET"
SIXTY_DAYS = 5183944  # Meta's sample `expires_in` of a long-lived user token


def _instagram_routes(router: respx.MockRouter) -> tuple[respx.Route, respx.Route]:
    code = router.post(f"{instagram.GRAPH_URL}/oauth/access_token").mock(
        return_value=httpx.Response(200, json={"access_token": SHORT, "token_type": "bearer", "expires_in": 3600}))
    long = router.get(f"{instagram.GRAPH_URL}/oauth/access_token").mock(
        return_value=httpx.Response(200, json={"access_token": LONG, "token_type": "bearer",
                                               "expires_in": SIXTY_DAYS}))
    router.get(f"{instagram.GRAPH_URL}/me/accounts").mock(return_value=httpx.Response(200, json={"data": [
        {"id": "101", "name": "Roastery", "instagram_business_account": {"id": "17841400000000001",
                                                                          "username": "roastery"}}]}))
    return code, long


async def test_instagram_connect_stores_a_long_lived_token(env) -> None:
    q, redirect = await _callback(env, "instagram")
    with respx.mock(assert_all_mocked=True) as router:
        code, long = _instagram_routes(router)
        done = await env.rest.get("/connect/instagram/callback", params={"state": q["state"], "code": "code-1"})
        assert done.status_code == 200 and "connected" in done.text, done.text
        form = _form(code.calls[0].request)
        assert form["client_id"] == "instagram-app" and form["code"] == "code-1" and form["redirect_uri"] == redirect
        assert {k: v[0] for k, v in parse_qs(long.calls[0].request.url.query.decode()).items()} == {
            "grant_type": "fb_exchange_token", "client_id": "instagram-app", "client_secret": SECRET,
            "fb_exchange_token": SHORT}
    row = await _row(env, "instagram")
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert creds is not None
    expires = env.clock.now() + timedelta(seconds=SIXTY_DAYS)
    assert creds["access_token"] == LONG and creds["expires_at"] == iso(expires)  # the long-lived one, 60 days
    # looked at a week ahead of expiry (the adapter's window), not 30 minutes ahead
    assert abs(row.refresh_due_at - (expires - instagram.REFRESH_AHEAD)) < timedelta(seconds=1)
    assert_no_secrets([done.text], [SECRET, SHORT, LONG])


async def test_instagram_gets_a_reconnect_notice_when_the_exchange_cannot_extend_the_token(env) -> None:
    q, _ = await _callback(env, "instagram")
    with respx.mock(assert_all_mocked=True) as router:
        _instagram_routes(router)
        await env.rest.get("/connect/instagram/callback", params={"state": q["state"], "code": "code-1"})
    env.clock.advance(days=50)  # 10 days left: not due yet
    assert await tokens.refresh_due(env.rt, "w1") == 0
    env.clock.advance(days=5)  # 5 days left: due; Meta answers the same expiry (nothing gained)
    due = (await _row(env, "instagram")).refresh_due_at
    assert due is not None
    left = due + instagram.REFRESH_AHEAD - env.clock.now()
    with respx.mock(assert_all_mocked=True) as router:
        again = router.get(f"{instagram.GRAPH_URL}/oauth/access_token").mock(return_value=httpx.Response(
            200, json={"access_token": LONGER, "token_type": "bearer", "expires_in": int(left.total_seconds())}))
        assert await tokens.refresh_due(env.rt, "w1") == 1
        assert again.call_count == 1
        assert await tokens.refresh_due(env.rt, "w1") == 0  # looked at again at expiry, not every pass
        assert again.call_count == 1
    async with env.db.session(write=False) as s:
        [notice] = (await s.exec(select(Notification).where(Notification.category == "integration_refresh"))).all()
    assert notice.type == "integration_expiring" and "Reconnect Instagram soon" in notice.title
    row = await _row(env, "instagram")
    creds = vault.open_credentials(env.rt.settings, row.credentials)
    assert row.status == "connected" and creds is not None and creds["access_token"] == LONGER
    assert_no_secrets([notice.message], [SECRET, LONG, LONGER])


async def _account(env, flow: Flow, platform: str, credentials: dict, provider: str | None = None) -> Integration:
    async with env.db.session(write=True) as s:
        i = await operator.connect_integration(
            s, env.clock.now(), await s.get(Brand, flow.brand.id), platform, provider=provider or platform,
            connection=Connection(provider_account_id=f"{platform}-1", username=platform, display_name=platform,
                                  credentials={}), settings=env.rt.settings)
        store_credentials(i, credentials, env.rt.settings, env.rt.providers)
        s.add(i)
    return i


async def test_each_network_refreshes_by_its_own_window(env) -> None:
    flow = await Flow(env).setup()
    expires = iso(env.clock.now() + timedelta(hours=3))
    xi = await _account(env, flow, "x", {"access_token": "x-SECRET", "refresh_token": "xr-SECRET",
                                         "expires_at": expires, "client_id": "c"})
    li = await _account(env, flow, "linkedin", {"access_token": "li-SECRET", "expires_at": expires})
    never = await _account(env, flow, "telegram", {"bot_token": "1:t-SECRET", "chat_id": "@c"})
    assert timedelta(minutes=15) == x.REFRESH_AHEAD and timedelta(days=7) == linkedin.REFRESH_AHEAD

    async def due() -> set[str]:
        async with env.db.session(write=False) as s:
            return set((await s.exec(tokens.due_query(env.clock.now()))).all())

    # Three hours before the same expiry: LinkedIn's week-long window has begun, X's 15 minutes have not
    # (the old global 30-minute look-ahead saw neither).
    assert await due() == {li.id}
    env.clock.advance(hours=2, minutes=50)
    assert await due() == {li.id, xi.id}
    assert never.refresh_due_at is None  # Telegram bot tokens do not expire: never looked at
    # A sandbox account is never due either, whatever its credentials say.
    sandbox = await _account(env, flow, "x", {"access_token": "s", "expires_at": expires}, provider="sandbox")
    assert sandbox.refresh_due_at is None


async def test_the_due_query_reads_the_index(env) -> None:
    """EXPLAIN of the tick's query on this backend: an index range scan on (status, refresh_due_at) that also
    gives the order, so a pass reads at most BATCH ids whatever the number of accounts."""
    query = tokens.due_query(env.clock.now())
    async with env.db.session(write=True) as s:
        compiled = query.compile(dialect=s.bind.dialect, compile_kwargs={"literal_binds": True})
        if env.db.dialect == "sqlite":
            plan = " ".join(str(r[-1]) for r in (await s.exec(text(f"EXPLAIN QUERY PLAN {compiled}"))).all())
            assert "ix_integrations_refresh_due" in plan and "TEMP B-TREE" not in plan, plan
        else:
            await s.exec(text("SET LOCAL enable_seqscan = off"))  # a tiny table would be scanned otherwise
            plan = " ".join(r[0] for r in (await s.exec(text(f"EXPLAIN {compiled}"))).all())
            assert "ix_integrations_refresh_due" in plan and "Sort" not in plan, plan
    assert f"LIMIT {tokens.BATCH}" in str(compiled)


def test_credentials_are_stored_only_through_store_credentials() -> None:
    """`refresh_due_at` is right only if every write of credentials goes through the one function that keeps it:
    no other module of the service assigns sealed credentials to an integration."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    allowed = {"tools/services/accounts.py",  # store_credentials itself
               "tools/operator/actions.py",  # the row's first credentials; connect.save stores them again
               "tools/networks/secrets.py"}  # re-encryption under a new key: the expiry does not change
    write = re.compile(r"\.credentials\s*=\s*vault\.|credentials=vault\.seal\(")
    offenders = [str(p.relative_to(root)) for area in ("tools", "server", "storage") for p in (root / area).rglob("*.py")
                 if str(p.relative_to(root)) not in allowed and write.search(p.read_text())]
    assert offenders == [], f"store credentials with tools.services.accounts.store_credentials: {offenders}"
