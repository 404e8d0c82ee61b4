"""Claim links: single use, optional expiry (frozen clock), only a hash stored, newer links replace older
ones, and the public page that shows and accepts the claim."""

from __future__ import annotations

import hashlib

import pytest
from sqlmodel import select

from storage.tables.admin import AdminClaimLink
from tests.admin.support import admin_setup, create_prospect, patch, path
from tests.media.support import local

pytestmark = pytest.mark.anyio


@pytest.fixture
async def s(env):
    s = await admin_setup(env)
    s.brand = await create_prospect(env, s.admin, "Bean <There>")
    return s


async def new_link(s, body: dict | None = None) -> dict:
    resp = await s.env.rest.post(path("create_claim_link", s.brand["id"]), json=body or {},
                                 headers=s.env.auth(s.admin))
    assert resp.status_code == 201, resp.json()
    return resp.json()["data"]


async def status(s) -> dict:
    resp = await s.env.rest.get(path("get_prospect_status", s.brand["id"]), headers=s.env.auth(s.admin))
    return resp.json()["data"]


def token_of(link: dict) -> str:
    return link["claim_url"].rsplit("/", 1)[1]


async def test_a_link_without_expiry_claims_once(s) -> None:
    env = s.env
    link = await new_link(s)
    assert set(link) == {"claim_url", "token_hint", "expires_at", "created_at", "single_use", "links"}
    assert link["claim_url"].startswith("http://testserver/claim/")
    token = token_of(link)
    assert len(token) == 43 and link["token_hint"] == f"…{token[-4:]}"
    assert link["expires_at"] is None and link["single_use"] is True
    # only the hash is stored
    async with env.db.session(write=False) as session:
        row = (await session.exec(select(AdminClaimLink))).one()
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in repr(row.model_dump())
    info = (await status(s))["claim"]
    assert info == {"status": "unclaimed", "claimed_at": None,
                    "link": {"status": "active", "token_hint": link["token_hint"], "expires_at": None,
                             "created_at": link["created_at"], "used_at": None}}
    assert token not in str(await status(s))
    assert (await status(s))["onboarding_step"] == "claim_link_sent"

    # the page shows the offer, escaped, and changes nothing (a year later it still works: no expiry)
    env.clock.advance(days=365)
    page = await env.rest.get(local(link["claim_url"]))
    assert page.status_code == 200 and "Bean &lt;There&gt;" in page.text and "<form method=\"post\">" in page.text
    assert "script" not in page.text and page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert (await env.rest.head(local(link["claim_url"]))).status_code == 200
    assert (await status(s))["claim"]["status"] == "unclaimed"

    claimed = await env.rest.post(local(link["claim_url"]))
    assert claimed.status_code == 200 and "is yours" in claimed.text
    after = await status(s)
    assert after["claim"]["status"] == "claimed" and after["claim"]["claimed_at"] == after["claim"]["link"]["used_at"]
    assert after["claim"]["link"]["status"] == "used" and after["onboarding_step"] == "claimed"

    # single use
    again = await env.rest.post(local(link["claim_url"]))
    assert again.status_code == 410 and "already used" in again.text
    assert (await env.rest.get(local(link["claim_url"]))).status_code == 410
    # a claimed prospect takes no more admin writes; reads still work
    for name, body in (("create_claim_link", {}), ("start_website_scan", {"website_url": "https://x.example"}),
                       ("start_content_pipeline", {})):
        resp = await env.rest.post(path(name, s.brand["id"]), json=body, headers=env.auth(s.admin))
        assert resp.status_code == 409 and resp.json()["error"]["code"] == "CONFLICT", name
    resp = await patch(env, s.admin, s.brand["id"], {"onboarding_step": "created"})
    assert resp.status_code == 409


async def test_expiry_with_the_frozen_clock(s) -> None:
    env = s.env
    link = await new_link(s, {"ttl_hours": 1.5})
    assert link["expires_at"] == "2026-03-02T10:30:00.000Z"
    env.clock.advance(minutes=89, seconds=59)
    assert (await env.rest.get(local(link["claim_url"]))).status_code == 200
    env.clock.advance(seconds=1)  # exactly at expires_at: expired
    page = await env.rest.get(local(link["claim_url"]))
    assert page.status_code == 410 and "expired" in page.text
    counts = await env.row_counts()
    assert (await env.rest.post(local(link["claim_url"]))).status_code == 410
    assert await env.row_counts() == counts
    info = (await status(s))["claim"]
    assert info["status"] == "unclaimed" and info["link"]["status"] == "expired"


async def test_a_new_link_replaces_the_old_one(s) -> None:
    env = s.env
    old = await new_link(s, {"ttl_hours": None})
    new = await new_link(s, {"ttl_hours": 24})
    assert token_of(old) != token_of(new) and new["expires_at"] == "2026-03-03T09:00:00.000Z"
    assert (await env.rest.post(local(old["claim_url"]))).status_code == 404
    assert (await env.rest.post(local(new["claim_url"]))).status_code == 200


async def test_unknown_and_malformed_tokens(s) -> None:
    env = s.env
    await new_link(s)
    for token in ("x" * 43, "short", "a" * 200, "%00" * 20):
        for method in ("GET", "POST"):
            resp = await env.rest.request(method, f"/claim/{token}")
            assert resp.status_code == 404, (method, token)
    assert (await status(s))["claim"]["status"] == "unclaimed"


@pytest.mark.parametrize("ttl", [0, -1, 8760.5, "24", True, float("nan")])
async def test_ttl_bounds(s, ttl) -> None:
    env = s.env
    counts = await env.row_counts()
    body = '{"ttl_hours": NaN}' if ttl != ttl else None
    if body:
        resp = await env.rest.post(path("create_claim_link", s.brand["id"]), content=body,
                                   headers=env.auth(s.admin, Content_Type="application/json"))
    else:
        resp = await env.rest.post(path("create_claim_link", s.brand["id"]), json={"ttl_hours": ttl},
                                   headers=env.auth(s.admin))
    assert resp.status_code == 400, resp.json()
    assert resp.json()["error"]["code"] == "MALFORMED_REQUEST"
    if not body:
        assert resp.json()["error"]["issues"][0]["field_path"] == "$.ttl_hours"
    assert await env.row_counts() == counts


async def test_ttl_at_the_bound_and_no_idempotency_key(s) -> None:
    env = s.env
    link = await new_link(s, {"ttl_hours": 8760})
    assert link["expires_at"] == "2027-03-02T09:00:00.000Z"
    counts = await env.row_counts()
    resp = await env.rest.post(path("create_claim_link", s.brand["id"]), json={},
                               headers=env.auth(s.admin, Idempotency_Key="k1"))
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "INVALID_HEADER"
    assert await env.row_counts() == counts
