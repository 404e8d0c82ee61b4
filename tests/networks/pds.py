"""A real Bluesky PDS (and PLC directory) for the tests, installed by `.ci/pds/install.sh`.

The install lives outside the repository, in `$SOCIALPUB_PDS_DIR` (default `~/.cache/socialpub-pds`).
`start_pds` runs its `start.mjs` on two free loopback ports and waits until the PDS answers; accounts are made
with `com.atproto.server.createAccount` plus an app password, as a user would make one. When the install is
missing `start_pds` raises PdsUnavailable: tests skip with the reason (`unavailable`), except in CI with
SOCIALPUB_REQUIRE_PDS=1, where they fail; the benchmark prints it. No pytest here, so `bench/` can use it too.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

READY_SECONDS = 90.0


def pds_dir() -> Path:
    return Path(os.environ.get("SOCIALPUB_PDS_DIR") or Path.home() / ".cache" / "socialpub-pds")


class PdsUnavailable(Exception):
    """The PDS is not installed (a reason to skip), as opposed to installed but broken (a failure)."""


class PdsFailed(Exception):
    """The installed PDS did not start."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class BlueskyAccount:
    service: str
    handle: str
    did: str
    password: str  # the account password (for admin-ish steps in tests, e.g. revoking the app password)
    app_password: str
    access_jwt: str  # the account-password session, to revoke app passwords


@dataclass
class Pds:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def create_account(self, name: str = "user") -> BlueskyAccount:
        handle = f"{name}-{secrets.token_hex(4)}.test"
        password = secrets.token_urlsafe(16)
        with httpx.Client(base_url=self.url, timeout=30) as client:
            made = client.post("/xrpc/com.atproto.server.createAccount",
                               json={"handle": handle, "email": f"{handle}@example.invalid", "password": password})
            made.raise_for_status()
            session = made.json()
            app = client.post("/xrpc/com.atproto.server.createAppPassword", json={"name": "socialpub"},
                              headers={"Authorization": f"Bearer {session['accessJwt']}"})
            app.raise_for_status()
        return BlueskyAccount(self.url, session["handle"], session["did"], password, app.json()["password"],
                              session["accessJwt"])

    def revoke_app_passwords(self, account: BlueskyAccount) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            client.post("/xrpc/com.atproto.server.revokeAppPassword", json={"name": "socialpub"},
                        headers={"Authorization": f"Bearer {account.access_jwt}"}).raise_for_status()


def start_pds(data: Path, *, appview_url: str | None = None) -> Pds:
    """Start the installed PDS on free loopback ports; PdsUnavailable when it is not installed. With
    `appview_url` the PDS proxies app.bsky.* reads for the Bluesky AppView there (by default it has none)."""
    home = pds_dir()
    node, script = home / "bin" / "node", home / "start.mjs"
    if not (home / ".installed").exists() or not node.exists() or not script.exists():
        raise PdsUnavailable(f"no Bluesky PDS installed in {home}: run `bash .ci/pds/install.sh` (needs node and npm)")
    if appview_url and "SOCIALPUB_PDS_APPVIEW_URL" not in script.read_text():
        raise PdsUnavailable(f"the PDS in {home} predates the AppView option: run `bash .ci/pds/install.sh` again")
    pds_port, plc_port = _free_port(), _free_port()
    log = data / "pds.log"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(data), "SOCIALPUB_PDS_PORT": str(pds_port),
           "SOCIALPUB_PLC_PORT": str(plc_port), "SOCIALPUB_PDS_DATA": str(data / "pds"),
           "SOCIALPUB_PDS_ADMIN_PASSWORD": secrets.token_urlsafe(16)}
    if appview_url:
        env["SOCIALPUB_PDS_APPVIEW_URL"] = appview_url
    (data / "pds").mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        process = subprocess.Popen([str(node), str(script)], cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    pds = Pds(f"http://127.0.0.1:{pds_port}", process, log)
    deadline = time.monotonic() + READY_SECONDS
    with httpx.Client(timeout=2) as client:  # one client: `httpx.get` builds an SSL context each call (~20 ms)
        while True:
            if process.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise PdsFailed(f"the Bluesky PDS exited with {process.returncode}:\n{tail}")
            try:
                if client.get(f"{pds.url}/xrpc/_health").is_success:
                    return pds
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                stop_pds(pds)
                raise PdsFailed(f"the Bluesky PDS did not answer within {READY_SECONDS:.0f} s (log: {log})")
            time.sleep(0.05)


def stop_pds(pds: Pds) -> None:
    if pds.process.poll() is None:
        pds.process.send_signal(signal.SIGTERM)
        try:
            pds.process.wait(15)
        except subprocess.TimeoutExpired:
            pds.process.kill()
            pds.process.wait(5)
