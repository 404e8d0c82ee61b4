"""Blob storage for media bytes behind a small interface: the local disk (default) or an S3-compatible object
store (`SOCIALPUB_MEDIA_STORE=s3://bucket/prefix`), so API replicas on several machines share one media store.

Keys are chosen by the service (never by a caller) and are never shown outside: assets are served by opaque
capability IDs. `put_stream` writes a stream without holding it in memory, verifies the size and SHA-256 the
caller expects, and only then makes the blob visible under its key; a refused or interrupted write leaves
nothing behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import anyio

WRITE_BUFFER = 1024 * 1024  # bytes gathered before one disk write (keeps memory flat and syscalls few)
PIPELINE = 2  # buffers waiting to be hashed and written
READ_CHUNK = 256 * 1024
_KEY_RE = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_.-]+)*$")


class BlobRejected(Exception):
    """The stream did not match what the writer promised; nothing was stored."""

    def __init__(self, reason: Literal["too_large", "too_small", "hash_mismatch"], size: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.size = size  # bytes received before the refusal


@dataclass(frozen=True)
class StoredBlob:
    key: str
    size: int
    sha256: str


class BlobStore(Protocol):
    async def put_stream(self, key: str, chunks: AsyncIterable[bytes], *, expected_size: int | None = None,
                         expected_sha256: str | None = None, max_bytes: int | None = None) -> StoredBlob: ...

    def open_range(self, key: str, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]:
        """Bytes start..end (inclusive; None = to the end)."""
        ...

    async def size(self, key: str) -> int | None: ...

    async def delete(self, key: str) -> None: ...

    def local_path(self, key: str) -> contextlib.AbstractAsyncContextManager[Path]:
        """A local file holding the blob, for decoders that need a path (an object store downloads it)."""
        ...


@runtime_checkable
class DirectUploadStore(BlobStore, Protocol):
    """A store clients PUT to directly (S3, storage/s3.py): presigned PUT URLs, and a server-side copy of what a
    client PUT to its incoming key."""

    def presign_put(self, key: str, *, content_type: str, size: int, sha256: str,
                    expires_in: int) -> tuple[str, dict[str, str]]: ...

    async def copy(self, source: str, target: str) -> None: ...


def check_key(key: str) -> str:
    if not _KEY_RE.match(key) or ".." in key or len(key) > 400:
        raise ValueError("invalid blob key")
    return key


class LocalBlobStore:
    """Files under `root` (default `{SOCIALPUB_HOME}/media/blobs`). Writes go to a temporary file in the same
    directory and are renamed into place once verified, so a reader never sees a partial blob."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes], *, expected_size: int | None = None,
                         expected_sha256: str | None = None, max_bytes: int | None = None) -> StoredBlob:
        final = self._path(key)
        await anyio.to_thread.run_sync(lambda: final.parent.mkdir(parents=True, exist_ok=True))
        tmp = final.parent / f".{final.name}.{secrets.token_hex(8)}.part"
        limit = expected_size if expected_size is not None else max_bytes
        digest = hashlib.sha256()
        size = 0
        fh = await anyio.to_thread.run_sync(lambda: open(tmp, "xb"))  # noqa: SIM115  (closed below)

        def consume(data: bytes) -> None:
            digest.update(data)  # releases the GIL: hashing and writing overlap with receiving
            fh.write(data)

        # Receiving and hashing+writing run side by side; the channel holds at most PIPELINE buffers, so memory
        # stays bounded (a few MiB) whatever the size of the stream.
        send, receive = anyio.create_memory_object_stream[bytes](PIPELINE)

        async def writer() -> None:
            async with receive:
                async for data in receive:
                    await anyio.to_thread.run_sync(consume, data)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(writer)
                async with send:
                    pending: list[bytes] = []
                    pending_size = 0
                    async for chunk in chunks:
                        if not chunk:
                            continue
                        size += len(chunk)
                        if limit is not None and size > limit:
                            raise BlobRejected("too_large", size)
                        pending.append(bytes(chunk))
                        pending_size += len(chunk)
                        if pending_size >= WRITE_BUFFER:
                            await send.send(b"".join(pending))
                            pending, pending_size = [], 0
                    if pending:
                        await send.send(b"".join(pending))
            if expected_size is not None and size != expected_size:
                raise BlobRejected("too_small", size)
            if expected_sha256 is not None and digest.hexdigest() != expected_sha256:
                raise BlobRejected("hash_mismatch", size)
            await anyio.to_thread.run_sync(fh.flush)
            await anyio.to_thread.run_sync(os.fsync, fh.fileno())
            await anyio.to_thread.run_sync(fh.close)
            await anyio.to_thread.run_sync(os.replace, tmp, final)
        except BaseException as exc:
            fh.close()
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                raise exc.exceptions[0] from None  # one failure inside the pipeline: raise it as itself
            raise
        return StoredBlob(key=key, size=size, sha256=digest.hexdigest())

    async def open_range(self, key: str, start: int = 0, end: int | None = None) -> AsyncIterator[bytes]:
        path = self._path(key)
        fh = await anyio.to_thread.run_sync(lambda: open(path, "rb"))  # noqa: SIM115
        try:
            await anyio.to_thread.run_sync(fh.seek, start)
            remaining = None if end is None else end - start + 1
            while remaining is None or remaining > 0:
                want = READ_CHUNK if remaining is None else min(READ_CHUNK, remaining)
                data = await anyio.to_thread.run_sync(fh.read, want)
                if not data:
                    break
                if remaining is not None:
                    remaining -= len(data)
                yield data
        finally:
            fh.close()

    async def size(self, key: str) -> int | None:
        try:
            return (await anyio.to_thread.run_sync(self._path(key).stat)).st_size
        except FileNotFoundError:
            return None

    async def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            await anyio.to_thread.run_sync(self._path(key).unlink)

    @contextlib.asynccontextmanager
    async def local_path(self, key: str) -> AsyncIterator[Path]:
        yield self._path(key)


@cache
def _local(root: Path) -> LocalBlobStore:
    return LocalBlobStore(root)


def store_for(home: Path, media_store: str | None = None, **s3: Any) -> BlobStore:
    """The blob store of a service whose data lives under `home`: `media_store` (s3://bucket/prefix) when set,
    else files under `{home}/media/blobs`. `s3` carries endpoint_url, region, access_key_id, secret_access_key."""
    if media_store:
        from storage.s3 import s3_store

        return s3_store(media_store, **s3)
    return _local(Path(home) / "media" / "blobs")
