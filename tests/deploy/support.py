"""The `socialpub` command as real processes: one-shot runs, long-lived servers on free ports, and a scratch
database per test on either backend (SQLite file, or a fresh PostgreSQL database from tests/support.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest
from sqlalchemy import text

from storage.db import Database
from storage.migrate import upgrade
from tests.support import PG_ENV, copy_pg_database, create_pg_database, drop_pg_database

CLI = str(Path(sys.executable).parent / "socialpub")
BACKEND_NAMES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Deployment:
    """One database and one SOCIALPUB_HOME shared by every process of a test (as replicas share a volume)."""

    home: Path
    url: str
    extra_env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen] = field(default_factory=list)

    def env(self, **more: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIALPUB_")}
        env.update(SOCIALPUB_HOME=str(self.home), SOCIALPUB_DATABASE_URL=self.url, SOCIALPUB_RATE_LIMIT="0",
                   **self.extra_env, **more)
        return env

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([CLI, *args], env=self.env(), capture_output=True, text=True, timeout=timeout)

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        log = open(self.home / f"proc-{len(self.processes)}.log", "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([CLI, *args], env=self.env(**(env or {})), stdout=log, stderr=subprocess.STDOUT)
        proc.log_path = log.name  # pyright: ignore[reportAttributeAccessIssue]  # an attribute the test attaches to a stdlib object
        self.processes.append(proc)
        return proc

    def serve(self, *args: str, path: str = "/v1/platforms/capabilities", command: str = "serve") -> str:
        """Start a server on a free port (its own address as SOCIALPUB_PUBLIC_URL) and wait until it answers;
        returns its base URL."""
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = self.start(command, "--port", str(port), *args, env={"SOCIALPUB_PUBLIC_URL": base})
        deadline = time.monotonic() + 60
        with httpx.Client(timeout=2) as client:  # one client: `httpx.get` builds an SSL context each call (~20 ms)
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise AssertionError(f"{command} exited {proc.returncode}:\n{self.log(proc)}")
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(base + path).status_code < 500:
                        return base
                time.sleep(0.05)
        raise AssertionError(f"{command} did not answer within 60 s:\n{self.log(proc)}")

    @staticmethod
    def log(proc: subprocess.Popen) -> str:
        return Path(proc.log_path).read_text()[-4000:]  # pyright: ignore[reportAttributeAccessIssue]  # an attribute the test attaches to a stdlib object

    def stop(self) -> None:
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def set_revision(self, revision: str) -> None:
        """Pretend another socialpub migrated this database (e.g. a newer one)."""

        async def go() -> None:
            db = Database(self.url)
            async with db.write_engine.begin() as conn:
                await conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
            await db.dispose()

        anyio.run(go)


def _migrate(url: str, revision: str) -> None:
    async def go() -> None:
        db = Database(url)
        await upgrade(db, revision)
        await db.dispose()

    anyio.run(go)


@dataclass(frozen=True)
class Demo:
    """A deployment `socialpub init --demo` set up (its home and database) and what that printed."""

    home: Path
    url: str
    printed: dict


@contextlib.contextmanager
def demo_deployment(backend: str, tmp_path: Path) -> Iterator[Demo]:
    """`socialpub init --demo` once (~3 s of CPU) for tests that start from copies of it (`deployment(demo=...)`),
    as each one's own `init --demo` would leave its home and database."""
    with deployment(backend, tmp_path) as dep:
        done = dep.run("init", "--demo", "--json")
        assert done.returncode == 0, done.stderr
        yield Demo(dep.home, dep.url, json.loads(done.stdout))


@contextlib.contextmanager
def deployment(backend: str, tmp_path: Path, revision: str | None = None, demo: Demo | None = None
               ) -> Iterator[Deployment]:
    """A scratch deployment, its database empty (revision None), migrated to `revision`, or a copy of `demo`'s
    (home and database); every process it started is stopped afterwards and a PostgreSQL database dropped."""
    home = tmp_path / "home"
    if demo is not None:
        shutil.copytree(demo.home, home)  # the vault key and the sandbox's ledger; nothing in it names the directory
    else:
        home.mkdir()
    if backend == "postgres":
        base = os.environ.get(PG_ENV)
        if not base:
            pytest.skip(f"PostgreSQL leg: set {PG_ENV} to run it")
        url = copy_pg_database(base, demo.url) if demo is not None else create_pg_database(base, revision)
    else:
        url = f"sqlite+aiosqlite:///{home / 'socialpub.db'}"
        if revision is not None:
            _migrate(url, revision)
    dep = Deployment(home, url)
    try:
        yield dep
    finally:
        dep.stop()
        if backend == "postgres":
            drop_pg_database(os.environ[PG_ENV], url)
