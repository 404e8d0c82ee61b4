"""Connecting real network accounts from the console: every network the server knows has a form; a Mastodon
account against mastodon-mock (a real Mastodon-shaped server from PyPI) with an access token, or through the
instance's OAuth page; refusals (wrong token, private address, missing field, member, CSRF) save nothing."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlmodel import select

from server.commands.networks import FLAGS
from storage import vault
from storage.tables.integrations import Integration
from tests.console.support import csrf_of, make_user, signed_in
from tests.networks.support import MASTODON_TOKEN, mastodon_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.anyio


async def _integrations(env) -> list[Integration]:
    async with env.db.session(write=False) as s:
        return list((await s.exec(select(Integration))).all())


async def test_connect_a_mastodon_account_with_a_token_or_oauth(env, mastodon_server) -> None:  # noqa: F811
    ws = await env.workspace("Workspace A")
    brand = await env.brand(ws, "Brand A")
    await make_user(env, ws, "admin@a.example", "admin")
    await make_user(env, ws, "member@a.example", "member")
    admin = await signed_in(env, "admin@a.example")
    page = await admin.get(f"/console/brands/{brand.id}/accounts")
    for platform in FLAGS:  # a form for every network the server can connect, beside the sandbox's
        assert f'action="/console/brands/{brand.id}/accounts/connect/{platform}"' in page.text
    assert 'name="access_token" type="password"' in page.text  # secrets are not echoed on screen
    csrf = csrf_of(page.text)
    url = f"/console/brands/{brand.id}/accounts/connect/mastodon"

    private = await admin.post(url, data={"csrf": csrf, "instance": mastodon_server.base_url,
                                          "access_token": MASTODON_TOKEN})
    assert private.status_code == 422 and "refused" in private.text  # 127.0.0.1 is not allowed by default
    env.rt.settings.fetch_allow_hosts = ("127.0.0.1",)
    wrong = await admin.post(url, data={"csrf": csrf, "instance": mastodon_server.base_url, "access_token": "bad"})
    assert wrong.status_code == 422 and "Nothing was saved" in wrong.text and "bad" not in wrong.text
    missing = await admin.post(url, data={"csrf": csrf, "access_token": MASTODON_TOKEN})
    assert missing.status_code == 422 and "instance" in missing.text
    member = await signed_in(env, "member@a.example")
    refused = await member.post(url, data={"csrf": csrf_of((await member.get(f"/console/brands/{brand.id}/accounts"))
                                                           .text),
                                           "instance": mastodon_server.base_url, "access_token": MASTODON_TOKEN})
    assert refused.status_code == 403
    assert (await admin.post(url, data={"instance": mastodon_server.base_url,
                                        "access_token": MASTODON_TOKEN})).status_code == 403  # no CSRF token
    assert await _integrations(env) == []

    done = await admin.post(url, data={"csrf": csrf, "instance": mastodon_server.base_url,
                                       "access_token": MASTODON_TOKEN})
    assert done.status_code == 303 and done.headers["location"].endswith("/accounts?notice=connected")
    [account] = await _integrations(env)
    assert (account.platform, account.provider, account.username) == ("mastodon", "mastodon", "alice")
    assert vault.is_sealed(account.credentials) and MASTODON_TOKEN not in str(account.credentials)
    listed = (await admin.get(done.headers["location"])).text
    assert "Account connected." in listed and account.id in listed and MASTODON_TOKEN not in listed

    # without a token: a link to the instance's authorize page (PKCE), whose answer completes the connect
    started = await admin.post(url, data={"csrf": csrf, "instance": mastodon_server.base_url})
    assert started.status_code == 200, started.text
    link = started.text.split('class="button" href="')[1].split('"')[0].replace("&amp;", "&")
    assert link.startswith(f"{mastodon_server.base_url}/oauth/authorize?")
    q = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    assert q["code_challenge_method"] == "S256" and q["redirect_uri"].endswith("/connect/mastodon/callback")
    allowed = httpx.post(f"{mastodon_server.base_url}/oauth/authorize", data={
        "username": "alice", "redirect_uri": q["redirect_uri"], "client_id": q["client_id"], "scope": q["scope"],
        "state": q["state"]})
    back = {k: v[0] for k, v in parse_qs(urlsplit(allowed.headers["location"]).query).items()}
    callback = await env.rest.get("/connect/mastodon/callback", params=back)
    assert callback.status_code == 200, callback.text
    assert len(await _integrations(env)) == 2

    # a real account is reconnected with new credentials (verified), not by setting its status
    listed = (await admin.get(f"/console/brands/{brand.id}/accounts")).text
    row = listed.split(f"<code>{account.id}</code>")[1].split("</tr>")[0]
    assert f"/accounts/{account.id}/reconnect" in row and "Sandbox faults" not in row
    reconnect = f"/console/brands/{brand.id}/accounts/{account.id}/reconnect"
    bad = await admin.post(reconnect, data={"csrf": csrf, "access_token": "bad"})
    assert bad.status_code == 422 and "Nothing was saved" in bad.text
    good = await admin.post(reconnect, data={"csrf": csrf, "access_token": MASTODON_TOKEN})
    assert good.status_code == 303 and good.headers["location"].endswith("notice=reconnected")
    via_oauth = await admin.post(reconnect, data={"csrf": csrf})  # no token: the account's own instance
    assert via_oauth.status_code == 200 and f"{mastodon_server.base_url}/oauth/authorize?" in via_oauth.text.replace(
        "&amp;", "&")
    assert len(await _integrations(env)) == 2
    for action, data in [("status", {"status": "connected"}), ("faults", {"operation": "publish", "kind": "transient"})]:
        refused = await admin.post(f"/console/brands/{brand.id}/accounts/{account.id}/{action}",
                                   data={"csrf": csrf, **data})
        assert refused.status_code == 422 and "reconnect this one" in refused.text


async def test_another_workspace_cannot_connect_or_reconnect_here(env) -> None:
    ws_a, ws_b = await env.workspace("Workspace A"), await env.workspace("Workspace B")
    brand_a = await env.brand(ws_a, "Brand A")
    account_a = await env.integration(brand_a, "mastodon")
    await make_user(env, ws_b, "admin@b.example", "admin")
    other = await signed_in(env, "admin@b.example")
    csrf = csrf_of((await other.get("/console/keys")).text)
    form = {"csrf": csrf, "instance": "https://mastodon.example", "access_token": "t"}
    assert (await other.post(f"/console/brands/{brand_a.id}/accounts/connect/mastodon", data=form)).status_code == 404
    assert (await other.post(f"/console/brands/{brand_a.id}/accounts/{account_a.id}/reconnect",
                             data=form)).status_code == 404
    brand_b = await env.brand(ws_b, "Brand B")
    unknown = await other.post(f"/console/brands/{brand_b.id}/accounts/connect/myspace", data=form)
    assert unknown.status_code == 404 and "cannot connect this network" in unknown.text
    assert len(await _integrations(env)) == 1
