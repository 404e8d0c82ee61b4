"""Backup and restore as docs/operations.md tells operators: pg_dump a live PostgreSQL database, restore the
dump into a fresh database, start `socialpub serve` on the copy, and read the same data with the same key."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.operations.support import cli_env, free_port, processes, run_cli, spawn, wait_http

pytestmark = pytest.mark.slow


def libpq(url: str, database: str | None = None) -> str:
    """The SQLAlchemy URL as the libpq URL pg_dump and psql take."""
    parsed = make_url(url).set(drivername="postgresql")
    if database:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def snapshot(env: dict[str, str], secret: str, tmp_path: Path, name: str) -> dict:
    """What a client reads: context, brands and one brand's integrations, without per-request metadata."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        proc = spawn(procs, env, "serve", "--no-worker", "--port", str(port), log=tmp_path / f"{name}.log")
        wait_http(f"{base}/readyz", proc)
        auth = {"Authorization": f"Bearer {secret}"}
        with httpx.Client(base_url=base, headers=auth) as c:
            brands = c.get("/v1/brands").json()["data"]
            return {"context": c.get("/v1/context").json()["data"], "brands": brands,
                    "integrations": c.get(f"/v1/brands/{brands[0]['id']}/integrations").json()["data"]}


def test_pg_dump_restore_serves_the_same_data(tmp_path: Path, pg_scratch: str) -> None:
    for tool in ("pg_dump", "pg_restore", "psql"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (Debian: apt-get install postgresql-client)")
    env = cli_env(tmp_path / "home", SOCIALPUB_DATABASE_URL=pg_scratch)
    demo = run_cli(env, "init", "--demo")
    secret = demo["api_key"]["secret"]
    run_cli(env, "brands", "create", "--name", "Restored brand", "--timezone", "Asia/Tokyo")
    before = snapshot(env, secret, tmp_path, "before")
    assert any(b["name"] == "Restored brand" for b in before["brands"])

    dump = tmp_path / "socialpub.dump"
    restored = f"{make_url(pg_scratch).database}_restored"
    # The commands of docs/operations.md ("Backup and restore"), with this test's URLs.
    subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", libpq(pg_scratch)], check=True)
    subprocess.run(["psql", libpq(pg_scratch, "postgres"), "-v", "ON_ERROR_STOP=1", "-c",
                    f'CREATE DATABASE "{restored}"'], check=True, capture_output=True)
    try:
        subprocess.run(["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={libpq(pg_scratch, restored)}",
                        str(dump)], check=True)
        copy_url = make_url(pg_scratch).set(database=restored).render_as_string(hide_password=False)
        after = snapshot(cli_env(tmp_path / "home2", SOCIALPUB_DATABASE_URL=copy_url), secret, tmp_path, "after")
        assert after == before
    finally:
        subprocess.run(["psql", libpq(pg_scratch, "postgres"), "-c",
                        f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)'], capture_output=True)
