"""Trusted proxies through a real `socialpub serve` (uvicorn): the console's sign-in throttle believes
X-Forwarded-For only from the configured proxies (`--forwarded-allow-ips` on SQLite, `SOCIALPUB_TRUSTED_PROXIES`
on PostgreSQL), as docs/operations.md tells an operator behind nginx. Clients take distinct loopback source
addresses (127.0.0.2 plays the proxy, 127.0.0.3 a stranger) so one machine shows both sides."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.operations.support import CLI, cli_env, free_port, processes, run_cli, spawn, wait_http

pytestmark = pytest.mark.slow  # ~60 sign-ins with real password hashing per served process

PASSWORD = "correct horse battery staple"
PROXY, STRANGER = "127.0.0.2", "127.0.0.3"


def _browser(base: str, source: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=30, transport=httpx.HTTPTransport(local_address=source))


def _attempt(b: httpx.Client, email: str, password: str, forwarded_for: str) -> int:
    page = b.get("/console/sign-in")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    csrf = found.group(1)
    return b.post("/console/sign-in", headers={"X-Forwarded-For": forwarded_for},
                  data={"csrf": csrf, "email": email, "password": password}).status_code


def _serve(tmp_path: Path, extra_env: dict[str, str], *flags: str) -> Iterator[str]:
    env = cli_env(tmp_path / "home", **extra_env)
    run_cli(env, "init")
    for email in ("admin@a.example", "member@a.example"):
        done = subprocess.run([CLI, "users", "create", "--email", email, "--role", "admin", "--password-stdin"],
                              env=env, input=PASSWORD + "\n", capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        proc = spawn(procs, env, "serve", "--no-worker", "--port", str(port), *flags, log=tmp_path / "serve.log")
        wait_http(f"{base}/healthz", proc)
        yield base


def _exhaust(b: httpx.Client, forwarded_for) -> int:
    """Wrong passwords over many accounts until the address budget (30 per 5 minutes) answers 429; how many
    passed. The server's clock is real, so a slow machine refills a token or two on the way."""
    for n in range(45):
        status = _attempt(b, f"nobody{n}@a.example", "wrong password!", forwarded_for(n))
        if status == 429:
            return n
        assert status == 401, status
    raise AssertionError("never throttled")


def _walk(base: str) -> None:
    attacker = _browser(base, PROXY)
    # the proxy appends the attacker's real address; what the attacker prepends is moot
    assert 30 <= _exhaust(attacker, lambda n: f"192.0.2.{n}, 203.0.113.5") < 40
    assert _attempt(attacker, "admin@a.example", PASSWORD, "203.0.113.5") == 429
    assert _attempt(_browser(base, PROXY), "admin@a.example", PASSWORD, "203.0.113.6") == 303  # own bucket

    stranger = _browser(base, STRANGER)  # not a trusted proxy: its header is ignored, a new one per attempt too
    assert 30 <= _exhaust(stranger, lambda n: f"198.51.100.{n}") < 40
    assert _attempt(stranger, "member@a.example", PASSWORD, "198.51.100.200") == 429
    # loopback (127.0.0.1) is no longer trusted once proxies are named: its header counts as 127.0.0.1
    assert _attempt(_browser(base, "127.0.0.1"), "member@a.example", PASSWORD, "198.51.100.200") == 303


def test_trusted_proxy_flag_on_sqlite(tmp_path: Path) -> None:
    for base in _serve(tmp_path, {}, "--forwarded-allow-ips", f"{PROXY}/32"):
        _walk(base)


def test_trusted_proxy_env_on_postgres(tmp_path: Path, pg_scratch: str) -> None:
    for base in _serve(tmp_path, {"SOCIALPUB_DATABASE_URL": pg_scratch, "SOCIALPUB_TRUSTED_PROXIES": PROXY}):
        _walk(base)


def test_a_malformed_proxy_list_is_refused_at_start(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "home")
    done = subprocess.run([CLI, "serve", "--forwarded-allow-ips", "10.0.0.1, nginx.internal"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "trusted proxies must be IP addresses or networks" in done.stderr and "nginx.internal" in done.stderr
    assert "Traceback" not in done.stderr
