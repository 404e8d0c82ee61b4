"""Issue 33, "the first hour": the traps a new operator met, each through the real `socialpub` command.

1. A read/serve command without SOCIALPUB_HOME creates no database at the default place, and its refusal names
   the variable and the path in one line.
2. `serve --port N` without SOCIALPUB_PUBLIC_URL builds links (a media `download_url`) on port N.
3. A second `serve` on a busy port says so in one line naming the port and the flag, before starting anything.
4. `init` is idempotent in what it creates and says the next step that fits the database's state.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.deploy.support import CLI, free_port
from tests.media.support import image_bytes


def env_without_home(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A shell as the README leaves it: no SOCIALPUB_* variable; the default home under a scratch XDG_DATA_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "userhome"), **extra)
    return env


def run(env: dict[str, str], *args: str, timeout: float = 120, stdin: str | None = None
        ) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=timeout, input=stdin)


@pytest.mark.parametrize("argv", [["workspaces", "list"], ["brands", "create", "--name", "x"],
                                  ["serve", "--port", "0"], ["worker", "--once"]],
                         ids=["workspaces-list", "brands-create", "serve", "worker"])
def test_a_command_without_socialpub_home_creates_no_database_and_names_the_variable(tmp_path, argv) -> None:
    env = env_without_home(tmp_path)
    done = run(env, *argv)
    default_db = tmp_path / "xdg" / "socialpub" / "socialpub.db"
    assert done.returncode == 2, done.stderr
    assert not default_db.exists() and not default_db.parent.exists()  # nothing made at the default place
    err = done.stderr.strip()
    assert "\n" not in err, err  # one line
    assert "SOCIALPUB_HOME is unset" in err and str(default_db) in err and "socialpub init" in err


def test_an_empty_database_file_names_the_variable_too(tmp_path) -> None:
    home = tmp_path / "elsewhere"
    home.mkdir()
    (home / "socialpub.db").write_bytes(b"")
    done = run(env_without_home(tmp_path, SOCIALPUB_HOME=str(home)), "workspaces", "list")
    assert done.returncode == 2
    assert f"SOCIALPUB_HOME={home}" in done.stderr and "has no socialpub schema" in done.stderr


def test_init_is_the_one_command_that_creates_the_database(tmp_path) -> None:
    env = env_without_home(tmp_path)
    done = run(env, "init", "--json")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "xdg" / "socialpub" / "socialpub.db").exists()


def test_init_twice_creates_nothing_new_and_says_the_next_step(tmp_path) -> None:
    env = env_without_home(tmp_path, SOCIALPUB_HOME=str(tmp_path / "home"))
    first = json.loads(run(env, "init", "--json").stdout)
    assert first["created"] and first["next"]["step"] == "create_user"
    again = json.loads(run(env, "init", "--json").stdout)
    assert not again["created"] and again["workspace"]["id"] == first["workspace"]["id"]

    made = run(env, "users", "create", "--email", "op@example.com", "--role", "admin", "--password-stdin",
               "--json", stdin="a long enough password\n")
    assert made.returncode == 0, made.stderr
    # A console admin exists: init no longer asks for a first user, but for a brand.
    text = run(env, "init").stdout
    assert "users create" not in text and "Next: create a brand: `socialpub brands create" in text

    demo_env = env_without_home(tmp_path, SOCIALPUB_HOME=str(tmp_path / "demo"))
    demo = json.loads(run(demo_env, "init", "--demo", "--json").stdout)
    assert demo["created"] and demo["api_key"]["secret"]
    again = run(demo_env, "init", "--demo", "--json")
    repeat = json.loads(again.stdout)
    assert not repeat["created"] and repeat["api_key"] is None  # no second full-scope key
    assert repeat["next"].startswith("socialpub keys create")
    listed = run(demo_env, "workspaces", "list", "--json")
    assert len(json.loads(listed.stdout)["workspaces"]) == 1


def wait_until_up(proc: subprocess.Popen, base: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    with httpx.Client(timeout=2) as client:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"serve exited {proc.returncode}: {log.read_text()[-3000:]}")
            try:
                if client.get(base + "/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    raise AssertionError(f"serve did not answer: {log.read_text()[-3000:]}")


@pytest.fixture
def served(tmp_path):
    """`serve --port N` on a free port, no SOCIALPUB_PUBLIC_URL; yields (base, env, demo init output)."""
    env = env_without_home(tmp_path, SOCIALPUB_HOME=str(tmp_path / "home"), SOCIALPUB_RATE_LIMIT="0")
    demo = json.loads(run(env, "init", "--demo", "--json").stdout)
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([CLI, "serve", "--port", str(port)], env=env, stdout=fh, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_up(proc, base, log)
        yield base, env, demo, port, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_serve_on_another_port_builds_its_links_on_that_port(served) -> None:
    base, _env, demo, _port, _log = served
    secret, brand = demo["api_key"]["secret"], demo["brands"][0]["id"]
    data = image_bytes(64, 48)
    auth = {"Authorization": f"Bearer {secret}"}
    with httpx.Client(base_url=base, timeout=30) as client:
        session = client.post(f"/v1/brands/{brand}/media/upload-sessions", headers={**auth, "Idempotency-Key": "p1"},
                              json={"filename": "a.png", "content_type": "image/png", "size": len(data),
                                    "sha256": hashlib.sha256(data).hexdigest()}).json()["data"]
        assert session["upload"]["url"].startswith(base + "/"), session["upload"]["url"]
        put = client.put(session["upload"]["url"], content=data, headers=session["upload"]["headers"])
        assert put.status_code == 200, put.text
        deadline = time.monotonic() + 60
        while True:  # the server's own worker processes it
            item = client.get(f"/v1/brands/{brand}/media/{session['id']}", headers=auth).json()["data"]
            if item["status"] == "completed" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert item["status"] == "completed", item
        assert item["download_url"].startswith(base + "/media/"), item["download_url"]
        assert client.get(item["download_url"]).content == data


def test_a_second_serve_on_a_busy_port_says_so_before_starting(served, tmp_path) -> None:
    _base, env, _demo, port, _log = served
    done = run(env, "serve", "--port", str(port), timeout=60)
    err = done.stderr.strip()
    assert done.returncode == 2 and "\n" not in err, err
    assert f"port {port}" in err and "--port" in err and "Errno" not in err
    assert "worker" not in err.lower()


def test_a_busy_port_is_refused_before_the_database_is_looked_at(tmp_path) -> None:
    # No database at all: the port is checked first, so the port is what the line is about.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        for argv in (["serve", "--port", str(port)], ["mcp", "--transport", "http", "--port", str(port)]):
            done = run(env_without_home(tmp_path), *argv, timeout=60)
            assert done.returncode == 2 and f"port {port}" in done.stderr and "--port" in done.stderr, done.stderr
    assert not (tmp_path / "xdg" / "socialpub").exists()
