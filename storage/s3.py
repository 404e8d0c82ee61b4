"""The S3-compatible blob store (AWS S3, MinIO, Ceph, R2, moto...), with boto3 calls run in worker threads.

Writes never expose a partial or unverified object: a blob that fits in one part is sent with one PutObject
once its size and SHA-256 are checked; a larger one goes up as a multipart upload whose parts are invisible
until CompleteMultipartUpload, which is only sent after the checks (a refusal aborts the upload). Reads are
ranged GetObject streams. Clients are never given an object-store URL to read: assets are still served by this
service under `{media_url}/assets/<opaque_id>`. Upload sessions may hand out presigned PUT URLs for keys under
`incoming/` (see tools/media/incoming.py), which the worker verifies and copies into place.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import tempfile
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from schemas.settings import S3_EXTRA_MISSING, MissingExtra
from storage.blobs import READ_CHUNK, BlobRejected, StoredBlob, check_key

PART_SIZE = 8 * 1024 * 1024  # multipart part size (S3's minimum is 5 MiB for every part but the last)
INCOMING = "incoming"


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> S3Location:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError("SOCIALPUB_MEDIA_STORE must look like s3://bucket or s3://bucket/prefix")
        return cls(parts.netloc, parts.path.strip("/"))


class S3BlobStore:
    def __init__(self, client: Any, location: S3Location, part_size: int = PART_SIZE) -> None:
        self.client = client
        self.bucket = location.bucket
        self.prefix = location.prefix
        self.part_size = part_size

    def _key(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    async def _call(self, name: str, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: getattr(self.client, name)(Bucket=self.bucket, **kwargs))

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes], *, expected_size: int | None = None,
                         expected_sha256: str | None = None, max_bytes: int | None = None) -> StoredBlob:
        name = self._key(key)
        limit = expected_size if expected_size is not None else max_bytes
        digest = hashlib.sha256()
        size = 0
        buffer = bytearray()
        upload_id: str | None = None
        parts: list[dict[str, Any]] = []

        async def send_part(data: bytes) -> None:
            nonlocal upload_id
            if upload_id is None:
                upload_id = (await self._call("create_multipart_upload", Key=name))["UploadId"]
            number = len(parts) + 1
            answer = await self._call("upload_part", Key=name, UploadId=upload_id, PartNumber=number, Body=data)
            parts.append({"PartNumber": number, "ETag": answer["ETag"]})

        try:
            async for chunk in chunks:
                if not chunk:
                    continue
                size += len(chunk)
                if limit is not None and size > limit:
                    raise BlobRejected("too_large", size)
                digest.update(chunk)
                buffer += chunk
                while len(buffer) > self.part_size:  # strictly more: the last part is never empty
                    part = bytes(buffer[:self.part_size])
                    del buffer[:self.part_size]
                    await send_part(part)
            if expected_size is not None and size != expected_size:
                raise BlobRejected("too_small", size)
            if expected_sha256 is not None and digest.hexdigest() != expected_sha256:
                raise BlobRejected("hash_mismatch", size)
            if upload_id is None:
                await self._call("put_object", Key=name, Body=bytes(buffer))
            else:
                if buffer:
                    await send_part(bytes(buffer))
                await self._call("complete_multipart_upload", Key=name, UploadId=upload_id,
                                 MultipartUpload={"Parts": parts})
        except BaseException:
            if upload_id is not None:
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await self._call("abort_multipart_upload", Key=name, UploadId=upload_id)
            raise
        return StoredBlob(key=key, size=size, sha256=digest.hexdigest())

    async def open_range(self, key: str, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]:
        wanted = f"bytes={start}-{'' if end is None else end}"
        answer = await self._call("get_object", Key=self._key(key), Range=wanted)
        body = answer["Body"]
        try:
            while True:
                data = await anyio.to_thread.run_sync(body.read, READ_CHUNK)
                if not data:
                    break
                yield data
        finally:
            body.close()

    async def size(self, key: str) -> int | None:
        from botocore.exceptions import ClientError

        try:
            return int((await self._call("head_object", Key=self._key(key)))["ContentLength"])
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise

    async def delete(self, key: str) -> None:
        await self._call("delete_object", Key=self._key(key))

    async def copy(self, source: str, target: str) -> None:
        """Server-side copy (multipart for large objects, by boto3's managed transfer)."""
        src, dst = self._key(source), self._key(target)
        await anyio.to_thread.run_sync(lambda: self.client.copy({"Bucket": self.bucket, "Key": src}, self.bucket,
                                                                dst))

    @contextlib.asynccontextmanager
    async def local_path(self, key: str) -> AsyncIterator[Path]:
        with tempfile.TemporaryDirectory(prefix="socialpub-s3-") as tmp:
            path = Path(tmp) / "blob"
            name = self._key(key)
            await anyio.to_thread.run_sync(lambda: self.client.download_file(self.bucket, name, str(path)))
            yield path

    def presign_put(self, key: str, *, content_type: str, size: int, sha256: str,
                    expires_in: int) -> tuple[str, dict[str, str]]:
        """A presigned PUT URL for `key` binding type, length and SHA-256 (S3 verifies the checksum), and the
        headers the client must send with it."""
        checksum = base64.b64encode(bytes.fromhex(sha256)).decode()
        url = self.client.generate_presigned_url("put_object", ExpiresIn=max(1, expires_in), HttpMethod="PUT",
                                                 Params={"Bucket": self.bucket, "Key": self._key(key),
                                                         "ContentType": content_type, "ContentLength": size,
                                                         "ChecksumSHA256": checksum})
        return url, {"Content-Type": content_type, "Content-Length": str(size), "x-amz-checksum-sha256": checksum}


@cache
def _client(endpoint_url: str | None, region: str | None, access_key_id: str | None,
            secret_access_key: str | None) -> Any:
    try:
        from boto3.session import Session
        from botocore.config import Config
    except ImportError:  # boto3 is the `s3` extra
        raise MissingExtra(S3_EXTRA_MISSING) from None

    config = Config(signature_version="s3v4", retries={"max_attempts": 5, "mode": "standard"},
                    s3={"addressing_style": "path"} if endpoint_url else {}, max_pool_connections=32,
                    request_checksum_calculation="when_required", response_checksum_validation="when_required")
    return Session().client("s3", endpoint_url=endpoint_url, region_name=region or "us-east-1",
                                          aws_access_key_id=access_key_id, aws_secret_access_key=secret_access_key,
                                          config=config)


@cache
def s3_store(url: str, *, endpoint_url: str | None = None, region: str | None = None,
             access_key_id: str | None = None, secret_access_key: str | None = None,
             part_size: int = PART_SIZE) -> S3BlobStore:
    return S3BlobStore(_client(endpoint_url, region, access_key_id, secret_access_key), S3Location.parse(url),
                       part_size)
