"""A real S3-compatible server for the object-store tests: moto's server mode (`moto[server]` from PyPI) on a
free loopback port, one per test session, with a fresh bucket per test."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.operations.support import free_port

MOTO = Path(sys.executable).parent / "moto_server"
CREDENTIALS = {"access_key_id": "testing-key-id", "secret_access_key": "testing-secret"}


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name="us-east-1",
                            aws_access_key_id=CREDENTIALS["access_key_id"],
                            aws_secret_access_key=CREDENTIALS["secret_access_key"])

    def new_bucket(self) -> str:
        name = f"media-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def settings(self, bucket: str, prefix: str = "socialpub") -> dict[str, str]:
        """Settings fields of a service storing media in `bucket`."""
        return {"media_store": f"s3://{bucket}/{prefix}", "s3_endpoint_url": self.endpoint_url,
                "s3_region": "us-east-1", "s3_access_key_id": CREDENTIALS["access_key_id"],
                "s3_secret_access_key": CREDENTIALS["secret_access_key"]}

    def env(self, bucket: str, prefix: str = "socialpub") -> dict[str, str]:
        """The same, as SOCIALPUB_* environment variables for subprocesses."""
        return {f"SOCIALPUB_{k.upper()}": v for k, v in self.settings(bucket, prefix).items()}


def start_moto() -> Iterator[S3Server]:
    exe = str(MOTO) if MOTO.exists() else shutil.which("moto_server")
    if exe is None:
        pytest.skip("moto_server is not installed (pip install 'moto[server]'; it is in the test extra)")
    port = free_port()
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        with httpx.Client(timeout=1) as client:  # one client: `httpx.get` builds an SSL context each call (~20 ms)
            while True:
                try:
                    client.get(f"{url}/moto-api/")
                    break
                except httpx.HTTPError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        pytest.fail("moto_server did not start")
                    time.sleep(0.05)
        yield S3Server(url)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
