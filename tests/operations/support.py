"""Real processes for the operations tests: `socialpub serve` / `worker` subprocesses on free loopback ports."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

CLI = str(Path(sys.executable).parent / "socialpub")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
    env["SOCIALPUB_HOME"] = str(home)
    env.update(extra)
    return env


def run_cli(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([CLI, *args, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2) as client:  # one client: `httpx.get` builds an SSL context each call (~20 ms)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"{proc.args} exited with {proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(url).status_code == 200:
                    return
            time.sleep(0.05)
    raise AssertionError(f"{url} did not answer within {timeout} s")


@contextlib.contextmanager
def processes() -> Iterator[list[subprocess.Popen]]:
    """Started processes, all stopped (terminate, then kill) when the block ends."""
    procs: list[subprocess.Popen] = []
    try:
        yield procs
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def spawn(procs: list[subprocess.Popen], env: dict[str, str], *args: str, log: Path) -> subprocess.Popen:
    fh = open(log, "ab")  # noqa: SIM115  (the child owns it; closed with the test's tmp dir)
    proc = subprocess.Popen([CLI, *args], env=env, stdout=fh, stderr=subprocess.STDOUT)
    procs.append(proc)
    return proc
