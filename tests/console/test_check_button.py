"""The console's Check button on an account row: a CSRF-protected POST form (no JavaScript) that shows the
read-only check of the account (tools/networks/checks.py, as `socialpub integrations check`) on the page."""

from __future__ import annotations

import re

import pytest

from server.commands.sandbox import set_sandbox_state
from tests.console.support import csrf_of, make_user, signed_in

pytestmark = pytest.mark.anyio


def _check_action(html: str, brand_id: str, integration_id: str) -> str:
    action = f"/console/brands/{brand_id}/accounts/{integration_id}/check"
    form = re.search(rf'<form method="post" action="{re.escape(action)}"[^>]*>(.*?)</form>', html, re.S)
    assert form, "the account row has no Check form"
    assert 'name="csrf"' in form.group(1) and 'type="submit"' in form.group(1)
    return action


async def test_check_button_shows_the_result_and_a_missing_scope(env) -> None:
    ws = await env.workspace("A")
    brand = await env.brand(ws, "Brand A")
    x = await env.integration(brand, "x")
    await make_user(env, ws, "admin@a.example", "admin")
    admin = await signed_in(env, "admin@a.example")
    page = (await admin.get(f"/console/brands/{brand.id}/accounts")).text
    action = _check_action(page, brand.id, x.id)
    csrf = csrf_of(page)
    before = await env.row_counts()

    ok = await admin.post(action, data={"csrf": csrf})
    assert ok.status_code == 200, ok.text
    assert "Account check: <span class=\"status status-ok\">ok</span>" in ok.text
    assert "X_POST" in ok.text and "tweet.write" in ok.text and "nothing was posted" in ok.text

    async with env.db.session(write=True) as s:
        await set_sandbox_state(s, x.id, faults={"check": "missing_scope"}, facts={})
    before = await env.row_counts()
    missing = await admin.post(action, data={"csrf": csrf})
    assert missing.status_code == 200
    assert "status-problem" in missing.text and "missing_scopes" in missing.text and "media.write" in missing.text
    assert await env.row_counts() == before  # read-only: nothing written


async def test_check_refusals_csrf_scope_and_other_workspace(env) -> None:
    ws, other = await env.workspace("A"), await env.workspace("B")
    brand, brand_b = await env.brand(ws, "Brand A"), await env.brand(other, "Brand B")
    x, x_b = await env.integration(brand, "x"), await env.integration(brand_b, "x")
    await make_user(env, ws, "admin@a.example", "admin")
    await make_user(env, ws, "member@a.example", "member")
    admin = await signed_in(env, "admin@a.example")
    csrf = csrf_of((await admin.get(f"/console/brands/{brand.id}/accounts")).text)

    no_token = await admin.post(f"/console/brands/{brand.id}/accounts/{x.id}/check", data={})
    assert no_token.status_code == 403 and "security token" in no_token.text
    wrong = await admin.post(f"/console/brands/{brand.id}/accounts/{x.id}/check", data={"csrf": "A" * 43})
    assert wrong.status_code == 403
    # another workspace's account, through this brand or through its own: "no such account" either way
    cross = await admin.post(f"/console/brands/{brand.id}/accounts/{x_b.id}/check", data={"csrf": csrf})
    assert cross.status_code == 404 and "No such account" in cross.text and x_b.id not in cross.text.split("<main")[-1]
    foreign_brand = await admin.post(f"/console/brands/{brand_b.id}/accounts/{x_b.id}/check", data={"csrf": csrf})
    assert foreign_brand.status_code == 404
    unknown = await admin.post(f"/console/brands/{brand.id}/accounts/int_nope/check", data={"csrf": csrf})
    assert unknown.status_code == 404

    member = await signed_in(env, "member@a.example")
    page = (await member.get(f"/console/brands/{brand.id}/accounts")).text
    assert "/check" not in page  # the button is with the other account actions (integrations:write)
    refused = await member.post(f"/console/brands/{brand.id}/accounts/{x.id}/check", data={"csrf": csrf_of(page)})
    assert refused.status_code == 403 and "integrations:write" in refused.text
