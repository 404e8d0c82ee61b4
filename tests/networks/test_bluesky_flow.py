"""Bluesky end to end against the real PDS (`.ci/pds`): connect (in process and with the CLI), draft → preflight →
approved Schedule → `socialpub worker --once` in a subprocess (an image with alt text served by `socialpub serve`,
a thread), a worker SIGKILLed right after the PDS accepted the post, and the token lifecycle (the refresh tick,
a revoked app password). Every response body and log line is searched for the app password and the JWTs."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select

from storage import vault
from storage.tables.integrations import Integration
from storage.tables.notifications import Notification
from storage.tables.publishing import Schedule
from tests.deploy.support import CLI, free_port
from tests.mcp.support import envelope, in_memory
from tests.media.support import image_bytes, upload
from tests.networks.pds import BlueskyAccount, Pds
from tests.networks.support import Flow, assert_no_secrets
from tools.networks import connect as networks
from tools.networks import tokens

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # served workers against the PDS
POST = "app.bsky.feed.post"


def _allow_local(env) -> None:
    env.rt.settings.fetch_allow_hosts = ("127.0.0.1",)


async def _bluesky_rows(env) -> list[Integration]:
    async with env.db.session(write=False) as s:
        return list((await s.exec(select(Integration).where(Integration.platform == "bluesky"))).all())


def _records(pds_url: str, did: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{pds_url}/xrpc/com.atproto.repo.listRecords",
                       params={"repo": did, "collection": POST, "limit": 100})
    answer.raise_for_status()
    return answer.json()["records"]


def _get_record(pds_url: str, uri: str) -> dict[str, Any]:
    did, _, rkey = uri.removeprefix("at://").partition(f"/{POST}/")
    answer = httpx.get(f"{pds_url}/xrpc/com.atproto.repo.getRecord",
                       params={"repo": did, "collection": POST, "rkey": rkey})
    answer.raise_for_status()
    return answer.json()


def _cli_env(env, **more: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    out.update(SOCIALPUB_HOME=str(env.rt.settings.home), SOCIALPUB_DATABASE_URL=env.db.url,
               SOCIALPUB_RATE_LIMIT="0", **more)
    if env.rt.settings.secret_keys:
        out["SOCIALPUB_SECRET_KEYS"] = ",".join(env.rt.settings.secret_keys)
    if env.rt.settings.fetch_allow_hosts and "SOCIALPUB_FETCH_ALLOW_HOSTS" not in more:
        # the same deployment: its worker checks the PDS's address again on every call
        out["SOCIALPUB_FETCH_ALLOW_HOSTS"] = ",".join(env.rt.settings.fetch_allow_hosts)
    return out


async def _secrets_of(env, integration_id: str, who: BlueskyAccount) -> list[str]:
    """The planted app password and every JWT stored for the account (as it is after the run)."""
    async with env.db.session(write=False) as s:
        row = await s.get(Integration, integration_id)
    creds = vault.open_credentials(env.rt.settings, row.credentials) or {}
    return [who.app_password, who.access_jwt, *(creds[k] for k in ("access_jwt", "refresh_jwt") if creds.get(k))]


# --- connect ----------------------------------------------------------------------------------------------

async def test_bluesky_connect_verifies_with_the_pds_and_refuses_cleanly(env, pds: Pds,
                                                                         bsky_account: BlueskyAccount) -> None:
    flow = await Flow(env).setup()
    with pytest.raises(networks.ConnectError, match="refused"):  # 127.0.0.1 is private until allowed
        await networks.connect(env.rt, flow.brand.id, "bluesky", {"service": pds.url, "handle": bsky_account.handle,
                                                                  "app_password": bsky_account.app_password})
    _allow_local(env)
    with pytest.raises(networks.ConnectError, match="refused the handle or app password") as wrong:
        await networks.connect(env.rt, flow.brand.id, "bluesky", {"service": pds.url, "handle": bsky_account.handle,
                                                                  "app_password": "aaaa-bbbb-cccc-dddd"})
    assert "Nothing was saved" in str(wrong.value) and "aaaa-bbbb" not in str(wrong.value)
    with pytest.raises(networks.ConnectError, match="could not be reached"):
        await networks.connect(env.rt, flow.brand.id, "bluesky", {"service": f"http://127.0.0.1:{free_port()}",
                                                                  "handle": bsky_account.handle,
                                                                  "app_password": bsky_account.app_password})
    assert await _bluesky_rows(env) == []  # nothing saved

    i = await networks.connect(env.rt, flow.brand.id, "bluesky", {"service": pds.url, "handle": bsky_account.handle,
                                                                  "app_password": bsky_account.app_password})
    assert (i.provider, i.provider_account_id, i.username) == ("bluesky", bsky_account.did, bsky_account.handle)
    assert i.credentials is not None and vault.is_sealed(i.credentials)
    assert bsky_account.app_password not in json.dumps(i.credentials)
    assert i.credentials["expires_at"].endswith("Z")  # readable by the refresh tick without decrypting
    creds = vault.open_credentials(env.rt.settings, i.credentials)
    assert creds is not None
    assert creds["app_password"] == bsky_account.app_password and creds["service"] == pds.url


async def test_cli_connect_reads_the_app_password_from_stdin(env, pds: Pds, bsky_account: BlueskyAccount) -> None:
    flow = await Flow(env).setup()
    cli_env = _cli_env(env, SOCIALPUB_FETCH_ALLOW_HOSTS="127.0.0.1")
    base = [CLI, "integrations", "connect", "--brand", flow.brand.id, "--platform", "bluesky", "--service", pds.url,
            "--handle", bsky_account.handle, "--app-password", "-", "--json"]
    wrong = subprocess.run(base, input="wrong-pass-word-here\n", env=cli_env, capture_output=True, text=True,
                           timeout=120)
    assert wrong.returncode != 0 and "refused the handle or app password" in wrong.stderr + wrong.stdout
    assert await _bluesky_rows(env) == []
    done = subprocess.run(base, input=bsky_account.app_password + "\n", env=cli_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["provider"] == "bluesky" and out["status"] == "connected"
    assert_no_secrets([done.stdout, done.stderr, wrong.stdout, wrong.stderr],
                      await _secrets_of(env, out["id"], bsky_account))
    [row] = await _bluesky_rows(env)
    assert row.id == out["id"] and row.provider_account_id == bsky_account.did


# --- end to end through the worker subprocess -------------------------------------------------------------

def _serve(env, media_url: str, port: int) -> subprocess.Popen:
    log = open(Path(env.rt.settings.home) / "serve.log", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([CLI, "serve", "--no-worker", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT,
                            env=_cli_env(env, SOCIALPUB_PUBLIC_URL=f"http://127.0.0.1:{port}",
                                         SOCIALPUB_MEDIA_URL=media_url))
    deadline = time.monotonic() + 60
    with httpx.Client(timeout=2) as client:  # one client: `httpx.get` builds an SSL context each call (~20 ms)
        while time.monotonic() < deadline:
            assert proc.poll() is None, Path(log.name).read_text()[-3000:]
            try:
                if client.get(f"http://127.0.0.1:{port}/v1/platforms/capabilities").status_code < 500:
                    return proc
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    proc.kill()
    raise AssertionError("socialpub serve did not answer within 60 s")


async def test_draft_preflight_schedule_worker_publishes_to_the_pds(env, pds: Pds, bsky_account: BlueskyAccount,
                                                                    caplog) -> None:
    caplog.set_level(logging.DEBUG)
    _allow_local(env)
    flow = await Flow(env).setup()
    i = await networks.connect(env.rt, flow.brand.id, "bluesky", {"service": pds.url, "handle": bsky_account.handle,
                                                                  "app_password": bsky_account.app_password})
    media = await upload(env, flow.key, flow.brand.id, image_bytes(64, 48), "image/png", "roast.png")
    item = await flow.draft("Spring roast is here #coffee https://example.com/roast", bluesky_settings={
        "post_type": "BS_IMAGE", "media_ids": [media["id"]], "alt_text": {media["id"]: "A bag of coffee beans"},
        "thread_parts": [{"text": "Tasting notes: cherry, cocoa."}, {"text": "Roasted on Monday."}]})
    report = await flow.preflight(item, [i.id])
    assert report["can_schedule"] is True, report
    too_long = await flow.draft("x" * 301, bluesky_settings={})
    blocked = await flow.preflight(too_long, [i.id])
    assert blocked["can_schedule"] is False, blocked
    schedule_id = await flow.schedule(item, [i.id])

    port = free_port()
    media_url = f"http://127.0.0.1:{port}/media"
    server = _serve(env, media_url, port)
    try:
        done = subprocess.run([CLI, "worker", "--once", "--log-level", "DEBUG"], capture_output=True, text=True,
                              timeout=300, env=_cli_env(env, SOCIALPUB_MEDIA_URL=media_url,
                                                        SOCIALPUB_PUBLIC_URL=f"http://127.0.0.1:{port}"))
    finally:
        server.terminate()
        server.wait(30)
    serve_log = (Path(env.rt.settings.home) / "serve.log").read_text()
    assert done.returncode == 0, done.stderr
    assert "1 item(s) processed" in done.stdout, done.stdout + done.stderr

    out = await flow.outcome(schedule_id)
    assert out["schedule"]["status"] == "published", (out["schedule"], done.stderr[-3000:])
    [pub] = [p for p in out["publications"] if p["integration_id"] == i.id]
    uri = pub["publish_id"]
    assert uri.startswith(f"at://{bsky_account.did}/{POST}/"), pub
    rkey = uri.rsplit("/", 1)[1]
    permalink = f"https://bsky.app/profile/{bsky_account.handle}/post/{rkey}"
    assert any(h.get("permalink_url") == permalink for h in out["history"]["items"]), out["history"]
    assert "'has_permalink': True" in str(out["receipt"]), out["receipt"]

    root = _get_record(pds.url, uri)["value"]  # the post exists on the PDS
    assert root["text"].startswith("Spring roast is here")
    assert {f["features"][0]["$type"] for f in root["facets"]} == {"app.bsky.richtext.facet#tag",
                                                                  "app.bsky.richtext.facet#link"}
    [image] = root["embed"]["images"]
    assert image["alt"] == "A bag of coffee beans" and image["image"]["mimeType"].startswith("image/")
    records = _records(pds.url, bsky_account.did)
    assert len(records) == 3
    replies = [r["value"] for r in records if "reply" in r["value"]]
    assert sorted(r["text"] for r in replies) == ["Roasted on Monday.", "Tasting notes: cherry, cocoa."]
    assert all(r["reply"]["root"]["uri"] == uri for r in replies)
    feed = httpx.get(f"{pds.url}/xrpc/app.bsky.feed.getAuthorFeed", params={"actor": bsky_account.did},
                     headers={"Authorization": f"Bearer {bsky_account.access_jwt}"})
    if feed.status_code == 200:  # the PDS proxies the AppView, which a lone dev PDS may not have
        assert uri in feed.text

    bodies = [*flow.bodies, done.stdout, done.stderr, serve_log, caplog.text]
    async with in_memory(env, flow.key) as client:  # what an agent reads over MCP
        for name, args in (("list_targets", {"brand_id": flow.brand.id}),
                           ("list_history", {"brand_id": flow.brand.id}),
                           ("list_publications", {"brand_id": flow.brand.id}),
                           ("get_schedule_receipt", {"brand_id": flow.brand.id, "schedule_id": schedule_id})):
            answer = envelope(await client.call_tool(name, args))
            bodies.append(json.dumps(answer))
    # over MCP: History carries the real permalink, Publications the post's at:// URI, the receipt says the
    # target has a permalink
    assert permalink in bodies[-3] and uri in bodies[-2] and '"has_permalink": true' in bodies[-1], bodies[-4:]
    assert done.stderr and caplog.text  # the run did log
    assert_no_secrets(bodies, await _secrets_of(env, i.id, bsky_account))


# --- a worker killed right after the PDS accepted the post ------------------------------------------------

class HoldingProxy:
    """A loopback proxy in front of the PDS. While `hold` is set, a putRecord is forwarded (the PDS writes the
    record) and then its answer is withheld until `release`, so the worker can be killed deterministically
    after the network accepted the post and before socialpub recorded it."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.hold = True
        self.accepted = threading.Event()
        self.released = threading.Event()
        self.paths: list[str] = []  # XRPC methods asked through the proxy
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                proxy.paths.append(self.path.split("?")[0].removeprefix("/xrpc/"))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                answer = httpx.request(self.command, proxy.upstream + self.path, content=body, headers=headers,
                                       timeout=60)
                if proxy.hold and self.path.startswith("/xrpc/com.atproto.repo.putRecord"):
                    proxy.accepted.set()
                    proxy.released.wait(120)
                    return  # the answer never reaches the (dead) worker
                self.send_response(answer.status_code)
                for k, v in answer.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = _forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def release(self) -> None:
        self.hold = False
        self.released.set()

    def close(self) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


async def test_worker_killed_after_the_pds_accepted_leaves_exactly_one_post(env, pds: Pds,
                                                                             bsky_account: BlueskyAccount) -> None:
    _allow_local(env)
    flow = await Flow(env).setup()
    proxy = HoldingProxy(pds.url)
    try:
        i = await networks.connect(env.rt, flow.brand.id, "bluesky",
                                   {"service": proxy.url, "handle": bsky_account.handle,
                                    "app_password": bsky_account.app_password})
        item = await flow.draft("Exactly once, even when the worker dies", bluesky_settings={})
        schedule_id = await flow.schedule(item, [i.id])
        worker = subprocess.Popen([CLI, "worker", "--once"], env=_cli_env(env), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            assert proxy.accepted.wait(180), "the worker never wrote the post"
            os.kill(worker.pid, signal.SIGKILL)
        finally:
            worker.wait(60)
        assert len(_records(pds.url, bsky_account.did)) == 1  # the PDS has the post; socialpub does not know yet
        proxy.release()
        proxy.paths.clear()
        async with env.db.session(write=True) as s:  # the dead worker's lease runs out
            schedule = await s.get(Schedule, schedule_id)
            assert schedule.status == "publishing" and schedule.lease_owner
            schedule.lease_expires_at = datetime.now(UTC) - timedelta(minutes=1)
            s.add(schedule)
        again = subprocess.run([CLI, "worker", "--once"], env=_cli_env(env), capture_output=True, text=True,
                               timeout=300)
        assert again.returncode == 0 and "1 item(s) processed" in again.stdout, again.stdout + again.stderr
        # recovered by find_post (getRecord under the token's key), not written again
        assert "com.atproto.repo.getRecord" in proxy.paths and "com.atproto.repo.putRecord" not in proxy.paths, \
            proxy.paths
    finally:
        proxy.close()
    out = await flow.outcome(schedule_id)
    assert out["schedule"]["status"] == "published", out["schedule"]
    records = _records(pds.url, bsky_account.did)
    assert len(records) == 1  # exactly one post: recovered by find_post (getRecord), not written twice
    [pub] = [p for p in out["publications"] if p["integration_id"] == i.id]
    assert pub["publish_id"] == records[0]["uri"]


# --- token lifecycle --------------------------------------------------------------------------------------

async def test_refresh_tick_rotates_the_session_sealed_then_a_revoked_password_expires_the_account(
        env, pds: Pds, bsky_account: BlueskyAccount, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    _allow_local(env)
    flow = await Flow(env).setup()
    i = await networks.connect(env.rt, flow.brand.id, "bluesky", {"service": pds.url, "handle": bsky_account.handle,
                                                                  "app_password": bsky_account.app_password})
    first = vault.open_credentials(env.rt.settings, i.credentials)
    assert first is not None
    expires = datetime.fromtimestamp(first["access_expires_at"], UTC)
    env.clock.set(expires - timedelta(hours=1))  # not due yet: nothing is refreshed
    assert await tokens.refresh_due(env.rt, "w1") == 0
    env.clock.set(expires - timedelta(minutes=10))  # due: refreshed ahead of expiry, once
    assert await tokens.refresh_due(env.rt, "w1") == 1
    async with env.db.session(write=False) as s:
        row = await s.get(Integration, i.id)
    assert row.status == "connected" and vault.is_sealed(row.credentials)
    stored = json.dumps(row.credentials)
    fresh = vault.open_credentials(env.rt.settings, row.credentials)
    assert fresh is not None
    # refreshSession rotates the refresh JWT (the old one is spent); an access JWT minted in the same second
    # with the same claims may be byte-identical, so only its expiry is compared
    assert fresh["refresh_jwt"] != first["refresh_jwt"] and fresh["access_expires_at"] >= first["access_expires_at"]
    assert fresh["access_jwt"] not in stored and fresh["refresh_jwt"] not in stored
    assert fresh["app_password"] == bsky_account.app_password

    pds.revoke_app_passwords(bsky_account)  # the user revokes the app password on Bluesky
    # The PDS mints JWTs on its own (real) clock, so a refresh at the frozen clock's "ten minutes before expiry"
    # may not move the expiry; the tick then looks again at the expiry itself (tools/networks/tokens.py): due by then.
    env.clock.set(datetime.fromtimestamp(fresh["access_expires_at"], UTC))
    assert await tokens.refresh_due(env.rt, "w1") == 1
    async with env.db.session(write=False) as s:
        assert (await s.get(Integration, i.id)).status == "expired"
        notes = (await s.exec(select(Notification).where(Notification.category == "integration_refresh"))).all()
    assert len(notes) == 1 and "Bluesky" in notes[0].title
    targets = await flow.request("GET", f"/v1/brands/{flow.brand.id}/targets")
    [target] = [t for t in targets["data"]["targets"] if t["integration_id"] == i.id]
    assert "RECONNECT_REQUIRED" in str(target) and "reconnect_integration" in str(target)
    item = await flow.draft("Will not go out", bluesky_settings={})
    report = await flow.preflight(item, [i.id])  # an expired Bluesky account blocks with the reconnect action
    assert report["can_schedule"] is False and "reconnect_integration" in str(report), report
    assert await tokens.refresh_due(env.rt, "w1") == 0  # expired accounts are not retried
    assert_no_secrets([*flow.bodies, caplog.text],
                      [bsky_account.app_password, first["access_jwt"], first["refresh_jwt"], fresh["access_jwt"],
                       fresh["refresh_jwt"]])
